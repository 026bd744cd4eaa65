package schema

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
)

// ExprKind is the form of an expression.
type ExprKind uint8

// Expression forms.
const (
	ExprInvalid ExprKind = iota
	ExprRef              // {"ref": "@var:x"}
	ExprConst            // {"nat": 3}, {"text": "a"}, {"null": {}}, ...
	ExprOp               // {"op": "eq", "args": [...]}
	ExprRecord           // {"record": {"f": Expr}}
	ExprList             // {"list": [Expr]}
	ExprSet              // {"set": [Expr]}
	ExprMap              // {"map": [{"key": Expr, "value": Expr}]}
	ExprVariant          // {"variant": {"tag": T, "value": Expr}}
)

// Ops are the expression operators of AIR v1 (all take their arguments
// evaluated, left to right).
var Ops = []string{
	"len", "get", "has", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not",
	"concat", "hash", "add", "sub", "mul", "div", "mod", "starts_with", "ends_with", "contains",
}

var opArity = map[string][2]int{ // min, max (-1 = unbounded)
	"len": {1, 1}, "get": {2, 2}, "has": {2, 2}, "eq": {2, 2}, "ne": {2, 2},
	"lt": {2, 2}, "le": {2, 2}, "gt": {2, 2}, "ge": {2, 2}, "and": {2, -1}, "or": {2, -1},
	"not": {1, 1}, "concat": {2, -1}, "hash": {1, 1}, "add": {2, 2}, "sub": {2, 2},
	"mul": {2, 2}, "div": {2, 2}, "mod": {2, 2}, "starts_with": {2, 2}, "ends_with": {2, 2},
	"contains": {2, 2},
}

// RefRoot is what an expression reference starts from.
type RefRoot uint8

// Reference roots.
const (
	RefPlanInput RefRoot = iota + 1 // @plan.input[.path]
	RefVar                          // @var:name[.path]
	RefStep                         // @step:id[.path]
	RefEvent                        // @event[.path] (await_event.where only)
)

// Expr is a parsed AIR expression.
type Expr struct {
	Kind ExprKind
	Ptr  string // JSON pointer of the expression in its file

	// ExprRef
	Root RefRoot
	Name string   // variable name or step id, as written (may contain dots: see Split)
	Path []string // for @plan.input and @event; for @var/@step see Split
	Text string   // the reference as written, e.g. "@var:x.y"

	// ExprConst: the constant and the tagged form it was written in.
	Const     Value
	ConstKind TypeKind // KindInvalid for {"null":{}}

	// ExprOp
	Op   string
	Args []*Expr

	// ExprRecord (sorted by name), ExprVariant (Tag, Value)
	Fields []ExprField
	Tag    string
	Value  *Expr

	// ExprList, ExprSet
	Elems []*Expr
	// ExprMap
	Entries []ExprEntry
}

// ExprField is one field of a record constructor.
type ExprField struct {
	Name string
	Expr *Expr
}

// ExprEntry is one entry of a map constructor.
type ExprEntry struct {
	Key, Value *Expr
}

// Split resolves the name of a @var or @step reference against the names
// that exist: "@var:a.b.c" is the variable "a.b" with path [c] when "a.b"
// is a variable, else "a" with path [b c]. The longest existing prefix
// wins. ok is false if no prefix names anything.
func (e *Expr) Split(exists func(name string) bool) (name string, path []string, ok bool) {
	parts := strings.Split(e.Name, ".")
	for i := len(parts); i >= 1; i-- {
		n := strings.Join(parts[:i], ".")
		if exists(n) {
			return n, parts[i:], true
		}
	}
	return "", nil, false
}

// Walk calls fn for e and every expression inside it, depth first.
func (e *Expr) Walk(fn func(*Expr)) {
	if e == nil {
		return
	}
	fn(e)
	for _, a := range e.Args {
		a.Walk(fn)
	}
	for _, f := range e.Fields {
		f.Expr.Walk(fn)
	}
	e.Value.Walk(fn)
	for _, x := range e.Elems {
		x.Walk(fn)
	}
	for _, en := range e.Entries {
		en.Key.Walk(fn)
		en.Value.Walk(fn)
	}
}

