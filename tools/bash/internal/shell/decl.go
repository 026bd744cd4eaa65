package shell

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// declArg is one argument of declare and its kin: an option word, a
// name, or an assignment.
type declArg struct {
	opt      string // "-a", "+x", ...
	name     string
	index    string // name[index]=...
	hasIndex bool
	// indexExpr is the parsed subscript (index is then unused)
	indexExpr syntax.ArithmExpr
	assign    bool
	append    bool
	value     string
	isArray   bool
	rawArray  *syntax.ArrayExpr
	// textArray: the array came from a quoted word ('x=(1 2)'), which +a
	// keeps a string
	textArray bool
}

// declClause runs declare, local, export, readonly or typeset as parsed.
func (sh *shell) declClause(c *syntax.DeclClause) int {
	sh.countCommand()
	variant := c.Variant.Value
	var args []declArg
	for _, as := range c.Args {
		switch {
		case as.Naked && as.Name == nil && as.Value != nil:
			// an option or a word expanded at run time
			for _, f := range sh.expandFields([]*syntax.Word{as.Value}) {
				args = append(args, sh.parseDeclWord(f)...)
			}
		case as.Name != nil && as.Index != nil && sh.spacedSubscriptWords(as) != nil:
			// declare a[1 + 2]=x: words to bash, "a[1" "+" "2]=x"
			for _, piece := range sh.spacedSubscriptWords(as) {
				w := parseWordText(piece)
				if w == nil {
					args = append(args, declArg{name: piece})
					continue
				}
				for _, f := range sh.expandFields([]*syntax.Word{w}) {
					args = append(args, sh.parseDeclWord(f)...)
				}
			}
		case as.Name != nil:
			a := declArg{name: as.Name.Value, append: as.Append}
			if as.Index != nil {
				a.hasIndex = true
				a.indexExpr = as.Index
				a.index = sh.nodeText(as.Index)
			}
			if !as.Naked {
				a.assign = true
				if as.Array != nil {
					a.isArray = true
					a.rawArray = as.Array
				} else {
					a.value = sh.expandAssign(as.Value)
				}
			}
			args = append(args, a)
		}
	}
	if sh.opts.xtrace {
		parts := []string{variant}
		for _, a := range args {
			switch {
			case a.opt != "":
				parts = append(parts, a.opt)
			case a.assign && !a.isArray:
				parts = append(parts, xtraceQuote(a.name+"="+a.value))
			default:
				parts = append(parts, a.name)
			}
		}
		sh.xtraceLine(strings.Join(parts, " "))
	}
	if !sh.debugTrap(variant) {
		return sh.status
	}
	sh.substStatus = -1
	status := sh.declare(variant, args)
	sh.lastArg = variant
	if n := len(args); n > 0 {
		a := args[n-1]
		switch {
		case a.opt != "":
			sh.lastArg = a.opt
		case a.assign && !a.isArray:
			sh.lastArg = a.name + "=" + a.value
		default:
			sh.lastArg = a.name
		}
	}
	if status == 0 && sh.substStatus > 0 {
		// declare x=$(false) is 0: declare's own status wins
	}
	return status
}

// spacedSubscriptWords splits the source of an assignment given to
// declare whose subscript holds blanks (declare a[ a[2]=3 ]=Y) into the
// words bash reads there: mvdan reads one assignment, bash does not join
// blanks into a subscript in a builtin's arguments. It is nil for any
// other assignment.
func (sh *shell) spacedSubscriptWords(as *syntax.Assign) []string {
	if sh.src == nil || !as.Pos().IsValid() {
		return nil
	}
	from, to := int(as.Pos().Offset()), int(as.End().Offset())
	if from >= to || to > len(sh.src.text) {
		return nil
	}
	raw := sh.src.text[from:to]
	open := len(as.Name.Value)
	if !strings.HasPrefix(raw, as.Name.Value+"[") {
		return nil
	}
	close := subscriptEnd(raw, open)
	if close < 0 || !strings.ContainsAny(raw[open:close], " \t") {
		return nil
	}
	var words []string
	for i := 0; i < len(raw); {
		if raw[i] == ' ' || raw[i] == '\t' {
			i++
			continue
		}
		end := wordEnd(raw, i)
		if end <= i {
			return nil
		}
		words = append(words, raw[i:end])
		i = end
	}
	if len(words) < 2 {
		return nil
	}
	return words
}

