package plans

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/schema"
)

// Scope is what an expression can refer to.
type Scope struct {
	// Input is the plan's input (@plan.input).
	Input schema.Value
	// Var returns a variable's value (@var:name).
	Var func(name string) (schema.Value, bool)
	// Step returns a step's value (@step:id).
	Step func(id string) (schema.Value, bool)
	// Event is the event being matched (@event), inside await_event.where.
	Event    schema.Value
	HasEvent bool
}

// EvalError is an expression that could not be evaluated: a missing
// field, a wrong type, a division by zero. Ptr is the JSON pointer of the
// failing expression in its AIR file.
type EvalError struct {
	Ptr string
	Msg string
}

func (e *EvalError) Error() string {
	if e.Ptr == "" {
		return e.Msg
	}
	return e.Ptr + ": " + e.Msg
}

func evalErr(x *schema.Expr, format string, args ...any) error {
	return &EvalError{Ptr: x.Ptr, Msg: fmt.Sprintf(format, args...)}
}

// Eval evaluates an expression. It is deterministic: the result depends
// only on the expression and the scope.
func Eval(x *schema.Expr, sc *Scope) (schema.Value, error) {
	return eval(x, sc, 0)
}

const maxEvalDepth = 256

func eval(x *schema.Expr, sc *Scope, depth int) (schema.Value, error) {
	if depth > maxEvalDepth {
		return nil, evalErr(x, "expression nested too deeply")
	}
	switch x.Kind {
	case schema.ExprConst:
		return x.Const, nil
	case schema.ExprRef:
		return evalRef(x, sc)
	case schema.ExprRecord:
		es := make([]schema.MapEntry, len(x.Fields))
		for i, f := range x.Fields {
			v, err := eval(f.Expr, sc, depth+1)
			if err != nil {
				return nil, err
			}
			es[i] = schema.MapEntry{Key: f.Name, Value: v}
		}
		return schema.NewMap(es...), nil // a later field of the same name wins, as With would
	case schema.ExprList, schema.ExprSet:
		out := make([]schema.Value, len(x.Elems))
		for i, e := range x.Elems {
			v, err := eval(e, sc, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		if x.Kind == schema.ExprSet {
			s, err := schema.SetOf(out)
			if err != nil {
				return nil, evalErr(x, "%v", err)
			}
			return s, nil
		}
		return out, nil
	case schema.ExprMap:
		var es []schema.MapEntry
		for _, en := range x.Entries {
			k, err := eval(en.Key, sc, depth+1)
			if err != nil {
				return nil, err
			}
			switch k.(type) {
			case string, uint64, int64:
			default:
				return nil, evalErr(en.Key, "map key must be text or an integer, got %s", kindOf(k))
			}
			v, err := eval(en.Value, sc, depth+1)
			if err != nil {
				return nil, err
			}
			es = append(es, schema.MapEntry{Key: k, Value: v})
		}
		m := schema.NewMap(es...)
		if m.Len() != len(es) {
			return nil, evalErr(x, "map constructor has duplicate keys")
		}
		return m, nil
	case schema.ExprVariant:
		if x.Value == nil {
			return schema.Variant(x.Tag, nil), nil
		}
		v, err := eval(x.Value, sc, depth+1)
		if err != nil {
			return nil, err
		}
		return schema.Record(schema.TagKey, x.Tag, schema.ValueKey, v), nil
	case schema.ExprOp:
		args := make([]schema.Value, len(x.Args))
		for i, a := range x.Args {
			v, err := eval(a, sc, depth+1)
			if err != nil {
				return nil, err
			}
			args[i] = v
		}
		return evalOp(x, args)
	}
	return nil, evalErr(x, "invalid expression")
}

func evalRef(x *schema.Expr, sc *Scope) (schema.Value, error) {
	var base schema.Value
	var path []string
	switch x.Root {
	case schema.RefPlanInput:
		base, path = sc.Input, x.Path
	case schema.RefEvent:
		if !sc.HasEvent {
			return nil, evalErr(x, "%s: no event here (only in await_event.where)", x.Text)
		}
		base, path = sc.Event, x.Path
	case schema.RefVar, schema.RefStep:
		lookup, what := sc.Var, "variable"
		if x.Root == schema.RefStep {
			lookup, what = sc.Step, "step"
		}
		if lookup == nil {
			return nil, evalErr(x, "%s: no %ss in this scope", x.Text, what)
		}
		name, p, ok := x.Split(func(n string) bool {
			_, ok := lookup(n)
			return ok
		})
		if !ok {
			if x.Root == schema.RefStep {
				return nil, evalErr(x, "%s: step %q has not run (it was skipped or is not done)", x.Text, x.Name)
			}
			return nil, evalErr(x, "%s: variable %q is not set (the step that binds it has not run)", x.Text, x.Name)
		}
		// Split found the longest existing prefix.
		base, _ = lookup(name)
		path = p
	default:
		return nil, evalErr(x, "invalid reference %q", x.Text)
	}
	v := base
	for i, seg := range path {
		next, err := field(v, seg)
		if err != nil {
			return nil, evalErr(x, "%s: at %q: %v", x.Text, strings.Join(path[:i+1], "."), err)
		}
		v = next
	}
	return v, nil
}

// field reads a record field, map key or list index named by a path
// segment.
func field(v schema.Value, seg string) (schema.Value, error) {
	switch c := v.(type) {
	case *schema.Map:
		if fv, ok := c.Get(seg); ok {
			return fv, nil
		}
		if n, err := strconv.ParseUint(seg, 10, 64); err == nil {
			if fv, ok := c.Get(n); ok {
				return fv, nil
			}
		}
		return nil, fmt.Errorf("no field %q (has %s)", seg, keyList(c))
	case []schema.Value:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(c) {
			return nil, fmt.Errorf("no element %q in a list of %d", seg, len(c))
		}
		return c[i], nil
	case nil:
		return nil, fmt.Errorf("no field %q in null", seg)
	}
	return nil, fmt.Errorf("no field %q in %s", seg, kindOf(v))
}

func keyList(m *schema.Map) string {
	var ks []string
	for _, e := range m.Entries() {
		ks = append(ks, schema.String(e.Key))
		if len(ks) == 8 {
			ks = append(ks, "…")
			break
		}
	}
	if len(ks) == 0 {
		return "no fields"
	}
	return strings.Join(ks, ", ")
}

func kindOf(v schema.Value) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case uint64, int64:
		return "an integer"
	case string:
		return "text"
	case []byte:
		return "bytes"
	case []schema.Value:
		return "a list"
	case *schema.Map:
		if _, _, ok := v.VariantTag(); ok {
			return "a variant"
		}
		return "a record or map"
	}
	return fmt.Sprintf("%T", v)
}