// IsConst reports whether e has no references and no operators, so its
// value is known at load time.
func (e *Expr) IsConst() bool {
	c := true
	e.Walk(func(x *Expr) {
		if x.Kind == ExprRef || x.Kind == ExprOp {
			c = false
		}
	})
	return c
}

// ConstValue returns the value of a constant expression (see IsConst) in
// the normalizer's input form: records as text-keyed maps, variants in the
// canonical {"$tag", "$value"} form.
func (e *Expr) ConstValue() (Value, bool) {
	switch e.Kind {
	case ExprConst:
		return e.Const, true
	case ExprRecord:
		m := &Map{}
		for _, f := range e.Fields {
			v, ok := f.Expr.ConstValue()
			if !ok {
				return nil, false
			}
			m.set(f.Name, v)
		}
		return m, true
	case ExprList, ExprSet:
		out := make([]Value, len(e.Elems))
		for i, x := range e.Elems {
			v, ok := x.ConstValue()
			if !ok {
				return nil, false
			}
			out[i] = v
		}
		return out, true
	case ExprMap:
		var pairs []Value
		for _, en := range e.Entries {
			k, ok1 := en.Key.ConstValue()
			v, ok2 := en.Value.ConstValue()
			if !ok1 || !ok2 {
				return nil, false
			}
			pairs = append(pairs, []Value{k, v})
		}
		return pairs, true
	case ExprVariant:
		if e.Value == nil {
			return Variant(e.Tag, nil), true
		}
		v, ok := e.Value.ConstValue()
		if !ok {
			return nil, false
		}
		return Record(TagKey, e.Tag, ValueKey, v), true
	}
	return nil, false
}

// constForms maps the tagged constant forms to the kind they denote.
var constForms = map[string]TypeKind{
	"null": KindInvalid, "bool": KindBool, "int": KindInt, "nat": KindNat, "dec128": KindDec128,
	"text": KindText, "bytes_b64": KindBytes, "time_ns": KindTime, "duration_ns": KindDuration,
	"hash": KindHash, "uuid": KindUUID,
}

// exprShape reports whether n has the shape of an expression (one of the
// forms above), without checking its insides. ExprOrValue slots use it to
// decide between an expression and a sugar literal.
func exprShape(n *jnode) bool {
	if n.kind != jObject {
		return false
	}
	ks := n.keys()
	switch len(ks) {
	case 1:
		k := ks[0]
		if _, ok := constForms[k]; ok {
			return true
		}
		switch k {
		case "ref":
			return n.get("ref").kind == jString && strings.HasPrefix(n.get("ref").str, "@")
		case "record", "variant":
			return n.get(k).kind == jObject
		case "list", "set", "map":
			return n.get(k).kind == jArray
		}
	case 2:
		return n.get("op") != nil && n.get("args") != nil
	}
	return false
}

