package vcr

import (
	"encoding/base64"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// The values a cassette holds, as PyYAML (which wrote it) reads them:
// *object (a mapping, its keys in the file's order), []any, string,
// number (a JSON number's text), bool, []byte (!!binary) and nil.
type object struct {
	keys   []string
	values map[string]any
}

func (o *object) get(key string) (any, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.values[key]
	return v, ok
}

// number is a number as JSON text, written as Python's json.dumps
// writes it: an int in decimal, a float as Python's repr.
type number string

// maxDepth bounds the nesting of a cassette's values (and of a JSON
// body's): deeper is refused rather than recursed into.
const maxDepth = 500

// parseYAML reads a cassette's one YAML document.
func parseYAML(b []byte) (any, error) {
	f, err := parser.ParseBytes(b, 0)
	if err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	if len(f.Docs) != 1 {
		return nil, fmt.Errorf("%d YAML documents; a cassette is one", len(f.Docs))
	}
	r := &reader{anchors: map[string]any{}, sizes: map[string]int{}}
	return r.value(f.Docs[0].Body, 0)
}

// maxAliased bounds the values aliases repeat, counted once for each use
// (a few aliases of aliases could otherwise stand for billions).
const maxAliased = 1 << 20

type reader struct {
	anchors map[string]any
	sizes   map[string]int // the values under each anchor
	aliased int            // the values aliases have repeated so far
}

// size counts the values in v, stopping past limit.
func size(v any, limit int) int {
	n := 1
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if n > limit {
				break
			}
			n += size(e, limit-n)
		}
	case *object:
		for _, k := range x.keys {
			if n > limit {
				break
			}
			n += size(x.values[k], limit-n)
		}
	}
	return n
}

func (r *reader) value(n ast.Node, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("values nested more than %d deep", maxDepth)
	}
	if n == nil {
		return nil, nil
	}
	switch n := n.(type) {
	case *ast.DocumentNode:
		return r.value(n.Body, depth+1)
	case *ast.MappingNode:
		o := &object{values: map[string]any{}}
		for _, kv := range n.Values {
			if err := r.entry(o, kv, depth); err != nil {
				return nil, err
			}
		}
		return o, nil
	case *ast.MappingValueNode:
		o := &object{values: map[string]any{}}
		if err := r.entry(o, n, depth); err != nil {
			return nil, err
		}
		return o, nil
	case *ast.SequenceNode:
		out := make([]any, 0, len(n.Values))
		for _, e := range n.Values {
			v, err := r.value(e, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case *ast.AnchorNode:
		v, err := r.value(n.Value, depth+1)
		if err != nil {
			return nil, err
		}
		if n.Name != nil {
			name := n.Name.GetToken().Value
			r.anchors[name] = v
			r.sizes[name] = size(v, maxAliased)
		}
		return v, nil
	case *ast.AliasNode:
		name := ""
		if n.Value != nil {
			name = n.Value.GetToken().Value
		}
		v, ok := r.anchors[name]
		if !ok {
			return nil, fmt.Errorf("line %d: alias *%s names no anchor before it", line(n), name)
		}
		if r.aliased += r.sizes[name]; r.aliased > maxAliased {
			return nil, fmt.Errorf("line %d: aliases repeat more than %d values", line(n), maxAliased)
		}
		return v, nil
	case *ast.TagNode:
		return r.tagged(n, depth)
	case *ast.LiteralNode:
		if n.Value == nil {
			return "", nil
		}
		return n.Value.Value, nil
	case *ast.CommentNode, *ast.CommentGroupNode:
		return nil, nil
	case ast.ScalarNode:
		return scalar(n)
	}
	return nil, fmt.Errorf("line %d: a YAML %s, which a cassette does not hold", line(n), n.Type())
}

func (r *reader) entry(o *object, kv *ast.MappingValueNode, depth int) error {
	kn, err := r.value(kv.Key, depth+1)
	if err != nil {
		return err
	}
	var key string
	switch k := kn.(type) {
	case string:
		key = k
	case number:
		key = string(k)
	default:
		return fmt.Errorf("line %d: a mapping key that is not a string", line(kv))
	}
	if key == "<<" {
		return fmt.Errorf("line %d: a merge key (<<), which a cassette does not hold", line(kv))
	}
	v, err := r.value(kv.Value, depth+1)
	if err != nil {
		return err
	}
	if _, dup := o.values[key]; dup {
		return fmt.Errorf("line %d: the key %q twice in one mapping", line(kv), key)
	}
	o.keys = append(o.keys, key)
	o.values[key] = v
	return nil
}

func (r *reader) tagged(n *ast.TagNode, depth int) (any, error) {
	tag := n.Start.Value
	switch tag {
	case "!!binary", "tag:yaml.org,2002:binary":
		s, ok := n.Value.(ast.ScalarNode)
		if !ok {
			return nil, fmt.Errorf("line %d: !!binary of a non-scalar", line(n))
		}
		text := fmt.Sprint(s.GetValue())
		if l, ok := n.Value.(*ast.LiteralNode); ok && l.Value != nil {
			text = l.Value.Value
		}
		text = strings.Join(strings.Fields(text), "")
		b, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			return nil, fmt.Errorf("line %d: !!binary: %w", line(n), err)
		}
		return b, nil
	case "!!str", "tag:yaml.org,2002:str":
		v, err := r.value(n.Value, depth+1)
		if err != nil {
			return nil, err
		}
		switch v := v.(type) {
		case string:
			return v, nil
		case number:
			return string(v), nil
		}
		return n.Value.GetToken().Value, nil
	case "!!null", "!!bool", "!!int", "!!float", "!!map", "!!seq":
		return r.value(n.Value, depth+1)
	}
	return nil, fmt.Errorf("line %d: the tag %s, which a cassette does not hold", line(n), tag)
}