func evalOp(x *schema.Expr, a []schema.Value) (schema.Value, error) {
	switch x.Op {
	case "len":
		switch v := a[0].(type) {
		case string:
			return uint64(utf8.RuneCountInString(v)), nil
		case []byte:
			return uint64(len(v)), nil
		case []schema.Value:
			return uint64(len(v)), nil
		case *schema.Map:
			return uint64(v.Len()), nil
		}
		return nil, evalErr(x, "len of %s", kindOf(a[0]))
	case "get":
		return opGet(x, a[0], a[1])
	case "has":
		switch c := a[0].(type) {
		case *schema.Map:
			return c.Has(a[1]), nil
		case []schema.Value:
			i, ok := schema.AsInt64(a[1])
			return ok && i >= 0 && i < int64(len(c)), nil
		case nil:
			return false, nil
		}
		return nil, evalErr(x, "has on %s", kindOf(a[0]))
	case "eq":
		return schema.Equal(a[0], a[1]), nil
	case "ne":
		return !schema.Equal(a[0], a[1]), nil
	case "lt", "le", "gt", "ge":
		c, err := compare(a[0], a[1])
		if err != nil {
			return nil, evalErr(x, "%s: %v", x.Op, err)
		}
		switch x.Op {
		case "lt":
			return c < 0, nil
		case "le":
			return c <= 0, nil
		case "gt":
			return c > 0, nil
		}
		return c >= 0, nil
	case "and", "or":
		res := x.Op == "and"
		for i, v := range a {
			b, ok := v.(bool)
			if !ok {
				return nil, evalErr(x.Args[i], "%s wants bools, got %s", x.Op, kindOf(v))
			}
			if x.Op == "and" {
				res = res && b
			} else {
				res = res || b
			}
		}
		return res, nil
	case "not":
		b, ok := a[0].(bool)
		if !ok {
			return nil, evalErr(x.Args[0], "not wants a bool, got %s", kindOf(a[0]))
		}
		return !b, nil
	case "concat":
		switch a[0].(type) {
		case string:
			var b strings.Builder
			for i, v := range a {
				s, ok := v.(string)
				if !ok {
					return nil, evalErr(x.Args[i], "concat of text wants text, got %s", kindOf(v))
				}
				b.WriteString(s)
			}
			return b.String(), nil
		case []byte:
			var b []byte
			for i, v := range a {
				s, ok := v.([]byte)
				if !ok {
					return nil, evalErr(x.Args[i], "concat of bytes wants bytes, got %s", kindOf(v))
				}
				b = append(b, s...)
			}
			return b, nil
		case []schema.Value:
			var out []schema.Value
			for i, v := range a {
				s, ok := v.([]schema.Value)
				if !ok {
					return nil, evalErr(x.Args[i], "concat of lists wants lists, got %s", kindOf(v))
				}
				out = append(out, s...)
			}
			return out, nil
		}
		return nil, evalErr(x, "concat of %s (want text, bytes or lists)", kindOf(a[0]))
	case "hash":
		r, err := schema.Ref(a[0])
		if err != nil {
			return nil, evalErr(x, "hash: %v", err)
		}
		return r.String(), nil
	case "add", "sub", "mul", "div", "mod":
		return arith(x, a[0], a[1])
	case "starts_with", "ends_with":
		s, ok1 := a[0].(string)
		p, ok2 := a[1].(string)
		if !ok1 || !ok2 {
			return nil, evalErr(x, "%s wants two texts, got %s and %s", x.Op, kindOf(a[0]), kindOf(a[1]))
		}
		if x.Op == "starts_with" {
			return strings.HasPrefix(s, p), nil
		}
		return strings.HasSuffix(s, p), nil
	case "contains":
		switch c := a[0].(type) {
		case string:
			s, ok := a[1].(string)
			if !ok {
				return nil, evalErr(x, "contains on text wants text, got %s", kindOf(a[1]))
			}
			return strings.Contains(c, s), nil
		case []byte:
			s, ok := a[1].([]byte)
			if !ok {
				return nil, evalErr(x, "contains on bytes wants bytes, got %s", kindOf(a[1]))
			}
			return bytes.Contains(c, s), nil
		case []schema.Value:
			for _, e := range c {
				if schema.Equal(e, a[1]) {
					return true, nil
				}
			}
			return false, nil
		case *schema.Map:
			return c.Has(a[1]), nil
		}
		return nil, evalErr(x, "contains on %s", kindOf(a[0]))
	}
	return nil, evalErr(x, "unknown op %q", x.Op)
}

