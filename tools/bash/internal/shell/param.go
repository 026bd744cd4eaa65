package shell

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// pvalue is the value of a parameter before an operator applies: one
// string, or a list (the elements of "$@", "${a[@]}", "${a[*]}").
type pvalue struct {
	name   string // for messages
	set    bool   // the parameter is set (a list: has elements)
	s      string
	list   []string
	isList bool
	star   bool // a * list: joined into one word when quoted
	// arrayVar is the variable of an array expansion (for ${a[@]@A}).
	v *variable
	// viaRef: a list read through ${!ref} (ref=a[@]); ${!ref:-w} tests
	// it for no elements, not for an empty value, as bash
	viaRef bool
}

// joined is a list's elements joined as "$*" joins them.
func (sh *shell) joinStar(list []string) string {
	ifs := sh.ifs()
	sep := ""
	if len(ifs) > 0 {
		_, n := utf8.DecodeRuneInString(ifs)
		sep = ifs[:n]
	}
	if v := sh.getVar("IFS"); v == nil || !v.set {
		sep = " "
	}
	return strings.Join(list, sep)
}

// paramString is a parameter expansion as one string (inside double
// quotes, in arithmetic, ...).
func (sh *shell) paramString(pe *syntax.ParamExp, quoted bool) string {
	e := sh.newStringExpander()
	e.param(pe, quoted)
	return e.str()
}

// atParam handles a quoted parameter expansion that yields a list ("$@",
// "${a[@]}", "${a[@]/x/y}"): each element a word of its own. It reports
// false for anything else, which the caller expands as a string.
func (e *expander) atParam(pe *syntax.ParamExp) bool {
	if !e.mayBeList(pe) {
		return false
	}
	e.param(pe, true)
	return true
}

// mayBeList is mayBeList, or $ref of a nameref to a[@] or a[*].
func (e *expander) mayBeList(pe *syntax.ParamExp) bool {
	if mayBeList(pe) {
		return true
	}
	if pe.Length || pe.Param == nil || pe.Excl || pe.Index != nil || !validName(pe.Param.Value) {
		return false
	}
	sh := e.sh
	if rv, _ := sh.lookup(pe.Param.Value); rv != nil && rv.attrs&aNameref != 0 && rv.set && strings.HasSuffix(rv.str, "]") {
		t, _, _ := sh.resolve(pe.Param.Value)
		return strings.HasSuffix(t, "[@]") || strings.HasSuffix(t, "[*]")
	}
	return false
}

// mayBeList reports whether a parameter expansion can yield a list.
func mayBeList(pe *syntax.ParamExp) bool {
	if pe.Length || pe.Param == nil {
		return false
	}
	if pe.Excl && pe.Names == 0 && pe.Index == nil {
		return true // ${!ref}: ref may name @ or an array
	}
	if pe.Names != 0 {
		return true
	}
	switch pe.Param.Value {
	case "@", "*":
		return true
	}
	if pe.Index != nil {
		if w, ok := pe.Index.(*syntax.Word); ok {
			switch w.Lit() {
			case "@", "*":
				return true
			}
		}
	}
	return false
}

// paramUnquoted expands an unquoted parameter expansion into the
// expander: split and globbed.
func (e *expander) paramUnquoted(pe *syntax.ParamExp) {
	e.param(pe, false)
}

// addList appends a list result: quoted, each element is a word
// ("$@"); a quoted * list is one word; unquoted, every element is split.
func (e *expander) addList(list []string, star, quoted bool) {
	if e.noSplit || e.pattern {
		var s string
		if star {
			s = e.sh.joinStar(list)
		} else {
			s = strings.Join(list, " ")
		}
		if quoted {
			e.addQuoted(s)
		} else {
			e.addExpanded(s)
		}
		return
	}
	if quoted {
		if star {
			e.addQuoted(e.sh.joinStar(list))
			return
		}
		for i, s := range list {
			if i > 0 {
				e.endField(true)
			}
			e.addQuoted(s)
		}
		return
	}
	// unquoted: the elements are joined by IFS's first character and
	// split again (so that an empty element is an empty field with a
	// non-blank IFS, and vanishes with a blank one)
	ifs := e.sh.ifs()
	if ifs == "" {
		for i, s := range list {
			if i > 0 {
				e.endField(false)
			}
			e.addNoSplit(s)
		}
		return
	}
	_, n := utf8.DecodeRuneInString(ifs)
	e.addExpanded(strings.Join(list, ifs[:n]))
}

// add appends a value: a string (quoted or split) or a list.
func (e *expander) add(v pvalue, quoted bool) {
	if v.isList {
		e.addList(v.list, v.star, quoted)
		return
	}
	if quoted {
		e.addQuoted(v.s)
	} else {
		e.addExpanded(v.s)
	}
}

// lookupParam reads the parameter of pe (without its operator).
func (e *expander) lookupParam(pe *syntax.ParamExp) pvalue {
	sh := e.sh
	name := pe.Param.Value
	if pe.Index != nil {
		return e.lookupIndexed(name, pe.Index)
	}
	return sh.special(name)
}