// parseExpr parses an expression. Problems are added to errs; the result
// is nil if the expression is unusable.
func parseExpr(n *jnode, errs *problems) *Expr {
	if n == nil {
		return nil
	}
	if n.kind != jObject {
		errs.add(n.ptr, "expression must be an object ({\"ref\":...}, {\"op\":...,\"args\":[...]}, a tagged constant like {\"text\":\"a\"}, or a record/list/set/map/variant constructor), got %s", n.kind)
		return nil
	}
	ks := n.keys()
	if len(ks) == 2 && n.get("op") != nil && n.get("args") != nil {
		return parseOp(n, errs)
	}
	if len(ks) != 1 {
		errs.add(n.ptr, "expression has keys %v; want exactly one form (ref, op+args, a constant, record, list, set, map, variant)", ks)
		return nil
	}
	k := ks[0]
	body := n.get(k)
	e := &Expr{Ptr: n.ptr}
	if kind, ok := constForms[k]; ok {
		v, err := parseConst(kind, body)
		if err != nil {
			errs.add(body.ptr, "%v", err)
			return nil
		}
		e.Kind, e.Const, e.ConstKind = ExprConst, v, kind
		return e
	}
	switch k {
	case "ref":
		if body.kind != jString {
			errs.add(body.ptr, "ref must be text like \"@var:x\"")
			return nil
		}
		if err := parseRef(e, body.str); err != nil {
			errs.add(body.ptr, "%v", err)
			return nil
		}
		return e
	case "record":
		if body.kind != jObject {
			errs.add(body.ptr, "record constructor takes an object of field expressions")
			return nil
		}
		e.Kind = ExprRecord
		for _, f := range body.fields() {
			fe := parseExpr(f.val, errs)
			if fe == nil {
				return nil
			}
			e.Fields = append(e.Fields, ExprField{Name: f.key, Expr: fe})
		}
		sort.Slice(e.Fields, func(i, j int) bool { return e.Fields[i].Name < e.Fields[j].Name })
		return e
	case "list", "set":
		if body.kind != jArray {
			errs.add(body.ptr, "%s constructor takes an array of expressions", k)
			return nil
		}
		e.Kind = ExprList
		if k == "set" {
			e.Kind = ExprSet
		}
		for _, x := range body.arr {
			xe := parseExpr(x, errs)
			if xe == nil {
				return nil
			}
			e.Elems = append(e.Elems, xe)
		}
		return e
	case "map":
		if body.kind != jArray {
			errs.add(body.ptr, "map constructor takes an array of {\"key\": Expr, \"value\": Expr}")
			return nil
		}
		e.Kind = ExprMap
		for _, x := range body.arr {
			kn, vn := x.get("key"), x.get("value")
			if x.kind != jObject || kn == nil || vn == nil || len(x.keys()) != 2 {
				errs.add(x.ptr, "map entry must be {\"key\": Expr, \"value\": Expr}")
				return nil
			}
			ke, ve := parseExpr(kn, errs), parseExpr(vn, errs)
			if ke == nil || ve == nil {
				return nil
			}
			e.Entries = append(e.Entries, ExprEntry{Key: ke, Value: ve})
		}
		return e
	case "variant":
		if body.kind != jObject || body.get("tag") == nil || body.get("tag").kind != jString {
			errs.add(body.ptr, "variant constructor takes {\"tag\": \"T\", \"value\": Expr}")
			return nil
		}
		for _, bk := range body.keys() {
			if bk != "tag" && bk != "value" {
				errs.add(childPtr(body.ptr, bk), "unknown member %q of a variant constructor (want tag, value)", bk)
				return nil
			}
		}
		e.Kind, e.Tag = ExprVariant, body.get("tag").str
		if vn := body.get("value"); vn != nil {
			if e.Value = parseExpr(vn, errs); e.Value == nil {
				return nil
			}
		}
		return e
	}
	errs.add(childPtr(n.ptr, k), "unknown expression form %q", k)
	return nil
}

func parseOp(n *jnode, errs *problems) *Expr {
	opn, argsn := n.get("op"), n.get("args")
	if opn.kind != jString {
		errs.add(opn.ptr, "op must be text")
		return nil
	}
	ar, ok := opArity[opn.str]
	if !ok {
		errs.add(opn.ptr, "unknown op %q (want one of %s)", opn.str, strings.Join(Ops, ", "))
		return nil
	}
	if argsn.kind != jArray {
		errs.add(argsn.ptr, "args must be an array of expressions")
		return nil
	}
	if len(argsn.arr) < ar[0] || ar[1] >= 0 && len(argsn.arr) > ar[1] {
		want := fmt.Sprint(ar[0])
		if ar[1] < 0 {
			want = fmt.Sprintf("at least %d", ar[0])
		}
		errs.add(argsn.ptr, "op %q takes %s arguments, got %d", opn.str, want, len(argsn.arr))
		return nil
	}
	e := &Expr{Kind: ExprOp, Op: opn.str, Ptr: n.ptr}
	for _, a := range argsn.arr {
		ae := parseExpr(a, errs)
		if ae == nil {
			return nil
		}
		e.Args = append(e.Args, ae)
	}
	return e
}