func opGet(x *schema.Expr, c, k schema.Value) (schema.Value, error) {
	switch c := c.(type) {
	case *schema.Map:
		if v, ok := c.Get(k); ok {
			return v, nil
		}
		return nil, evalErr(x, "get: no field %s (has %s)", schema.String(k), keyList(c))
	case []schema.Value:
		i, ok := schema.AsInt64(k)
		if !ok || i < 0 || i >= int64(len(c)) {
			return nil, evalErr(x, "get: index %s out of range for a list of %d", schema.String(k), len(c))
		}
		return c[i], nil
	}
	return nil, evalErr(x, "get on %s (want a record, map or list)", kindOf(c))
}

// compare orders two integers (int, nat, time, duration) or two texts.
func compare(a, b schema.Value) (int, error) {
	if sa, ok := a.(string); ok {
		sb, ok := b.(string)
		if !ok {
			return 0, fmt.Errorf("cannot compare text with %s", kindOf(b))
		}
		return strings.Compare(sa, sb), nil
	}
	ia, oka := toBig(a)
	ib, okb := toBig(b)
	if !oka || !okb {
		return 0, fmt.Errorf("cannot compare %s with %s", kindOf(a), kindOf(b))
	}
	return ia.Cmp(ib), nil
}

func toBig(v schema.Value) (*big.Int, bool) {
	switch v := v.(type) {
	case uint64:
		return new(big.Int).SetUint64(v), true
	case int64:
		return big.NewInt(v), true
	}
	return nil, false
}

var errOverflow = errors.New("integer overflow")

// arith follows AIR: nat ∘ nat stays nat (a negative difference becomes
// an int), anything with an int is a checked int; dividing by zero and
// results outside int/nat range are errors.
func arith(x *schema.Expr, a, b schema.Value) (schema.Value, error) {
	ia, oka := toBig(a)
	ib, okb := toBig(b)
	if !oka || !okb {
		return nil, evalErr(x, "%s wants integers, got %s and %s", x.Op, kindOf(a), kindOf(b))
	}
	r := new(big.Int)
	switch x.Op {
	case "add":
		r.Add(ia, ib)
	case "sub":
		r.Sub(ia, ib)
	case "mul":
		r.Mul(ia, ib)
	case "div", "mod":
		if ib.Sign() == 0 {
			return nil, evalErr(x, "%s by zero", x.Op)
		}
		// Truncated division, like Go and Rust.
		q, m := new(big.Int).QuoRem(ia, ib, new(big.Int))
		if x.Op == "div" {
			r = q
		} else {
			r = m
		}
	}
	if r.Sign() >= 0 {
		if !r.IsUint64() {
			return nil, evalErr(x, "%s: %v", x.Op, errOverflow)
		}
		return r.Uint64(), nil
	}
	if !r.IsInt64() {
		return nil, evalErr(x, "%s: %v", x.Op, errOverflow)
	}
	return r.Int64(), nil
}