// special reads a parameter by name: special parameters, positional
// parameters, variables (an array's element 0).
func (sh *shell) special(name string) pvalue {
	switch name {
	case "@", "*":
		return pvalue{name: name, set: len(sh.positional()) > 0, list: sh.positional(), isList: true, star: name == "*"}
	case "#":
		return pvalue{name: name, set: true, s: strconv.Itoa(len(sh.positional()))}
	case "?":
		return pvalue{name: name, set: true, s: strconv.Itoa(sh.status)}
	case "-":
		return pvalue{name: name, set: true, s: sh.flagString()}
	case "$":
		return pvalue{name: name, set: true, s: strconv.FormatInt(sh.procPid, 10)}
	case "!":
		if sh.lastBg == 0 {
			return pvalue{name: name}
		}
		return pvalue{name: name, set: true, s: strconv.FormatInt(sh.lastBg, 10)}
	case "0":
		return pvalue{name: name, set: true, s: sh.argv0}
	case "_":
		return pvalue{name: name, set: true, s: sh.lastArg}
	}
	if name[0] >= '0' && name[0] <= '9' {
		n, err := strconv.Atoi(name)
		p := sh.positional()
		if err != nil || n < 1 || n > len(p) {
			return pvalue{name: name}
		}
		return pvalue{name: name, set: true, s: p[n-1]}
	}
	if rv, _ := sh.lookup(name); rv != nil && rv.attrs&aNameref != 0 && rv.set && strings.HasSuffix(rv.str, "]") {
		if t, _, _ := sh.resolve(name); strings.HasSuffix(t, "[@]") || strings.HasSuffix(t, "[*]") {
			return sh.byName(t)
		}
	}
	v := sh.getVar(name)
	if v == nil || !v.set {
		return pvalue{name: name, v: v}
	}
	switch {
	case v.arr != nil:
		s, ok := v.arr.get(0)
		return pvalue{name: name, set: ok, s: s, v: v}
	case v.assc != nil:
		s, ok := v.assc.get("0")
		return pvalue{name: name, set: ok, s: s, v: v}
	}
	return pvalue{name: name, set: true, s: v.str, v: v}
}

// lookupIndexed reads name[index]: an element, or all elements for @ and
// *.
func (e *expander) lookupIndexed(name string, index syntax.ArithmExpr) pvalue {
	sh := e.sh
	v := sh.getVar(name)
	if w, ok := index.(*syntax.Word); ok {
		switch w.Lit() {
		case "@", "*":
			pv := pvalue{name: name + "[" + w.Lit() + "]", isList: true, star: w.Lit() == "*", v: v}
			if v != nil && v.set {
				switch {
				case v.arr != nil:
					pv.list = v.arr.values()
				case v.assc != nil:
					pv.list = v.assc.values()
				default:
					pv.list = []string{v.str}
				}
			}
			pv.set = len(pv.list) > 0
			return pv
		}
	}
	pv := pvalue{name: name + "[" + sh.indexText(index) + "]"}
	if v == nil || !v.set {
		if v == nil || v.attrs&aAssoc == 0 {
			// evaluate the index for its side effects and errors
			sh.subscript(index)
		}
		return pv
	}
	var key string
	if v.assc != nil {
		key = sh.assocKey(index)
	} else {
		key = strconv.FormatInt(sh.subscript(index), 10)
	}
	pv.s, pv.set = sh.element(v, key)
	return pv
}

// indexText is the text of a subscript, for messages.
func (sh *shell) indexText(index syntax.ArithmExpr) string {
	var b strings.Builder
	syntax.NewPrinter().Print(&b, index)
	return b.String()
}

// assocKey expands the subscript of an associative array: a word,
// expanded without splitting.
func (sh *shell) assocKey(index syntax.ArithmExpr) string {
	if w, ok := index.(*syntax.Word); ok {
		return sh.expandString(w)
	}
	// mvdan parsed the key as arithmetic (m[a-b]): its source text
	return sh.nodeText(index)
}

// nodeText is a node's text in the source it was parsed from (its
// printed form when that source is not at hand).
func (sh *shell) nodeText(n syntax.Node) string {
	if sh.src != nil {
		from, to := int(n.Pos().Offset()), int(n.End().Offset())
		if n.Pos().IsValid() && from < to && to <= len(sh.src.text) {
			return sh.src.text[from:to]
		}
	}
	var b strings.Builder
	syntax.NewPrinter().Print(&b, n)
	return b.String()
}

// positional returns the positional parameters in effect (a function's,
// or the script's).
func (sh *shell) positional() []string {
	if n := len(sh.frames); n > 0 {
		return sh.frames[n-1].params
	}
	return sh.params
}

func (sh *shell) setPositional(p []string) {
	if n := len(sh.frames); n > 0 {
		sh.frames[n-1].params = p
		return
	}
	sh.params = p
}