// parseDeclWord turns a word given to declare at run time into
// arguments.
func (sh *shell) parseDeclWord(w string) []declArg {
	if (strings.HasPrefix(w, "-") || strings.HasPrefix(w, "+")) && len(w) > 1 && !strings.Contains(w, "=") {
		return []declArg{{opt: w}}
	}
	name, val, hasEq := strings.Cut(w, "=")
	a := declArg{name: name}
	if strings.HasSuffix(name, "+") && len(name) > 1 {
		a.name = strings.TrimSuffix(name, "+")
		a.append = true
	}
	if i := strings.IndexByte(a.name, '['); i > 0 && strings.HasSuffix(a.name, "]") {
		a.index = a.name[i+1 : len(a.name)-1]
		a.name = a.name[:i]
		a.hasIndex = true
	}
	if hasEq {
		a.assign = true
		a.value = val
		if strings.HasPrefix(val, "(") && strings.HasSuffix(val, ")") && !a.hasIndex {
			if arr := sh.parseArrayText(val); arr != nil {
				a.isArray = true
				a.rawArray = arr
				a.textArray = true
			}
		}
	}
	return []declArg{a}
}

// parseArrayText parses "(a b [k]=v)" given to declare as a word.
func (sh *shell) parseArrayText(s string) *syntax.ArrayExpr {
	p := parsers.Get().(*syntax.Parser)
	defer parsers.Put(p)
	f, err := p.Parse(strings.NewReader("x="+s), "")
	if err != nil || len(f.Stmts) != 1 {
		return nil
	}
	ce, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Assigns) != 1 || ce.Assigns[0].Array == nil {
		return nil
	}
	return ce.Assigns[0].Array
}

// builtinDeclare is declare and its kin called by name (builtin declare,
// command declare, $cmd).
func builtinDeclare(sh *shell, args []string) int {
	var dargs []declArg
	for _, a := range args[1:] {
		dargs = append(dargs, sh.parseDeclWord(a)...)
	}
	return sh.declare(args[0], dargs)
}

// declFlags are the attribute options of declare.
type declFlags struct {
	set, unset       attr
	print, funcs     bool
	funcNames        bool
	global, local    bool
	removeExport     bool
	anyFlag, anyAttr bool
}

var declLetters = map[byte]attr{'a': aIndexed, 'A': aAssoc, 'i': aInteger, 'l': aLower, 'u': aUpper,
	'n': aNameref, 'r': aReadonly, 't': aTrace, 'x': aExport}

