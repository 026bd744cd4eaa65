package shell

import (
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// attr is a variable's attributes (declare -aAilnrux).
type attr uint16

const (
	aExport attr = 1 << iota
	aReadonly
	aInteger
	aLower
	aUpper
	aNameref
	aIndexed
	aAssoc
	aTrace
	aDynamic // a shell variable computed on read (RANDOM, SECONDS, ...)
)

// variable is one shell variable. It is never changed in place while its
// varMap is shared (see varMap).
type variable struct {
	attrs attr
	set   bool // has a value: "declare x" declares x without one
	str   string
	arr   *indexed // with aIndexed
	assc  *assoc   // with aAssoc
	// owner is the id of the shell that charged its value to the budget,
	// and charge what it charged.
	owner  uint32
	charge int64
	// tempEnv: the variable was assigned before a command (v=x f) and
	// not made local since; local v inherits its value (bash's tempenv)
	tempEnv bool
}

func (v *variable) isArray() bool { return v.attrs&(aIndexed|aAssoc) != 0 }

// clone copies v, its array too.
func (v *variable) clone() *variable {
	c := *v
	if v.arr != nil {
		c.arr = v.arr.clone()
	}
	if v.assc != nil {
		c.assc = v.assc.clone()
	}
	return &c
}

// size is the bytes v's value holds, for the memory budget.
func (v *variable) size() int64 {
	switch {
	case v.arr != nil:
		return v.arr.size() + elemOverhead
	case v.assc != nil:
		return v.assc.size() + elemOverhead
	}
	return int64(len(v.str)) + elemOverhead
}

// varMap is the variables of one scope, shared between a shell and its
// subshells until one of them writes (copy on write): refs counts the
// scopes that hold it.
type varMap struct {
	m    map[string]*variable
	refs atomic.Int32
}

func newVarMap(n int) *varMap {
	vm := &varMap{m: make(map[string]*variable, n)}
	vm.refs.Store(1)
	return vm
}

// scopeKind says what a scope is.
type scopeKind uint8

const (
	scopeGlobal scopeKind = iota
	scopeFunc             // a function's locals
	scopeTemp             // the assignments before a command (x=1 f)
)

// scope is one level of variables: the globals, a function's locals, or
// a command's temporary assignments.
type scope struct {
	kind scopeKind
	vm   *varMap
}

// writable returns the scope's map for writing, copying it first if
// another shell holds it too.
func (sc *scope) writable() map[string]*variable {
	if sc.vm.refs.Load() == 1 {
		if sc.vm.m == nil {
			sc.vm.m = make(map[string]*variable, 4)
		}
		return sc.vm.m
	}
	nm := newVarMap(len(sc.vm.m))
	for k, v := range sc.vm.m {
		nm.m[k] = v.clone()
	}
	old := sc.vm
	sc.vm = nm
	old.refs.Add(-1)
	return nm.m
}

// share gives a copy of the scope to a subshell.
func (sc *scope) share() *scope {
	sc.vm.refs.Add(1)
	return &scope{kind: sc.kind, vm: sc.vm}
}

// drop gives up the scope's map (its shell ends).
func (sc *scope) drop() { sc.vm.refs.Add(-1) }

// lookup finds name in the scopes, innermost first, without following
// namerefs.
func (sh *shell) lookup(name string) (*variable, *scope) {
	for i := len(sh.scopes) - 1; i >= 0; i-- {
		sc := sh.scopes[i]
		if v, ok := sc.vm.m[name]; ok {
			return v, sc
		}
	}
	return nil, nil
}

// maxNamerefDepth bounds chains of namerefs (bash warns of a circular
// reference past this).
const maxNamerefDepth = 8

// resolve follows namerefs from name: the name finally meant and its
// variable (nil if unset). A nameref whose target is an array element
// ("a[2]") resolves to that name with its subscript.
func (sh *shell) resolve(name string) (string, *variable, *scope) {
	for range maxNamerefDepth {
		v, sc := sh.lookup(name)
		if v == nil || v.attrs&aNameref == 0 || !v.set || v.str == "" {
			return name, v, sc
		}
		name = v.str
		if strings.IndexByte(name, '[') >= 0 {
			return name, nil, nil
		}
	}
	sh.errorf("warning: %s: circular name reference", name)
	sh.circularRef = true
	return name, nil, nil
}

// getVar returns the variable name means (namerefs followed), nil if
// unset; dynamic variables are computed.
func (sh *shell) getVar(name string) *variable {
	n, v, _ := sh.resolve(name)
	if v == nil {
		if n != name && strings.IndexByte(n, '[') >= 0 && !strings.HasSuffix(n, "[@]") && !strings.HasSuffix(n, "[*]") {
			// a nameref to an element: a scalar view of it (to a[@]:
			// none, $ref is read as "${a[@]}" by special)
			if s, ok := sh.elemByRef(n); ok {
				return &variable{set: true, str: s}
			}
		}
		return nil
	}
	if v.attrs&aDynamic != 0 {
		return sh.dynamic(n, v)
	}
	return v
}

// varValue is the value of $name: a scalar's string, an array's element 0.
func (sh *shell) varValue(name string) (string, bool) {
	v := sh.getVar(name)
	if v == nil || !v.set {
		return "", false
	}
	switch {
	case v.arr != nil:
		return v.arr.get(0)
	case v.assc != nil:
		return v.assc.get("0")
	}
	return v.str, true
}

// value is varValue without the flag.
func (sh *shell) value(name string) string {
	s, _ := sh.varValue(name)
	return s
}

// ifs is $IFS, or its default when unset.
func (sh *shell) ifs() string {
	v := sh.getVar("IFS")
	if v == nil || !v.set {
		return " \t\n"
	}
	return v.str
}

// assignError is a failed assignment (readonly, bad subscript, ...).
type assignError struct{ msg string }

func (e *assignError) Error() string { return e.msg }

// writableVar returns the variable name in scope sc for writing (created
// if absent).
func (sh *shell) writableVar(sc *scope, name string) *variable {
	m := sc.writable()
	v := m[name]
	if v == nil {
		v = &variable{owner: sh.id}
		m[name] = v
	}
	return v
}

// target finds where an assignment to name goes: the innermost scope that
// has it, else the globals (or, with local, the current function's
// scope).
func (sh *shell) target(name string) (*variable, *scope) {
	v, sc := sh.lookup(name)
	if v != nil {
		return v, sc
	}
	return nil, sh.scopes[0]
}

// account records that v's value grew by delta bytes (shrank, when
// negative), charging the memory budget. A variable this shell did not
// charge (inherited from its parent) is charged whole, once.
func (sh *shell) account(v *variable, delta int64) {
	if v.owner != sh.id {
		n := v.size()
		sh.chargeBytes(n)
		v.owner, v.charge = sh.id, n
		return
	}
	if delta < 0 {
		if -delta > v.charge {
			delta = -v.charge
		}
		sh.r.budget.Release(-delta)
		sh.held += delta
		v.charge += delta
		return
	}
	sh.chargeBytes(delta)
	v.charge += delta
}

// reaccount charges v's whole size anew (after a replacement).
func (sh *shell) reaccount(v *variable) {
	if v.owner != sh.id {
		sh.account(v, 0)
		return
	}
	sh.account(v, v.size()-v.charge)
}

// chargeBytes charges n bytes to the budget for this shell; past the
// budget the run stops.
func (sh *shell) chargeBytes(n int64) {
	if n <= 0 {
		return
	}
	if err := sh.r.budget.Charge(n); err != nil {
		sh.r.stop(err)
		panic(stopPanic{})
	}
	sh.held += n
}

// setString assigns a scalar value to name (or to element 0 of an array),
// following namerefs and applying the variable's attributes. appendTo is
// +=.
func (sh *shell) setString(name, val string, appendTo bool) error {
	name, v, sc := sh.resolve(name)
	if v == nil && strings.IndexByte(name, '[') >= 0 {
		base, sub, _ := strings.Cut(strings.TrimSuffix(name, "]"), "[")
		if sub == "@" || sub == "*" {
			return &assignError{"`" + name + "': not a valid identifier"}
		}
		return sh.setElem(base, sh.expandSubscript(sub), val, appendTo)
	}
	if v == nil {
		v, sc = sh.target(name)
	}
	if v != nil && v.attrs&aReadonly != 0 {
		return &assignError{name + ": readonly variable"}
	}
	if v != nil && v.attrs&aDynamic != 0 {
		if sh.setDynamic(name, val) {
			return nil
		}
	}
	if v != nil && v.isArray() {
		key := "0"
		return sh.setElem(name, key, val, appendTo)
	}
	var attrs attr
	var old string
	if v != nil {
		attrs, old = v.attrs, v.str
		if !v.set {
			old = ""
		}
	}
	val, err := sh.applyAttrs(attrs, old, val, appendTo)
	if err != nil {
		return err
	}
	w := sh.writableVar(sc, name)
	delta := int64(len(val) - len(w.str))
	if !w.set {
		delta = int64(len(val))
	}
	w.str, w.set = val, true
	if sh.opts.allexport {
		w.attrs |= aExport
	}
	sh.account(w, delta)
	sh.varChanged(name)
	return nil
}

// applyAttrs computes the value an assignment stores: an integer
// variable's value is evaluated (and += adds), -l/-u change case, +=
// appends.
func (sh *shell) applyAttrs(attrs attr, old, val string, appendTo bool) (string, error) {
	if attrs&aInteger != 0 {
		n, err := sh.arithString(val)
		if err != nil {
			return "", err
		}
		if appendTo {
			o, err := sh.arithString(old)
			if err != nil {
				return "", err
			}
			n += o
		}
		return strconv.FormatInt(n, 10), nil
	}
	if appendTo {
		val = old + val
	}
	switch {
	case attrs&aLower != 0:
		val = strings.ToLower(val)
	case attrs&aUpper != 0:
		val = strings.ToUpper(val)
	}
	return val, nil
}

// setElem assigns element sub of array name (an index expression for an
// indexed array, a key for an associative one); a scalar becomes an
// indexed array.
func (sh *shell) setElem(name, sub, val string, appendTo bool) error {
	name, v, sc := sh.resolve(name)
	if strings.IndexByte(name, '[') >= 0 {
		// ref[0]=x where ref names an element
		return &assignError{"`" + name + "': not a valid identifier"}
	}
	if v == nil {
		v, sc = sh.target(name)
	}
	if v != nil && v.attrs&aReadonly != 0 {
		return &assignError{name + ": readonly variable"}
	}
	if v != nil && v.attrs&aDynamic != 0 && v.assc == nil && v.attrs&aAssoc != 0 {
		// BASH_ALIASES[name]=value defines an alias; bash's BASH_CMDS
		// (the command hash table) is kept empty: the sandbox hashes none
		if name == "BASH_ALIASES" {
			if !validAliasName(sub) {
				return &assignError{"`" + sub + "': invalid alias name"}
			}
			sh.aliasesWritable()[sub] = val
		}
		return nil
	}
	if v != nil && v.attrs&aAssoc != 0 {
		old, _ := v.assc.get(sub)
		val, err := sh.applyAttrs(v.attrs, old, val, appendTo)
		if err != nil {
			return err
		}
		w := sh.writableVar(sc, name)
		prev, existed := w.assc.set(sub, val)
		w.set = true
		delta := int64(len(val) - len(prev))
		if !existed {
			delta += int64(len(sub)) + 2*elemOverhead
		}
		sh.account(w, delta)
		return nil
	}
	idx, err := sh.arithString(sub)
	if err != nil {
		return err
	}
	w := sh.writableVar(sc, name)
	if w.arr == nil {
		w.arr = &indexed{}
		if w.set && w.attrs&aIndexed == 0 {
			w.arr.set(0, w.str)
		}
		w.str = ""
		w.attrs |= aIndexed
	}
	if idx < 0 {
		idx += w.arr.maxIndex() + 1
		if idx < 0 {
			return &assignError{name + "[" + sub + "]: bad array subscript"}
		}
	}
	old, _ := w.arr.get(idx)
	val, err = sh.applyAttrs(w.attrs, old, val, appendTo)
	if err != nil {
		return err
	}
	prev, existed := w.arr.set(idx, val)
	w.set = true
	if sh.opts.allexport {
		w.attrs |= aExport
	}
	delta := int64(len(val) - len(prev))
	if !existed {
		delta += elemOverhead
	}
	sh.account(w, delta)
	return nil
}

// setArray replaces (or, appendTo, extends) array name with elems: an
// indexed array's values in order, or key/value pairs (keyed set) for
// explicit [k]=v elements.
func (sh *shell) setArray(name string, elems []arrayItem, appendTo, assocWanted bool) error {
	name, v, sc := sh.resolve(name)
	if strings.IndexByte(name, '[') >= 0 {
		// ref=(...) where ref names an element or a[@]
		return &assignError{"`" + name + "': not a valid identifier"}
	}
	if v == nil {
		v, sc = sh.target(name)
	}
	if v != nil && v.attrs&aReadonly != 0 {
		return &assignError{name + ": readonly variable"}
	}
	w := sh.writableVar(sc, name)
	// appending to an array this shell holds is accounted for by what is
	// added (replacing one, by its new size)
	incremental := appendTo && w.owner == sh.id && (w.arr != nil || w.assc != nil)
	isAssoc := w.attrs&aAssoc != 0 || assocWanted
	if isAssoc {
		w.attrs |= aAssoc
		w.attrs &^= aIndexed
		// bash reads [k]+=v in a=(...) against the array it replaces
		prior := w.assc
		if w.assc == nil || !appendTo {
			fresh := newAssoc()
			if appendTo && w.set && w.assc == nil && w.arr == nil {
				// a scalar made associative keeps its value as key 0
				fresh.set("0", w.str)
			}
			w.assc = fresh
		}
		w.arr, w.str = nil, ""
		w.set = true
		keyed := false
		for _, e := range elems {
			if e.keyed {
				keyed = true
			}
		}
		for i := 0; i < len(elems); i++ {
			e := elems[i]
			if !e.keyed {
				if keyed {
					sh.errorf("%s: %s: must use subscript when assigning associative array", name, e.val)
					continue
				}
				// bash 5.1+: (k1 v1 k2 v2) pairs
				k := e.val
				val := ""
				if i+1 < len(elems) {
					val = elems[i+1].val
					i++
				}
				w.assc.set(k, val)
				continue
			}
			val := e.val
			if e.appendTo && prior != nil {
				old, _ := prior.get(e.key)
				val = old + val
			}
			if w.attrs&aInteger != 0 {
				n, err := sh.arithString(val)
				if err != nil {
					return err
				}
				val = strconv.FormatInt(n, 10)
			} else if w.attrs&(aLower|aUpper) != 0 {
				val, _ = sh.applyAttrs(w.attrs, "", val, false)
			}
			w.assc.set(e.key, val)
		}
	} else {
		// elements are set in order, an index seeing the ones before it
		if !appendTo || w.arr == nil {
			arr := &indexed{elems: make([]element, 0, len(elems))}
			if appendTo && w.set && w.attrs&aIndexed == 0 {
				arr.set(0, w.str)
			}
			w.arr = arr
		}
		w.str, w.assc = "", nil
		w.attrs |= aIndexed
		w.set = true
		arr := w.arr
		next := arr.maxIndex() + 1
		for _, e := range elems {
			idx := next
			if e.keyed {
				n, err := sh.arithString(e.key)
				if err != nil {
					return err
				}
				if n < 0 {
					n += arr.maxIndex() + 1
					if n < 0 {
						return &assignError{name + "[" + e.key + "]: bad array subscript"}
					}
				}
				idx = n
			}
			val := e.val
			if e.appendTo {
				old, _ := arr.get(idx)
				val = old + val
			}
			if w.attrs&aInteger != 0 {
				n, err := sh.arithString(val)
				if err != nil {
					return err
				}
				val = strconv.FormatInt(n, 10)
			} else if w.attrs&(aLower|aUpper) != 0 {
				val, _ = sh.applyAttrs(w.attrs, "", val, false)
			}
			arr.set(idx, val)
			next = idx + 1
		}
	}
	if sh.opts.allexport {
		w.attrs |= aExport
	}
	if incremental {
		var added int64
		for _, e := range elems {
			added += int64(len(e.key)+len(e.val)) + 2*elemOverhead
		}
		sh.account(w, added)
		return nil
	}
	sh.reaccount(w)
	return nil
}

// arrayItem is one element of an array assignment: a value, or [key]=value.
type arrayItem struct {
	key      string
	val      string
	keyed    bool
	appendTo bool // [k]+=v
}

// unsetVar unsets name (following namerefs unless unsetting the nameref
// itself with -n).
func (sh *shell) unsetVar(name string, nameref bool) error {
	v, sc := sh.lookup(name)
	if !nameref && v != nil && v.attrs&aNameref != 0 && v.set {
		n, rv, rsc := sh.resolve(name)
		if strings.IndexByte(n, '[') >= 0 {
			base, sub, _ := strings.Cut(strings.TrimSuffix(n, "]"), "[")
			return sh.unsetElem(base, sh.expandSubscript(sub))
		}
		name, v, sc = n, rv, rsc
	}
	if v == nil {
		return nil
	}
	if v.attrs&aReadonly != 0 {
		return &assignError{name + ": cannot unset: readonly variable"}
	}
	m := sc.writable()
	if old := m[name]; old != nil && old.owner == sh.id {
		sh.r.budget.Release(old.charge)
		sh.held -= old.charge
	}
	if sc.kind != scopeGlobal && sh.localUnsetHides(sc, v) {
		// bash: unsetting a local of a calling function's scope reveals the
		// global; unsetting one's own local leaves it declared but unset.
		m[name] = &variable{owner: sh.id}
		return nil
	}
	delete(m, name)
	sh.varChanged(name)
	return nil
}

// localUnsetHides reports whether unsetting a variable of scope sc keeps
// a hidden placeholder there: bash keeps an unset local in the function
// that declared it, so that the global stays hidden (localvar_unset).
//
// A variable of a temporary scope made local (v=x eval 'local v') is
// such a local too; an assignment before the call (v=x f) not made
// local is not: unsetting it reveals the global.
func (sh *shell) localUnsetHides(sc *scope, v *variable) bool {
	if !(sc.kind == scopeFunc || sc.kind == scopeTemp) || v.tempEnv || len(sh.scopes) == 0 {
		return false
	}
	return sh.scopes[len(sh.scopes)-1] == sc && !sh.shopt.localvarUnset
}

// unsetElem unsets one element of an array.
func (sh *shell) unsetElem(name, sub string) error {
	name, v, sc := sh.resolve(name)
	if v == nil {
		return nil
	}
	if v.attrs&aReadonly != 0 {
		return &assignError{name + ": cannot unset: readonly variable"}
	}
	w := sh.writableVar(sc, name)
	switch {
	case w.assc != nil:
		w.assc.unset(sub)
	case w.arr != nil:
		idx, err := sh.arithString(sub)
		if err != nil {
			return err
		}
		if idx < 0 {
			idx += w.arr.maxIndex() + 1
			if idx < 0 {
				return &assignError{name + "[" + sub + "]: bad array subscript"}
			}
		}
		w.arr.unset(idx)
	default:
		idx, err := sh.arithString(sub)
		if err != nil {
			return err
		}
		if idx == 0 || idx == -1 {
			w.set = false
			w.str = ""
		}
	}
	sh.reaccount(w)
	return nil
}

// elemByRef reads "name[sub]" (the target of a nameref).
func (sh *shell) elemByRef(ref string) (string, bool) {
	base, sub, _ := strings.Cut(strings.TrimSuffix(ref, "]"), "[")
	v := sh.getVar(base)
	if v == nil {
		return "", false
	}
	return sh.element(v, sh.expandSubscript(sub))
}

// element reads element sub of v (a key of an associative array, an index
// expression of an indexed one, 0 of a scalar).
func (sh *shell) element(v *variable, sub string) (string, bool) {
	switch {
	case v.assc != nil:
		return v.assc.get(sub)
	case v.arr != nil:
		idx, err := sh.arithString(sub)
		if err != nil {
			sh.fatal(err)
		}
		if idx < 0 {
			idx += v.arr.maxIndex() + 1
			if idx < 0 {
				return "", false
			}
		}
		return v.arr.get(idx)
	}
	idx, err := sh.arithString(sub)
	if err != nil {
		sh.fatal(err)
	}
	if (idx == 0 || idx == -1) && v.set {
		return v.str, true
	}
	return "", false
}

// exported returns the exported variables as "name=value", sorted by
// name; extra (temporary assignments) come first in the scope order.
func (sh *shell) exported() []string {
	if sh.envOverride != nil {
		// env -i, -u: the command's environment is env's (no PATH
		// when env -i gives none, although the lookup still uses it)
		return slices.Sorted(slices.Values(sh.envOverride))
	}
	seen := map[string]bool{}
	var out []string
	for i := len(sh.scopes) - 1; i >= 0; i-- {
		for name, v := range sh.scopes[i].vm.m {
			if seen[name] {
				continue
			}
			seen[name] = true
			if v.attrs&aExport == 0 || !v.set || v.isArray() {
				continue
			}
			val := v.str
			if v.attrs&aDynamic != 0 {
				if d := sh.dynamic(name, v); d != nil {
					val = d.str
				}
			}
			out = append(out, name+"="+val)
		}
	}
	slices.Sort(out)
	return out
}

// allNames returns the names of all visible variables, sorted.
func (sh *shell) allNames() []string {
	seen := map[string]bool{}
	for i := len(sh.scopes) - 1; i >= 0; i-- {
		for name := range sh.scopes[i].vm.m {
			seen[name] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// varChanged reacts to assignments of variables the shell itself reads.
func (sh *shell) varChanged(name string) {
	switch name {
	case "OPTIND":
		sh.getoptsPos = 0
	case "LC_ALL", "LC_CTYPE", "LANG":
		sh.localeChanged(name)
	case "HISTSIZE", "HISTFILESIZE":
		sh.histSizeChanged(name)
	}
}

// validName reports whether s is a valid variable name.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}