// param expands a parameter expansion into the expander.
func (e *expander) param(pe *syntax.ParamExp, quoted bool) {
	sh := e.sh
	if pe.Param == nil {
		sh.badSubst(pe)
	}
	if pe.Excl && pe.Names != 0 {
		// ${!prefix*} ${!prefix@}: names of variables with the prefix
		var names []string
		for _, n := range sh.allNames() {
			if strings.HasPrefix(n, pe.Param.Value) {
				if v := sh.getVar(n); v != nil && (v.set || v.isArray()) {
					names = append(names, n)
				}
			}
		}
		if pe.Names == syntax.NamesPrefix && !quoted {
			// ${!prefix*} unquoted: one word joined by IFS's first character
			e.addExpanded(e.sh.joinStar(names))
			return
		}
		e.addList(names, pe.Names == syntax.NamesPrefix, quoted)
		return
	}
	var pv pvalue
	switch {
	case pe.Excl && pe.Index != nil && isAtIndex(pe.Index) && pe.Exp == nil && pe.Slice == nil && pe.Repl == nil:
		// ${!a[@]}: the keys (with an operator, an indirection through
		// the values)
		v := sh.getVar(pe.Param.Value)
		var keys []string
		if v != nil && v.set {
			switch {
			case v.arr != nil:
				for _, el := range v.arr.elems {
					keys = append(keys, strconv.FormatInt(el.idx, 10))
				}
			case v.assc != nil:
				keys = v.assc.keys()
			default:
				keys = []string{"0"}
			}
		}
		if indexLit(pe.Index) == "*" && !quoted {
			// ${!a[*]} unquoted: the keys joined by spaces, then split
			e.addExpanded(strings.Join(keys, " "))
			return
		}
		e.addList(keys, indexLit(pe.Index) == "*", quoted)
		return
	case pe.Excl:
		pv = e.indirect(pe)
	default:
		pv = e.lookupParam(pe)
	}
	if pe.Length {
		e.addLength(pe, pv, quoted)
		return
	}
	switch {
	case pe.Exp != nil:
		e.paramOp(pe, pv, quoted)
		return
	case pe.Slice != nil:
		pv = e.slice(pe, pv)
	case pe.Repl != nil:
		pv = e.replace(pe, pv)
	}
	e.unsetCheck(pe, pv)
	e.add(pv, quoted)
}

// unsetCheck fails an expansion of an unset parameter under set -u.
func (e *expander) unsetCheck(pe *syntax.ParamExp, pv pvalue) {
	sh := e.sh
	if !sh.opts.nounset || pv.set {
		return
	}
	name := pe.Param.Value
	if pv.isList {
		// bash 5.2 expands ${a[@]} and ${a[*]} of an unset a to
		// nothing under set -u too
		return
	}
	if pe.Exp != nil {
		return
	}
	n := pv.name
	if n == "" {
		n = name
	}
	sh.exitFatal(n + ": unbound variable")
}

func isAtIndex(index syntax.ArithmExpr) bool {
	l := indexLit(index)
	return l == "@" || l == "*"
}

func indexLit(index syntax.ArithmExpr) string {
	if w, ok := index.(*syntax.Word); ok {
		return w.Lit()
	}
	return ""
}

// indirect reads the parameter named by the value of pe's parameter
// (${!ref}); a nameref's ${!ref} is the name it refers to.
func (e *expander) indirect(pe *syntax.ParamExp) pvalue {
	sh := e.sh
	name := pe.Param.Value
	if v, _ := sh.lookup(name); v != nil && v.attrs&aNameref != 0 && pe.Index == nil {
		return pvalue{name: name, set: v.set, s: v.str}
	}
	var ref pvalue
	if pe.Index != nil {
		ref = e.lookupIndexed(name, pe.Index)
	} else {
		ref = sh.special(name)
	}
	if !ref.set {
		if v := sh.getVar(name); v != nil && v.isArray() && v.set && pe.Index == nil {
			// ${!a} of an array without element 0: nothing
			return pvalue{name: name}
		}
		disp := name
		if pe.Index != nil {
			disp = name + "[" + sh.indexText(pe.Index) + "]"
		}
		sh.errorf("%s: invalid indirect expansion", disp)
		panic(fatalPanic{status: 1})
	}
	target := ref.s
	if ref.isList {
		target = strings.Join(ref.list, " ")
	}
	pv := e.sh.byName(target)
	pv.viaRef = pv.isList
	return pv
}

// expandSubscript expands the subscript of a name given at run time
// ("a[$i]"): parameter and command substitution, quote removal.
func (sh *shell) expandSubscript(sub string) string {
	if !strings.ContainsAny(sub, "$`'\"\\") {
		return sub
	}
	p := parsers.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader("x="+sub), "")
	parsers.Put(p)
	if err != nil || len(f.Stmts) != 1 {
		return sub
	}
	ce, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) != 0 || len(ce.Assigns) != 1 || ce.Assigns[0].Value == nil {
		if strings.ContainsAny(sub, " \t\n") && !strings.ContainsAny(sub, "\"'") {
			// blanks ("a[$(echo 2) + 1]"): the subscript is one word, as
			// in double quotes
			return sh.expandSubscript(`"` + sub + `"`)
		}
		return sub
	}
	return sh.expandString(ce.Assigns[0].Value)
}