// declare implements declare, typeset, local, export and readonly.
func (sh *shell) declare(variant string, args []declArg) int {
	var f declFlags
	switch variant {
	case "export":
		f.set |= aExport
	case "readonly":
		f.set |= aReadonly
	case "local":
		f.local = true
		if len(sh.frames) == 0 || !sh.inFunction() {
			sh.errorf("local: can only be used in a function")
			return 1
		}
	case "declare", "typeset":
		f.local = sh.inFunction()
	}
	var rest []declArg
	endOpts := false
	for _, a := range args {
		if a.opt == "" || endOpts {
			if a.opt != "" {
				a = declArg{name: a.opt}
			}
			rest = append(rest, a)
			continue
		}
		if a.opt == "--" {
			endOpts = true
			continue
		}
		on := a.opt[0] == '-'
		for _, c := range []byte(a.opt[1:]) {
			switch c {
			case 'p':
				f.print = true
			case 'f':
				f.funcs = true
			case 'F':
				f.funcNames = true
			case 'g':
				f.global = true
			case 'n':
				if variant == "export" {
					f.removeExport = !on || on
					continue
				}
				fallthrough
			default:
				at, ok := declLetters[c]
				if !ok || variant == "export" && c != 'f' && c != 'p' && c != 'n' && c != 'a' && c != 'A' ||
					variant == "readonly" && c != 'a' && c != 'A' && c != 'f' && c != 'p' {
					sh.errorf("%s: -%c: invalid option", variant, c)
					sh.usageLine("%s: usage: %s", variant, declUsage(variant))
					return 2
				}
				if on {
					f.set |= at
					f.unset &^= at
				} else {
					f.unset |= at
					f.set &^= at
				}
				f.anyAttr = true
			}
		}
		f.anyFlag = true
	}
	if f.global {
		f.local = false
	}
	if f.unset&aIndexed != 0 {
		// declare +a 'x=(2 3)': the word is a string value
		for i := range rest {
			if rest[i].textArray {
				rest[i].isArray, rest[i].rawArray, rest[i].textArray = false, nil, false
			}
		}
	}
	if variant == "export" && f.removeExport {
		f.set &^= aExport
		f.unset |= aExport
	}
	if f.funcs || f.funcNames {
		return sh.declareFuncs(variant, rest, f)
	}
	if len(rest) == 0 {
		if f.print || !f.anyAttr || variant == "export" || variant == "readonly" || f.set != 0 && f.unset == 0 {
			// declare -a alone lists the arrays as declare -p does
			return sh.printDecls(variant, f)
		}
		return 0
	}
	if f.print && (variant == "export" || variant == "readonly") {
		// export -p NAME and readonly -p NAME export and mark NAME
		f.print = false
	}
	if f.print {
		status := 0
		for _, a := range rest {
			v := sh.getVarNoDynamic(a.name)
			if variant == "local" {
				if sc := sh.localScope(); sc.kind == scopeFunc {
					v = sc.vm.m[a.name]
				} else {
					v = nil
				}
			}
			if v == nil {
				sh.errorf("%s: %s: not found", variant, a.name)
				status = 1
				continue
			}
			sh.out(variant, sh.declareLine(a.name, v, false)+"\n")
		}
		return status
	}
	status := 0
	for _, a := range rest {
		if st := sh.declareOne(variant, a, f); st != 0 {
			status = st
		}
	}
	return status
}

func declUsage(variant string) string {
	switch variant {
	case "export":
		return "export [-fn] [name[=value] ...] or export -p"
	case "readonly":
		return "readonly [-aAf] [name[=value] ...] or readonly -p"
	case "local":
		return "local [option] name[=value] ..."
	}
	return variant + " [-aAfFgiIlnrtux] [name[=value] ...] or " + variant + " -p [-aAfFilnrtux] [name ...]"
}

// inFunction reports whether a function is running (not only a sourced
// file).
func (sh *shell) inFunction() bool {
	for _, f := range sh.frames {
		if !f.isSource {
			return true
		}
	}
	return false
}

// getVarNoDynamic is getVar for printing: a dynamic variable shows as
// declared.
func (sh *shell) getVarNoDynamic(name string) *variable {
	v, _ := sh.lookup(name)
	if v == nil {
		return nil
	}
	if v.attrs&aDynamic != 0 {
		switch name {
		case "FUNCNAME", "BASH_SOURCE", "BASH_LINENO", "PIPESTATUS", "DIRSTACK", "GROUPS", "BASH_ARGC", "BASH_ARGV",
			"BASH_ALIASES", "BASH_CMDS":
			d := sh.dynamic(name, v)
			return d
		case "SHELLOPTS", "BASHOPTS":
			d := sh.dynamic(name, v)
			d.attrs |= aReadonly
			return d
		}
		return &variable{attrs: v.attrs &^ aDynamic}
	}
	return v
}