func line(n ast.Node) int {
	if t := n.GetToken(); t != nil && t.Position != nil {
		return t.Position.Line
	}
	return 0
}

// scalar reads a scalar: a quoted one is a string; a plain one is what
// PyYAML's resolver (YAML 1.1) makes of its text, not what the YAML 1.2
// reader would.
func scalar(n ast.ScalarNode) (any, error) {
	t := n.GetToken()
	if t == nil {
		return nil, nil
	}
	switch t.Type {
	case token.SingleQuoteType, token.DoubleQuoteType:
		if s, ok := n.(*ast.StringNode); ok {
			return s.Value, nil
		}
		return t.Value, nil
	}
	text := t.Value
	if s, ok := n.(*ast.StringNode); ok {
		text = s.Value // a plain scalar over several lines, folded
	}
	return resolvePlain(text, line(n))
}

var (
	yaml11Bool  = regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`)
	yaml11Float = regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?)$`)
	yaml11Odd   = regexp.MustCompile(`^(?:[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)|` +
		`[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$`)
	yaml11Int = regexp.MustCompile(`^[-+]?(?:0b[0-1_]+|0[0-7_]+|0|[1-9][0-9_]*|0x[0-9a-fA-F_]+)$`)
)

func resolvePlain(s string, at int) (any, error) {
	switch {
	case s == "" || s == "~" || s == "null" || s == "Null" || s == "NULL":
		return nil, nil
	case yaml11Bool.MatchString(s):
		switch s[0] {
		case 'y', 'Y', 't', 'T':
			return true, nil
		case 'o', 'O':
			return s == "on" || s == "On" || s == "ON", nil
		}
		return false, nil
	case yaml11Int.MatchString(s):
		return yamlInt(s)
	case yaml11Float.MatchString(s):
		f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: the float %s: %w", at, s, err)
		}
		return number(pythonFloat(f)), nil
	case yaml11Odd.MatchString(s):
		// Sexagesimal numbers, infinities, NaN and timestamps: JSON has
		// none of them (PyYAML reads them, json.dumps would refuse).
		return nil, fmt.Errorf("line %d: the plain scalar %q is a YAML 1.1 value JSON cannot hold", at, s)
	}
	return s, nil
}

// yamlInt reads a YAML 1.1 int (binary 0b, octal 0…, hex 0x, decimal,
// underscores allowed) as decimal text.
func yamlInt(s string) (any, error) {
	neg := false
	d := strings.ReplaceAll(s, "_", "")
	if d[0] == '-' || d[0] == '+' {
		neg = d[0] == '-'
		d = d[1:]
	}
	base := 10
	switch {
	case strings.HasPrefix(d, "0b"):
		base, d = 2, d[2:]
	case strings.HasPrefix(d, "0x"):
		base, d = 16, d[2:]
	case len(d) > 1 && d[0] == '0':
		base, d = 8, d[1:]
	}
	var z big.Int
	if _, ok := z.SetString(d, base); !ok {
		return nil, fmt.Errorf("the int %q", s)
	}
	if neg {
		z.Neg(&z)
	}
	return number(z.String()), nil
}

// pythonFloat writes f as Python's repr does: the shortest digits that
// read back as f, positional from 1e-4 up to 1e16 (with ".0" when whole),
// else d.ddde±XX.
func pythonFloat(f float64) string {
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	mant, exp, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(exp)
	sign := ""
	if strings.HasPrefix(mant, "-") {
		sign, mant = "-", mant[1:]
	}
	digits := strings.Replace(mant, ".", "", 1)
	if x < -4 || x >= 16 {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		es := "+"
		if x < 0 {
			es, x = "-", -x
		}
		return fmt.Sprintf("%s%se%s%02d", sign, m, es, x)
	}
	point := x + 1 // digits before the point
	switch {
	case point <= 0:
		return sign + "0." + strings.Repeat("0", -point) + digits
	case point >= len(digits):
		return sign + digits + strings.Repeat("0", point-len(digits)) + ".0"
	}
	return sign + digits[:point] + "." + digits[point:]
}