// byName reads a parameter named at run time: "x", "a[1]", "a[@]", "@",
// "3".
func (sh *shell) byName(target string) pvalue {
	if target == "" {
		sh.errorf("%s: invalid variable name", target)
		panic(fatalPanic{status: 1})
	}
	if i := strings.IndexByte(target, '['); i > 0 && strings.HasSuffix(target, "]") {
		base, sub := target[:i], target[i+1:len(target)-1]
		if !validName(base) {
			sh.errorf("%s: invalid variable name", target)
			panic(fatalPanic{status: 1})
		}
		v := sh.getVar(base)
		switch sub {
		case "@", "*":
			pv := pvalue{name: target, isList: true, star: sub == "*", v: v}
			if v != nil && v.set {
				switch {
				case v.arr != nil:
					pv.list = v.arr.values()
				case v.assc != nil:
					pv.list = v.assc.values()
				default:
					pv.list = []string{v.str}
				}
			}
			pv.set = len(pv.list) > 0
			return pv
		}
		pv := pvalue{name: target}
		if v != nil && v.set {
			pv.s, pv.set = sh.element(v, sh.expandSubscript(sub))
		}
		return pv
	}
	if !validName(target) && !isSpecialName(target) {
		sh.errorf("%s: invalid variable name", target)
		panic(fatalPanic{status: 1})
	}
	return sh.special(target)
}