// declareOne declares (and assigns) one name.
func (sh *shell) declareOne(variant string, a declArg, f declFlags) int {
	name := a.name
	if !validName(name) {
		sh.errorf("%s: `%s': not a valid identifier", variant, declArgText(a))
		return 1
	}
	if a.hasIndex && (variant == "readonly" || variant == "export") {
		sh.errorf("%s: `%s[%s]': not a valid identifier", variant, name, a.index)
		return 1
	}
	// the scope the variable lives in
	var sc *scope
	v, vsc := sh.lookup(name)
	visible := v
	if a.hasIndex && !a.assign && f.set&aAssoc == 0 && (v == nil || v.assc == nil) {
		// declare -r c[100]: c is an indexed array
		f.set |= aIndexed
	}
	if f.local {
		sc = sh.localScope()
		if vsc != nil && vsc.kind == scopeTemp && v.tempEnv && sh.above(vsc, sc) {
			// v=x eval 'local v=y' in a function: local makes the
			// temporary v local to the eval (bash's builtin env)
			sc = vsc
		}
		if vsc != sc {
			if v != nil && v.attrs&aReadonly != 0 {
				sh.errorf("%s: %s: readonly variable", variant, name)
				return 1
			}
			v = nil
		}
	} else if f.global {
		sc = sh.scopes[0]
		v = sc.vm.m[name]
	} else {
		sc = vsc
		if sc == nil {
			sc = sh.scopes[0]
		}
	}
	// namerefs: declare on a nameref acts on its target, unless -n
	if v != nil && v.attrs&aNameref != 0 && f.set&aNameref == 0 && f.unset&aNameref == 0 && v.set && v.str != "" && variant != "local" {
		target := v.str
		if a.assign && !a.isArray && !a.hasIndex {
			if err := sh.setString(target, a.value, a.append); err != nil {
				sh.errorf("%s: %s", variant, err.Error())
				return 1
			}
		}
		return 0
	}
	if v != nil && v.attrs&aReadonly != 0 {
		if a.assign || f.set&^(aReadonly|aExport) != 0 || f.unset != 0 {
			sh.errorf("%s: %s: readonly variable", variant, name)
			return 1
		}
	}
	if v != nil && v.assc != nil && f.set&aIndexed != 0 {
		sh.errorf("%s: %s: cannot convert associative to indexed array", variant, name)
		return 1
	}
	if v != nil && v.arr != nil && f.set&aAssoc != 0 {
		sh.errorf("%s: %s: cannot convert indexed to associative array", variant, name)
		return 1
	}
	if f.set&aNameref != 0 && a.assign && !a.isArray {
		if a.value != "" && !validRefTarget(a.value) {
			sh.errorf("%s: `%s': invalid variable name for name reference", variant, a.value)
			return 1
		}
		if a.value == name {
			sh.errorf("%s: %s: nameref variable self references not allowed", variant, name)
			return 1
		}
	}
	if f.set&aNameref != 0 && !a.assign && v != nil && v.set && !v.isArray() && v.attrs&aNameref == 0 && !validRefTarget(v.str) {
		sh.errorf("%s: `%s': invalid variable name for name reference", variant, v.str)
		return 1
	}
	if f.set&aNameref != 0 && v != nil && v.isArray() {
		sh.errorf("%s: %s: reference variable cannot be an array", variant, name)
		return 1
	}
	m := sc.writable()
	w := m[name]
	if w == nil {
		w = &variable{owner: sh.id}
		if !f.global && (vsc == nil || f.local) && sh.opts.allexport {
			w.attrs |= aExport
		}
		if f.local && (sh.shopt.localvarInherit || visible != nil && visible.tempEnv) {
			// local v inherits the value of an assignment before a
			// command (v=x f), as localvar_inherit does every value
			if outer := sh.getVar(name); outer != nil {
				c := outer.clone()
				c.attrs &^= aNameref | aDynamic
				w = c
				w.owner = sh.id
			}
		}
		m[name] = w
	}
	if f.local {
		w.tempEnv = false
	}
	// attributes
	w.attrs |= f.set &^ aReadonly
	w.attrs &^= f.unset
	if f.set&aLower != 0 {
		w.attrs &^= aUpper
	}
	if f.set&aUpper != 0 {
		w.attrs &^= aLower
	}
	if (variant == "readonly" || variant == "export") && !w.set && !a.assign && w.arr == nil && w.assc == nil {
		// bash's readonly -a x and export -a x leave an unset x without
		// the array attribute
		w.attrs &^= aIndexed | aAssoc
	} else {
		// declare -a x: an array without elements, unset until one is
		// assigned ("declare -a x" in declare -p)
		if f.set&aIndexed != 0 && w.arr == nil {
			w.arr = &indexed{}
			if w.set {
				w.arr.set(0, w.str)
			}
			w.str = ""
		}
		if f.set&aAssoc != 0 && w.assc == nil {
			w.assc = newAssoc()
			w.attrs &^= aIndexed
			if w.set && w.arr == nil {
				// declare -A s of a scalar s: its value is s[0]
				w.assc.set("0", w.str)
				w.str = ""
			}
		}
	}
	if f.set&aNameref != 0 {
		w.attrs &^= aInteger | aLower | aUpper
	}
	status := 0
	if a.assign {
		var err error
		switch {
		case a.isArray:
			if w.attrs&aNameref != 0 {
				sh.errorf("%s: %s: reference variable cannot be an array", variant, name)
				return 1
			}
			items, _ := sh.arrayItemsFor(w, a.rawArray)
			err = sh.setArrayIn(sc, name, items, a.append)
		case a.hasIndex:
			key := a.index
			switch {
			case a.indexExpr != nil && w.assc != nil:
				key = sh.assocKey(a.indexExpr)
			case a.indexExpr != nil:
				key = strconv.FormatInt(sh.subscript(a.indexExpr), 10)
			case w.assc == nil:
				n, aerr := sh.arithString(key)
				if aerr != nil {
					sh.fatal(subscriptErr(aerr))
				}
				key = strconv.FormatInt(n, 10)
			}
			err = sh.setElem(name, key, a.value, a.append)
		case w.attrs&aNameref != 0:
			w.str, w.set = a.value, true
		default:
			err = sh.setStringIn(sc, name, a.value, a.append)
		}
		if err != nil {
			sh.errorf("%s: %s", variant, err.Error())
			status = 1
		}
	}
	if f.set&aReadonly != 0 {
		if w2 := sc.writable()[name]; w2 != nil {
			w2.attrs |= aReadonly
		}
	}
	return status
}