func parseRef(e *Expr, s string) error {
	e.Kind, e.Text = ExprRef, s
	bad := func(why string) error {
		return fmt.Errorf("reference %q %s; want @plan.input[.path], @var:name[.path], @step:id[.path] or @event[.path]", clipText(s), why)
	}
	checkPath := func(parts []string) error {
		for _, p := range parts {
			if p == "" {
				return bad("has an empty path segment")
			}
		}
		return nil
	}
	switch {
	case s == "@plan.input" || strings.HasPrefix(s, "@plan.input."):
		e.Root = RefPlanInput
		if s != "@plan.input" {
			e.Path = strings.Split(strings.TrimPrefix(s, "@plan.input."), ".")
		}
		return checkPath(e.Path)
	case s == "@event" || strings.HasPrefix(s, "@event."):
		e.Root = RefEvent
		if s != "@event" {
			e.Path = strings.Split(strings.TrimPrefix(s, "@event."), ".")
		}
		return checkPath(e.Path)
	case strings.HasPrefix(s, "@var:"), strings.HasPrefix(s, "@step:"):
		e.Root = RefVar
		name := strings.TrimPrefix(s, "@var:")
		if strings.HasPrefix(s, "@step:") {
			e.Root = RefStep
			name = strings.TrimPrefix(s, "@step:")
		}
		if name == "" {
			return bad("names nothing")
		}
		e.Name = name
		return checkPath(strings.Split(name, "."))
	}
	return bad("has an unknown root")
}

func parseConst(kind TypeKind, body *jnode) (Value, error) {
	switch kind {
	case KindInvalid:
		if body.kind != jObject || len(body.fields()) != 0 {
			return nil, fmt.Errorf("null constant is written {\"null\":{}}")
		}
		return nil, nil
	case KindBool:
		if body.kind != jBool {
			return nil, fmt.Errorf("bool constant wants true or false, got %s", body.kind)
		}
		return body.b, nil
	case KindText:
		if body.kind != jString {
			return nil, fmt.Errorf("text constant wants a string, got %s", body.kind)
		}
		return body.str, nil
	case KindBytes:
		if body.kind != jString {
			return nil, fmt.Errorf("bytes_b64 constant wants a base64 string, got %s", body.kind)
		}
		b, err := base64.StdEncoding.DecodeString(body.str)
		if err != nil {
			return nil, fmt.Errorf("bytes_b64 constant is not standard base64: %v", err)
		}
		return b, nil
	}
	// Numbers and the text-encoded kinds go through the normalizer.
	n := normalizer{json: true}
	v, err := n.sugar(&Type{Kind: kind}, jsonInput(body), nil, 0)
	if err != nil {
		var pe *PathError
		if ok := asPathError(err, &pe); ok {
			return nil, fmt.Errorf("%s constant: %s", kind, pe.Msg)
		}
		return nil, err
	}
	return v, nil
}

func asPathError(err error, pe **PathError) bool {
	p, ok := err.(*PathError)
	if ok {
		*pe = p
	}
	return ok
}

// node returns the expression as an AIR JSON structure, as a Value, for
// hashing defs.
func (e *Expr) node() Value {
	switch e.Kind {
	case ExprRef:
		return Record("ref", e.Text)
	case ExprConst:
		form := "null"
		for k, kind := range constForms {
			if kind == e.ConstKind {
				form = k
			}
		}
		if e.ConstKind == KindInvalid {
			return Record("null", &Map{})
		}
		return Record(form, e.Const)
	case ExprOp:
		args := make([]Value, len(e.Args))
		for i, a := range e.Args {
			args[i] = a.node()
		}
		return Record("op", e.Op, "args", args)
	case ExprRecord:
		m := &Map{}
		for _, f := range e.Fields {
			m.set(f.Name, f.Expr.node())
		}
		return Record("record", m)
	case ExprList, ExprSet:
		out := make([]Value, len(e.Elems))
		for i, x := range e.Elems {
			out[i] = x.node()
		}
		if e.Kind == ExprSet {
			return Record("set", out)
		}
		return Record("list", out)
	case ExprMap:
		out := make([]Value, len(e.Entries))
		for i, en := range e.Entries {
			out[i] = Record("key", en.Key.node(), "value", en.Value.node())
		}
		return Record("map", out)
	case ExprVariant:
		if e.Value == nil {
			return Record("variant", Record("tag", e.Tag))
		}
		return Record("variant", Record("tag", e.Tag, "value", e.Value.node()))
	}
	return nil
}