func isSpecialName(s string) bool {
	switch s {
	case "@", "*", "#", "?", "-", "$", "!", "0", "_":
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// addLength expands ${#x}, ${#a[@]}, ${#@}.
func (e *expander) addLength(pe *syntax.ParamExp, pv pvalue, quoted bool) {
	sh := e.sh
	var n int
	switch {
	case pv.isList:
		n = len(pv.list)
	default:
		if !pv.set && sh.opts.nounset && !(pe.Param.Value == "@" || pe.Param.Value == "*") {
			sh.exitFatal(pv.name + ": unbound variable")
		}
		n = utf8.RuneCountInString(pv.s)
		if sh.byteText {
			n = len(pv.s)
		}
	}
	s := strconv.Itoa(n)
	if quoted {
		e.addQuoted(s)
	} else {
		e.addExpanded(s)
	}
}

// paramOp applies ${x<op>word}.
func (e *expander) paramOp(pe *syntax.ParamExp, pv pvalue, quoted bool) {
	sh := e.sh
	op := pe.Exp.Op
	switch op {
	case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AlternateUnset, syntax.AlternateUnsetOrNull,
		syntax.AssignUnset, syntax.AssignUnsetOrNull, syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
		null := !pv.set
		if !null && (op == syntax.DefaultUnsetOrNull || op == syntax.AlternateUnsetOrNull ||
			op == syntax.AssignUnsetOrNull || op == syntax.ErrorUnsetOrNull) {
			if pv.isList && pv.viaRef {
				null = len(pv.list) == 0
			} else if pv.isList {
				null = len(pv.list) == 0 || len(pv.list) == 1 && pv.list[0] == "" ||
					pv.star && quoted && sh.joinStar(pv.list) == ""
			} else {
				null = pv.s == ""
			}
		}
		switch op {
		case syntax.DefaultUnset, syntax.DefaultUnsetOrNull:
			if null {
				e.opWord(pe.Exp.Word, quoted)
				return
			}
			e.add(pv, quoted)
		case syntax.AlternateUnset, syntax.AlternateUnsetOrNull:
			if !null {
				e.opWord(pe.Exp.Word, quoted)
			} else if quoted {
				e.cur.started = e.cur.started || !pv.isList
			}
		case syntax.AssignUnset, syntax.AssignUnsetOrNull:
			if !null {
				e.add(pv, quoted)
				return
			}
			val := sh.expandString(pe.Exp.Word)
			name := pe.Param.Value
			if pe.Excl {
				name = pv.name
			}
			if !validName(name) && pe.Index == nil || isSpecialName(name) {
				sh.errorf("$%s: cannot assign in this way", name)
				panic(fatalPanic{status: 1})
			}
			var err error
			if pe.Excl {
				if i := strings.IndexByte(name, '['); i > 0 {
					err = sh.setElem(name[:i], sh.expandSubscript(strings.TrimSuffix(name[i+1:], "]")), val, false)
				} else {
					err = sh.setString(name, val, false)
				}
				if err != nil {
					sh.fatal(err)
				}
				if quoted {
					e.addQuoted(val)
				} else {
					e.addExpanded(val)
				}
				return
			}
			if pe.Index != nil {
				key := ""
				if v := sh.getVar(name); v != nil && v.assc != nil {
					key = sh.assocKey(pe.Index)
				} else {
					key = strconv.FormatInt(sh.subscript(pe.Index), 10)
				}
				err = sh.setElem(name, key, val, false)
			} else {
				err = sh.setString(name, val, false)
			}
			if err != nil {
				sh.fatal(err)
			}
			// the value as the variable now holds it (attributes applied)
			if pe.Index == nil {
				val = sh.value(name)
			}
			if quoted {
				e.addQuoted(val)
			} else {
				e.addExpanded(val)
			}
		case syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
			if !null {
				e.add(pv, quoted)
				return
			}
			msg := sh.expandString(pe.Exp.Word)
			if pe.Exp.Word == nil || msg == "" {
				if op == syntax.ErrorUnsetOrNull && pv.set {
					msg = "parameter null or not set"
				} else {
					msg = "parameter null or not set"
				}
			}
			sh.exitFatal(pv.displayName(pe) + ": " + msg)
		}
		return
	}
	e.unsetCheck(pe, pv)
	switch op {
	case syntax.RemSmallPrefix, syntax.RemLargePrefix, syntax.RemSmallSuffix, syntax.RemLargeSuffix:
		pat := sh.expandPattern(pe.Exp.Word)
		f := func(s string) string { return sh.removeAffix(s, pat, op) }
		e.add(mapValue(pv, f), quoted)
	case syntax.UpperFirst, syntax.UpperAll, syntax.LowerFirst, syntax.LowerAll:
		pat := "?"
		if pe.Exp.Word != nil {
			if p := sh.expandPattern(pe.Exp.Word); p != "" {
				pat = p
			}
		}
		f := func(s string) string { return sh.caseMod(s, pat, op) }
		e.add(mapValue(pv, f), quoted)
	case syntax.OtherParamOps:
		e.transform(pe, pv, quoted)
	default:
		sh.badSubst(pe)
	}
}

// displayName is the name an error message gives a parameter.
func (pv pvalue) displayName(pe *syntax.ParamExp) string {
	if pv.name != "" {
		return pv.name
	}
	return pe.Param.Value
}

// opWord expands the word of an operator (${x:-word}) in the context of
// the expansion.
func (e *expander) opWord(w *syntax.Word, quoted bool) {
	if w == nil {
		if quoted {
			e.cur.started = true
		}
		return
	}
	if quoted {
		e.cur.started = true
		// inside double quotes, the word's own quotes still group, but
		// nothing is split
		e.quotedWord(w.Parts)
		return
	}
	saved := e.splitLits
	e.splitLits = !e.noSplit
	e.word(w.Parts, false)
	e.splitLits = saved
}

// quotedWord expands parts as inside double quotes: quoted strings keep
// their text, "$@" stays a list.
func (e *expander) quotedWord(parts []syntax.WordPart) {
	for _, p := range parts {
		switch x := p.(type) {
		case *syntax.SglQuoted:
			// '...' inside "${x:-'...'}" is literal text with its quotes
			// in bash; as the operand of a quoted expansion bash removes
			// them when the expansion is not itself quoted.
			v := x.Value
			if x.Dollar {
				v = ansiC(v)
				e.addQuoted(v)
				continue
			}
			// the quotes are kept and what they hold is expanded as in
			// double quotes ("${u:-'$var'}" is 'a b c')
			e.addQuoted("'")
			if w := parseDocText(v); w != nil && strings.ContainsAny(v, "$`\\") {
				e.word(w.Parts, true)
			} else {
				e.addQuoted(v)
			}
			e.addQuoted("'")
		case *syntax.DblQuoted:
			e.word(x.Parts, true)
		case *syntax.Lit:
			// inside "${x-...}" a backslash also quotes a closing brace
			if strings.Contains(x.Value, `\}`) {
				var b strings.Builder
				v := x.Value
				for i := 0; i < len(v); i++ {
					if v[i] == '\\' && i+1 < len(v) {
						if v[i+1] != '}' {
							b.WriteByte('\\')
						}
						b.WriteByte(v[i+1])
						i++
						continue
					}
					b.WriteByte(v[i])
				}
				e.word([]syntax.WordPart{&syntax.Lit{ValuePos: x.ValuePos, ValueEnd: x.ValueEnd, Value: b.String()}}, true)
				continue
			}
			e.word([]syntax.WordPart{p}, true)
		default:
			e.word([]syntax.WordPart{p}, true)
		}
	}
}

// mapValue applies f to a value or to each element of a list.
func mapValue(pv pvalue, f func(string) string) pvalue {
	if pv.isList {
		out := make([]string, len(pv.list))
		for i, s := range pv.list {
			out[i] = f(s)
		}
		pv.list = out
		return pv
	}
	pv.s = f(pv.s)
	return pv
}

// removeAffix removes the shortest or longest prefix or suffix matching
// pat.
func (sh *shell) removeAffix(s, pat string, op syntax.ParExpOperator) string {
	p := sh.compilePattern(pat, sh.shopt.nocasematch && false, sh.shopt.extglob || true)
	switch op {
	case syntax.RemSmallPrefix:
		if lit, ok := p.literal(); ok {
			return strings.TrimPrefix(s, lit)
		}
		for i := 0; i <= len(s); i = sh.nextChar(s, i) {
			sh.tick(i)
			if p.match(s[:i]) {
				return s[i:]
			}
		}
	case syntax.RemLargePrefix:
		if lit, ok := p.literal(); ok {
			return strings.TrimPrefix(s, lit)
		}
		for i := len(s); i >= 0; i = sh.prevChar(s, i) {
			sh.tick(i)
			if p.match(s[:i]) {
				return s[i:]
			}
			if i == 0 {
				break
			}
		}
	case syntax.RemSmallSuffix:
		if lit, ok := p.literal(); ok {
			return strings.TrimSuffix(s, lit)
		}
		for i := len(s); i >= 0; i = sh.prevChar(s, i) {
			sh.tick(i)
			if p.match(s[i:]) {
				return s[:i]
			}
			if i == 0 {
				break
			}
		}
	case syntax.RemLargeSuffix:
		if lit, ok := p.literal(); ok {
			return strings.TrimSuffix(s, lit)
		}
		for i := 0; i <= len(s); i = sh.nextChar(s, i) {
			sh.tick(i)
			if p.match(s[i:]) {
				return s[:i]
			}
		}
	}
	return s
}

// tick checks, every so often in a long computation, that the run goes
// on.
func (sh *shell) tick(i int) {
	if i&1023 == 1023 {
		sh.check()
	}
}

// nextChar is the index after the character at i (i == len(s): len+1).
func (sh *shell) nextChar(s string, i int) int {
	if i >= len(s) || sh.byteText {
		return i + 1
	}
	_, n := utf8.DecodeRuneInString(s[i:])
	return i + n
}

// prevChar is the index of the character before i (0 stays... -1).
func (sh *shell) prevChar(s string, i int) int {
	if i <= 0 || sh.byteText {
		return i - 1
	}
	_, n := utf8.DecodeLastRuneInString(s[:i])
	return i - n
}

// caseMod changes the case of the characters matching pat: the first
// (^ ,) or all (^^ ,,).
func (sh *shell) caseMod(s, pat string, op syntax.ParExpOperator) string {
	p := sh.compilePattern(pat, false, true)
	var b strings.Builder
	for i, r := range s {
		if (op == syntax.UpperFirst || op == syntax.LowerFirst) && i > 0 {
			b.WriteString(s[i:])
			break
		}
		if p.match(string(r)) {
			if op == syntax.UpperFirst || op == syntax.UpperAll {
				r = unicode.ToUpper(r)
			} else {
				r = unicode.ToLower(r)
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

// slice applies ${x:offset:length}.
func (e *expander) slice(pe *syntax.ParamExp, pv pvalue) pvalue {
	sh := e.sh
	off := int64(0)
	if pe.Slice.Offset != nil {
		off = sh.arith(pe.Slice.Offset)
	}
	hasLen := pe.Slice.Length != nil
	length := int64(0)
	if hasLen {
		length = sh.arith(pe.Slice.Length)
	}
	if pv.isList {
		list := pv.list
		isPositional := pe.Param.Value == "@" || pe.Param.Value == "*"
		if pe.Index != nil && pv.v != nil && pv.v.arr != nil {
			// an indexed array slices by index, not by position
			var out []string
			elems := pv.v.arr.elems
			if off < 0 {
				off += pv.v.arr.maxIndex() + 1
				if off < 0 {
					pv.list = nil
					pv.set = false
					return pv
				}
			}
			for _, el := range elems {
				if el.idx >= off {
					out = append(out, el.val)
				}
			}
			list = out
			off = 0
		} else if isPositional {
			list = append([]string{sh.argv0}, list...)
			if off < 0 {
				off += int64(len(list))
				if off < 1 {
					// bash: a negative offset past $1 is empty... but
					// $0 counts
					if off < 0 {
						pv.list = nil
						pv.set = false
						return pv
					}
				}
			}
		} else if off < 0 {
			off += int64(len(list))
			if off < 0 {
				pv.list = nil
				pv.set = false
				return pv
			}
		} else if off > 0 && pe.Index != nil && pv.v != nil && pv.v.assc != nil {
			// bash counts an associative array's elements from 1 (0
			// too is the first)
			off--
		}
		if off > int64(len(list)) {
			off = int64(len(list))
		}
		list = list[off:]
		if hasLen {
			if length < 0 {
				sh.errorf("%s: substring expression < 0", sh.indexTextOr(pe.Slice.Length))
				panic(fatalPanic{status: 1})
			}
			if length < int64(len(list)) {
				list = list[:length]
			}
		}
		pv.list = list
		pv.set = len(list) > 0
		return pv
	}
	if !pv.set {
		return pv
	}
	s := pv.s
	n := int64(utf8.RuneCountInString(s))
	if sh.byteText {
		n = int64(len(s))
	}
	if off < 0 {
		off += n
		if off < 0 {
			pv.s = ""
			return pv
		}
	}
	if off > n {
		pv.s = ""
		return pv
	}
	end := n
	if hasLen {
		if length < 0 {
			end = n + length
			if end < off {
				sh.errorf("%s: substring expression < 0", sh.indexTextOr(pe.Slice.Length))
				panic(fatalPanic{status: 1})
			}
		} else if off+length < n {
			end = off + length
		}
	}
	if sh.byteText {
		pv.s = ""
		if off < end {
			pv.s = s[off:end]
		}
	} else {
		pv.s = runeSlice(s, int(off), int(end))
	}
	return pv
}

func (sh *shell) indexTextOr(x syntax.ArithmExpr) string {
	return strings.TrimSpace(sh.indexText(x))
}

// runeSlice is s[from:to] in characters.
func runeSlice(s string, from, to int) string {
	if from >= to {
		return ""
	}
	i, start, end := 0, -1, len(s)
	for bi := range s {
		if i == from {
			start = bi
		}
		if i == to {
			end = bi
			break
		}
		i++
	}
	if start < 0 {
		return ""
	}
	return s[start:end]
}

// replace applies ${x/pat/rep}, ${x//pat/rep}, ${x/#pat/rep},
// ${x/%pat/rep}.
func (e *expander) replace(pe *syntax.ParamExp, pv pvalue) pvalue {
	sh := e.sh
	orig := pe.Repl.Orig
	anchor := byte(0)
	if orig != nil && len(orig.Parts) > 0 {
		if l, ok := orig.Parts[0].(*syntax.Lit); ok && len(l.Value) > 0 && (l.Value[0] == '#' || l.Value[0] == '%') && !pe.Repl.All {
			anchor = l.Value[0]
			rest := &syntax.Lit{Value: l.Value[1:]}
			orig = &syntax.Word{Parts: append([]syntax.WordPart{rest}, orig.Parts[1:]...)}
		}
	}
	pat := sh.expandPattern(orig)
	rep := ""
	if pe.Repl.With != nil {
		rep = sh.expandString(pe.Repl.With)
	}
	if pe.Repl.All && orig == nil && strings.Contains(sh.nodeText(pe), "///") {
		// ${x///} and ${x////r}: bash reads the third slash as the
		// pattern
		pat = "/"
		rep = strings.TrimPrefix(rep, "/")
	}
	if patsubNeverMatches(pat) {
		return pv
	}
	p := sh.compilePattern(pat, false, true)
	// patsub_replacement: an unquoted & in the replacement is the match
	amp := sh.shopt.patsubReplacement && pe.Repl.With != nil && hasUnquotedAmp(pe.Repl.With)
	f := func(s string) string {
		return sh.substitute(s, p, pat, rep, anchor, pe.Repl.All, amp)
	}
	if !pv.set && !pv.isList {
		return pv
	}
	return mapValue(pv, f)
}

// hasUnquotedAmp reports whether a replacement word has an & outside
// quotes.
func hasUnquotedAmp(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			v := l.Value
			for i := 0; i < len(v); i++ {
				if v[i] == '\\' {
					i++
					continue
				}
				if v[i] == '&' {
					return true
				}
			}
		}
	}
	return false
}

// expandReplacement turns the & of a replacement into the match (\&
// stays a literal &).
func expandReplacement(rep, match string) string {
	if strings.IndexByte(rep, '&') < 0 {
		return rep
	}
	var b strings.Builder
	for i := 0; i < len(rep); i++ {
		if rep[i] == '\\' && i+1 < len(rep) && rep[i+1] == '&' {
			b.WriteByte('&')
			i++
			continue
		}
		if rep[i] == '&' {
			b.WriteString(match)
			continue
		}
		b.WriteByte(rep[i])
	}
	return b.String()
}

// substitute replaces the first (or every) longest match of p in s.
func (sh *shell) substitute(s string, p *pattern, pat, rep string, anchor byte, all, amp bool) string {
	repFor := func(m string) string {
		if amp {
			return expandReplacement(rep, m)
		}
		return rep
	}
	if pat == "" && anchor == 0 {
		return s
	}
	switch anchor {
	case '#':
		for i := len(s); i >= 0; i = sh.prevChar(s, i) {
			sh.tick(i)
			if p.match(s[:i]) {
				return repFor(s[:i]) + s[i:]
			}
			if i == 0 {
				break
			}
		}
		return s
	case '%':
		for i := 0; i <= len(s); i = sh.nextChar(s, i) {
			sh.tick(i)
			if p.match(s[i:]) {
				return s[:i] + repFor(s[i:])
			}
		}
		return s
	}
	lit, isLit := p.literal()
	if s == "" {
		if !isLit && p.match("") {
			return repFor("")
		}
		return s
	}
	var b strings.Builder
	i := 0
	for i < len(s) {
		sh.tick(i)
		matched := -1
		if isLit {
			if lit != "" && strings.HasPrefix(s[i:], lit) {
				matched = i + len(lit)
			}
		} else {
			for j := len(s); j > i; j = sh.prevChar(s, j) {
				if p.match(s[i:j]) {
					matched = j
					break
				}
			}
		}
		if matched > i {
			b.WriteString(repFor(s[i:matched]))
			i = matched
			if !all {
				b.WriteString(s[i:])
				return b.String()
			}
			continue
		}
		n := sh.nextChar(s, i)
		b.WriteString(s[i:n])
		i = n
	}
	return b.String()
}

// transform applies ${x@op}.
func (e *expander) transform(pe *syntax.ParamExp, pv pvalue, quoted bool) {
	sh := e.sh
	op := ""
	if pe.Exp.Word != nil {
		op = pe.Exp.Word.Lit()
	}
	if !pv.set && !pv.isList {
		// a transformation of an unset parameter is nothing, and an
		// error under set -u
		if sh.opts.nounset {
			n := pv.name
			if n == "" {
				n = pe.Param.Value
			}
			sh.exitFatal(n + ": unbound variable")
		}
		if op != "a" {
			if quoted {
				// "${x@Q}" of an unset x is still an empty word
				e.cur.started = true
			}
			return
		}
	}
	switch op {
	case "Q":
		e.add(mapValue(pv, shellQuote), quoted)
	case "E":
		e.add(mapValue(pv, ansiC), quoted)
	case "P":
		e.add(mapValue(pv, sh.promptExpand), quoted)
	case "U":
		e.add(mapValue(pv, strings.ToUpper), quoted)
	case "L":
		e.add(mapValue(pv, strings.ToLower), quoted)
	case "u":
		e.add(mapValue(pv, upperFirst), quoted)
	case "a":
		target := pe.Param.Value
		if pe.Excl {
			target, _, _ = strings.Cut(pv.name, "[")
			if !pv.set && !pv.isList && pv.name == pe.Param.Value {
				// ${!A@a} of an array A without element 0: no target
				target = ""
			}
		}
		var v *variable
		if target != "" {
			v = sh.getVar(target)
		}
		s := ""
		if v != nil {
			s = attrFlags(v)
		}
		if pv.isList {
			out := make([]string, len(pv.list))
			for i := range out {
				out[i] = s
			}
			pv.list = out
			e.add(pv, quoted)
			return
		}
		if quoted {
			e.addQuoted(s)
		} else {
			e.addExpanded(s)
		}
	case "A":
		v := sh.getVar(pe.Param.Value)
		if v == nil || !v.set && !v.isArray() {
			return
		}
		s := sh.declareLine(pe.Param.Value, v, true)
		if quoted {
			e.addQuoted(s)
		} else {
			e.addExpanded(s)
		}
	case "K", "k":
		v := sh.getVar(pe.Param.Value)
		if v == nil || !v.isArray() || pe.Index == nil {
			e.add(mapValue(pv, shellQuote), quoted)
			return
		}
		var words []string
		each := func(k, val string) {
			if op == "K" {
				words = append(words, k, shellQuote(val))
			} else {
				words = append(words, k, val)
			}
		}
		if v.arr != nil {
			for _, el := range v.arr.elems {
				each(strconv.FormatInt(el.idx, 10), el.val)
			}
		} else if v.assc != nil {
			v.assc.each(func(k, val string) {
				if op == "K" {
					words = append(words, shellQuote(k), shellQuote(val))
				} else {
					words = append(words, k, val)
				}
			})
		}
		if op == "K" {
			if quoted {
				e.addQuoted(strings.Join(words, " "))
			} else {
				e.addExpanded(strings.Join(words, " "))
			}
			return
		}
		e.addList(words, false, quoted)
	default:
		sh.badSubst(pe)
	}
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// badSubst reports a bad substitution and ends the command.
func (sh *shell) badSubst(pe *syntax.ParamExp) {
	var b strings.Builder
	syntax.NewPrinter().Print(&b, pe)
	sh.errorf("%s: bad substitution", b.String())
	panic(fatalPanic{status: 1})
}

// attrFlags is ${x@a}: the variable's attribute letters.
func attrFlags(v *variable) string {
	var b strings.Builder
	if v.attrs&aIndexed != 0 {
		b.WriteByte('a')
	}
	if v.attrs&aAssoc != 0 {
		b.WriteByte('A')
	}
	if v.attrs&aInteger != 0 {
		b.WriteByte('i')
	}
	if v.attrs&aLower != 0 {
		b.WriteByte('l')
	}
	if v.attrs&aNameref != 0 {
		b.WriteByte('n')
	}
	if v.attrs&aReadonly != 0 {
		b.WriteByte('r')
	}
	if v.attrs&aTrace != 0 {
		b.WriteByte('t')
	}
	if v.attrs&aUpper != 0 {
		b.WriteByte('u')
	}
	if v.attrs&aExport != 0 {
		b.WriteByte('x')
	}
	return b.String()
}

// shellQuote quotes s for reuse as shell input, as ${x@Q} and printf %q
// ... of bash: '...' with '\” for quotes, $'...' for control characters.
func shellQuote(s string) string {
	if needsANSIQuote(s) {
		return ansiQuote(s)
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ansiQuote writes s as $'...'.
func ansiQuote(s string) string {
	var b strings.Builder
	b.WriteString("$'")
	octal := func(c byte) {
		b.WriteByte('\\')
		b.WriteByte('0' + c>>6)
		b.WriteByte('0' + c>>3&7)
		b.WriteByte('0' + c&7)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case 27:
			b.WriteString(`\E`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\v':
			b.WriteString(`\v`)
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		default:
			if c < 0x20 || c == 0x7f {
				octal(c)
				continue
			}
			if c < 0x80 {
				b.WriteByte(c)
				continue
			}
			// a multibyte character is kept if it is valid and
			// printable; its bytes are written in octal otherwise
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n <= 1 || unicode.IsControl(r) {
				for _, x := range []byte(s[i : i+max(n, 1)]) {
					octal(x)
				}
			} else {
				b.WriteString(s[i : i+n])
			}
			i += max(n, 1) - 1
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// needsANSIQuote reports whether s holds a byte that only $'...' can
// show: a control character, a byte that is not valid UTF-8, or a
// multibyte control character (bash's ansic_shouldquote).
func needsANSIQuote(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			if c < 0x20 || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 || unicode.IsControl(r) {
			return true
		}
		i += n
	}
	return false
}

// sortedKeys returns a map's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// parseDocText parses text as the body of a here-document (expansions,
// no quote removal), or nil when it does not parse.
func parseDocText(text string) *syntax.Word {
	p := parsers.Get().(*syntax.Parser)
	defer parsers.Put(p)
	w, err := p.Document(strings.NewReader(text))
	if err != nil {
		return nil
	}
	return w
}

// patsubNeverMatches reports a pattern bash's ${x/pat/r} never matches
// (its bug, which scripts see): bash first works out the length a
// pattern without * matches, and counts a negated bracket expression
// whose first member is ] ([^]a], [!]]) one character too long, so no
// substring of that length matches it.
func patsubNeverMatches(pat string) bool {
	found := false
	for i := 0; i < len(pat); i++ {
		switch pat[i] {
		case '\\':
			i++
		case '*', '(':
			return false // (a length bash does not fix)
		case '[':
			if i+2 < len(pat) && (pat[i+1] == '!' || pat[i+1] == '^') && pat[i+2] == ']' {
				found = true
			}
		}
	}
	return found
}