func declArgText(a declArg) string {
	if a.assign {
		return a.name + "=" + a.value
	}
	return a.name
}

// validRefTarget reports whether s may be a nameref's target: a name or
// name[subscript].
func validRefTarget(s string) bool {
	if i := strings.IndexByte(s, '['); i > 0 && strings.HasSuffix(s, "]") {
		return validName(s[:i])
	}
	return validName(s)
}

// above reports whether scope a is above (inner to) scope b.
func (sh *shell) above(a, b *scope) bool {
	for i := len(sh.scopes) - 1; i >= 0; i-- {
		switch sh.scopes[i] {
		case a:
			return true
		case b:
			return false
		}
	}
	return false
}

// localScope returns the current function's scope.
func (sh *shell) localScope() *scope {
	for i := len(sh.scopes) - 1; i >= 0; i-- {
		if sh.scopes[i].kind == scopeFunc {
			return sh.scopes[i]
		}
	}
	return sh.scopes[0]
}

// setStringIn assigns a scalar in a given scope (declare, local).
func (sh *shell) setStringIn(sc *scope, name, val string, appendTo bool) error {
	m := sc.writable()
	v := m[name]
	if v == nil {
		v = &variable{owner: sh.id}
		m[name] = v
	}
	if v.isArray() {
		return sh.setElem(name, "0", val, appendTo)
	}
	old := ""
	if v.set {
		old = v.str
	}
	val, err := sh.applyAttrs(v.attrs, old, val, appendTo)
	if err != nil {
		return err
	}
	delta := int64(len(val) - len(v.str))
	if !v.set {
		delta = int64(len(val))
	}
	v.str, v.set = val, true
	sh.account(v, delta)
	sh.varChanged(name)
	return nil
}

// arrayItemsFor expands an array literal for variable w.
func (sh *shell) arrayItemsFor(w *variable, arr *syntax.ArrayExpr) ([]arrayItem, bool) {
	isAssoc := w.assc != nil || w.attrs&aAssoc != 0
	var items []arrayItem
	for _, el := range arr.Elems {
		if fields, ok := sh.bracedElem(el, isAssoc); ok {
			for _, f := range fields {
				items = append(items, arrayItem{val: f})
			}
			continue
		}
		if el.Index != nil {
			value, appendTo := elemValue(el)
			it := arrayItem{keyed: true, appendTo: appendTo}
			if isAssoc {
				it.key = sh.assocKey(el.Index)
			} else {
				it.key = sh.arithIndexText(el.Index)
			}
			if value != nil && isAssoc {
				it.val = sh.expandAssocValue(value)
			} else if value != nil {
				it.val = sh.expandAssign(value)
			}
			items = append(items, it)
			continue
		}
		if el.Value == nil {
			continue
		}
		for _, f := range sh.expandElemFields(el.Value) {
			items = append(items, arrayItem{val: f})
		}
	}
	return items, isAssoc
}

// setArrayIn assigns an array in a given scope.
func (sh *shell) setArrayIn(sc *scope, name string, items []arrayItem, appendTo bool) error {
	// setArray finds the innermost variable: make sure it is this one
	top := sh.scopes
	idx := -1
	for i, s := range top {
		if s == sc {
			idx = i
		}
	}
	if idx < 0 || idx == len(top)-1 {
		return sh.setArray(name, items, appendTo, false)
	}
	saved := sh.scopes
	sh.scopes = sh.scopes[:idx+1]
	defer func() { sh.scopes = saved }()
	return sh.setArray(name, items, appendTo, false)
}

// printDecls prints variables as declare -p (or export -p, readonly -p)
// does.
func (sh *shell) printDecls(variant string, f declFlags) int {
	var b strings.Builder
	var names []string
	if variant == "local" {
		sc := sh.localScope()
		if sc.kind == scopeFunc && sc.vm.m != nil {
			names = sortedKeys(sc.vm.m)
		}
	} else {
		names = sh.allNames()
	}
	for _, n := range names {
		v := sh.getVarNoDynamic(n)
		if v == nil {
			continue
		}
		if f.set != 0 && v.attrs&f.set != f.set {
			continue
		}
		if variant == "export" && v.attrs&aExport == 0 || variant == "readonly" && v.attrs&aReadonly == 0 {
			continue
		}
		if !f.print && variant != "export" && variant != "readonly" && variant != "local" && !f.anyAttr {
			// declare alone: name=value lines as set prints them
			if !v.set && !v.isArray() {
				continue
			}
			if v.isArray() {
				b.WriteString(n + "=" + arrayLiteral(v) + "\n")
			} else {
				b.WriteString(n + "=" + setQuote(v.str) + "\n")
			}
			continue
		}
		b.WriteString(sh.declareLine(n, v, false) + "\n")
	}
	if !f.print && variant == "declare" && !f.anyAttr {
		for _, n := range sortedKeys(sh.funcs.m) {
			b.WriteString(sh.funcText(sh.funcs.m[n]))
		}
	}
	sh.out(variant, b.String())
	return 0
}

// declareLine is "declare -x name="value"" for declare -p; assign gives
// the ${x@A} form (without -- for plain variables).
func (sh *shell) declareLine(name string, v *variable, assign bool) string {
	flags := declFlagString(v)
	if flags == "" {
		flags = "--"
	} else {
		flags = "-" + flags
	}
	prefix := "declare " + flags + " " + name
	if assign && flags == "--" && !v.isArray() {
		prefix = name
		if !v.set {
			return ""
		}
		return name + "=" + shellQuote(v.str)
	}
	switch {
	case !v.set:
		return prefix
	case v.arr != nil || v.assc != nil:
		return prefix + "=" + arrayLiteral(v)
	}
	return prefix + "=" + declQuote(v.str)
}

// declFlagString is the attribute letters in bash's order.
func declFlagString(v *variable) string {
	var b strings.Builder
	for _, f := range []struct {
		a attr
		c byte
	}{{aIndexed, 'a'}, {aAssoc, 'A'}, {aInteger, 'i'}, {aNameref, 'n'}, {aReadonly, 'r'}, {aTrace, 't'},
		{aExport, 'x'}, {aLower, 'l'}, {aUpper, 'u'}} {
		if v.attrs&f.a != 0 {
			b.WriteByte(f.c)
		}
	}
	return b.String()
}

// arrayLiteral is an array's value as declare -p prints it.
func arrayLiteral(v *variable) string {
	var b strings.Builder
	b.WriteByte('(')
	switch {
	case v.arr != nil:
		for i, el := range v.arr.elems {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString("[" + strconv.FormatInt(el.idx, 10) + "]=" + declQuote(el.val))
		}
	case v.assc != nil:
		v.assc.each(func(k, val string) {
			b.WriteString("[" + assocKeyQuote(k) + "]=" + declQuote(val) + " ")
		})
	}
	b.WriteByte(')')
	return b.String()
}

// assocKeyQuote quotes a key as declare -p prints it.
func assocKeyQuote(k string) string {
	if k == "" {
		return `""`
	}
	// bash's sh_contains_shell_metas
	for i := 0; i < len(k); i++ {
		switch c := k[i]; c {
		case ' ', '\t', '\n', '\'', '"', '\\', '|', '&', ';', '(', ')', '<', '>', '!', '{', '}',
			'*', '[', '?', ']', '^', '$', '`':
			return declQuote(k)
		case '~':
			if i == 0 || k[i-1] == '=' || k[i-1] == ':' {
				return declQuote(k)
			}
		case '#':
			if i == 0 {
				return declQuote(k)
			}
		default:
			if c < 0x20 || c == 0x7f {
				return declQuote(k)
			}
		}
	}
	return k
}

// declQuote quotes a value as declare -p does: "..." escaping " $ ` \,
// or $'...' for control characters.
func declQuote(s string) string {
	if needsANSIQuote(s) {
		return ansiQuote(s)
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '$', '`', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// declareFuncs is declare -f/-F (and export -f, readonly -f).
func (sh *shell) declareFuncs(variant string, args []declArg, f declFlags) int {
	if variant == "readonly" || f.set&aReadonly != 0 {
		status := 0
		for _, a := range args {
			fn, ok := sh.funcs.m[a.name]
			if !ok {
				sh.errorf("%s: %s: not a function", variant, a.name)
				status = 1
				continue
			}
			c := *fn
			c.ro = true
			sh.funcsWritable()[a.name] = &c
		}
		if len(args) > 0 {
			return status
		}
	}
	if variant == "export" && len(args) > 0 {
		for _, a := range args {
			if _, ok := sh.funcs.m[a.name]; !ok {
				sh.errorf("export: %s: not a function", a.name)
				return 1
			}
		}
		return 0
	}
	names := make([]string, 0, len(args))
	for _, a := range args {
		names = append(names, a.name)
	}
	if len(names) == 0 {
		names = sortedKeys(sh.funcs.m)
	}
	status := 0
	var b strings.Builder
	for _, n := range names {
		fn, ok := sh.funcs.m[n]
		if !ok {
			if len(args) > 0 {
				status = 1
			}
			continue
		}
		if f.funcNames {
			if len(args) > 0 && sh.shopt.extdebug {
				// extdebug: where the function was defined
				file := fn.file
				if file == "" || sh.dashC && file == sh.argv0 {
					// bash -c's script
					file = "environment"
				}
				b.WriteString(n + " " + strconv.Itoa(fn.line) + " " + file + "\n")
				continue
			}
			if len(args) > 0 {
				b.WriteString(n + "\n")
				continue
			}
			flags := "-f"
			if fn.ro {
				flags = "-fr"
			}
			b.WriteString("declare " + flags + " " + n + "\n")
			continue
		}
		b.WriteString(sh.funcText(fn))
	}
	sh.out(variant, b.String())
	return status
}
