package bash

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// schemaNode is a decoded JSON Schema (sub)document.
type schemaNode = map[string]any

// flagSchema answers type questions about a tool's input schema for the
// flag parser: the type of a property, resolving $ref, type arrays and
// oneOf/anyOf/allOf the way bashkit does.
type flagSchema struct {
	root schemaNode // nil: no schema
}

// resolve follows $ref pointers ("#/..." only) up to 16 times.
func (s *flagSchema) resolve(n schemaNode) schemaNode {
	for range 16 {
		ref, ok := n["$ref"].(string)
		if !ok {
			return n
		}
		target, ok := s.pointer(ref)
		if !ok {
			return n
		}
		n = target
	}
	return n
}

func (s *flagSchema) pointer(ref string) (schemaNode, bool) {
	p, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	var cur any = s.root
	for tok := range strings.SplitSeq(strings.TrimPrefix(p, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	n, ok := cur.(map[string]any)
	return n, ok
}

// property returns the (resolved) schema of the top-level property key.
func (s *flagSchema) property(key string) schemaNode {
	if s.root == nil {
		return nil
	}
	props, _ := s.resolve(s.root)["properties"].(map[string]any)
	p, _ := props[key].(map[string]any)
	if p == nil {
		return nil
	}
	return s.resolve(p)
}

// typeOf returns the JSON type a value of schema n should be coerced to:
// "integer", "number", "boolean", "string", "array", "object" or "".
func (s *flagSchema) typeOf(n schemaNode) string {
	return s.typeOfDepth(n, 0)
}

func (s *flagSchema) typeOfDepth(n schemaNode, depth int) string {
	if n == nil || depth > 16 {
		return ""
	}
	n = s.resolve(n)
	switch t := n["type"].(type) {
	case string:
		return t
	case []any:
		var first string
		for _, v := range t {
			ts, _ := v.(string)
			if ts == "array" || ts == "object" {
				return ts
			}
			if first == "" && ts != "null" {
				first = ts
			}
		}
		if first != "" {
			return first
		}
	}
	for _, kw := range []string{"oneOf", "anyOf", "allOf"} {
		branches, _ := n[kw].([]any)
		var first string
		for _, b := range branches {
			bn, _ := b.(map[string]any)
			bt := s.typeOfDepth(bn, depth+1)
			if bt == "array" || bt == "object" {
				return bt
			}
			if first == "" && bt != "" && bt != "null" {
				first = bt
			}
		}
		if first != "" {
			return first
		}
	}
	if _, ok := n["items"]; ok {
		return "array"
	}
	if _, ok := n["properties"]; ok {
		return "object"
	}
	return ""
}

// canonicalKey maps a flag name to the schema's property: --user-id names
// user_id (and --user_id names user-id) when the schema has that one and
// not the name as written.
func (s *flagSchema) canonicalKey(key string) string {
	if s.root == nil || s.property(key) != nil {
		return key
	}
	for _, alt := range []string{strings.ReplaceAll(key, "-", "_"), strings.ReplaceAll(key, "_", "-")} {
		if alt != key && s.property(alt) != nil {
			return alt
		}
	}
	return key
}

// closed reports whether the schema's top level takes no properties but
// those it lists (additionalProperties: false, and no patternProperties,
// which would take others).
func (s *flagSchema) closed() bool {
	if s.root == nil {
		return false
	}
	r := s.resolve(s.root)
	ap, ok := r["additionalProperties"].(bool)
	_, patterns := r["patternProperties"]
	return ok && !ap && !patterns
}

// unknownFlags is the error for flags a closed schema has no property
// for: it names them, and the flags there are.
func (s *flagSchema) unknownFlags(keys []string) error {
	names := slices.Sorted(maps.Keys(s.objectProps(s.root)))
	valid := "the tool takes no flags"
	if len(names) > 0 {
		valid = "valid flags: --" + strings.Join(names, ", --")
	}
	what := "unknown flag"
	if len(keys) > 1 {
		what = "unknown flags"
	}
	return flagErrorf("%s --%s; %s", what, strings.Join(keys, ", --"), valid)
}

// items returns the resolved item schema of an array schema.
func (s *flagSchema) items(n schemaNode) schemaNode {
	if n == nil {
		return nil
	}
	it, _ := s.resolve(n)["items"].(map[string]any)
	if it == nil {
		return nil
	}
	return s.resolve(it)
}

// objectProps returns the property schemas of an object schema.
func (s *flagSchema) objectProps(n schemaNode) map[string]any {
	if n == nil {
		return nil
	}
	props, _ := s.resolve(n)["properties"].(map[string]any)
	return props
}

// flagError is a flag parse error; its message is printed after the
// tool's name.
type flagError struct{ msg string }

func (e *flagError) Error() string { return e.msg }

func flagErrorf(format string, args ...any) error {
	return &flagError{msg: fmt.Sprintf(format, args...)}
}

// parseFlags turns a tool's argv into its params, per bashkit's
// parse_flags: --k v, --k=v, bare booleans, arrays (JSON, comma lists,
// repeats), objects (JSON or key=value groups). Flags that a closed
// schema (additionalProperties: false) has no property for are an error
// naming them all, before the schema check would report a missing
// required property that one of them misspells.
func parseFlags(s *flagSchema, argv []string, lim Limits) (map[string]any, error) {
	params := make(map[string]any)
	var unknown []string
	closed := s.closed()
	budget := lim.MaxFlagBytes
	spend := func(key string, n int) error {
		budget -= n
		if budget < 0 {
			return flagErrorf("--%s: parsed flag data exceeds %d bytes", key, lim.MaxFlagBytes)
		}
		return nil
	}
	isFlag := func(i int) bool { return i < len(argv) && strings.HasPrefix(argv[i], "--") }
	for i := 0; i < len(argv); {
		tok := argv[i]
		body, ok := strings.CutPrefix(tok, "--")
		if !ok || body == "" {
			return nil, flagErrorf("expected --flag, got: %s", tok)
		}
		key, val, hasEq := strings.Cut(body, "=")
		if key == "" {
			return nil, flagErrorf("expected --flag, got: %s", tok)
		}
		key = s.canonicalKey(key)
		prop := s.property(key)
		if prop == nil && closed && !slices.Contains(unknown, key) {
			unknown = append(unknown, key)
		}
		typ := s.typeOf(prop)
		if err := spend(key, len(key)); err != nil {
			return nil, err
		}
		if hasEq {
			if err := spend(key, len(val)); err != nil {
				return nil, err
			}
			v := coerce(val, typ, lim)
			if typ == "array" {
				if arr, isArr := v.([]any); isArr {
					if err := appendItems(params, key, arr, lim); err != nil {
						return nil, err
					}
					i++
					continue
				}
			}
			params[key] = v
			i++
			continue
		}
		switch typ {
		case "boolean":
			// --flag alone is true; --flag true|false also works.
			if i+1 < len(argv) && !isFlag(i+1) {
				if b, isBool := coerce(argv[i+1], "boolean", lim).(bool); isBool {
					params[key] = b
					i += 2
					continue
				}
			}
			params[key] = true
			i++
		case "array":
			if !(i+1 < len(argv)) || isFlag(i+1) {
				return nil, flagErrorf("--%s: missing value", key)
			}
			v := argv[i+1]
			i += 2
			itemSchema := s.items(prop)
			itemType := s.typeOf(itemSchema)
			if err := spend(key, len(v)); err != nil {
				return nil, err
			}
			switch {
			case strings.HasPrefix(v, "["):
				if arr, isArr := decodeJSONParam(v, lim).([]any); isArr {
					if err := appendItems(params, key, arr, lim); err != nil {
						return nil, err
					}
				} else {
					params[key] = v // invalid JSON: the schema check reports it
				}
			case itemType == "object" && (strings.HasPrefix(v, "{") || strings.Contains(v, "=")):
				var obj any
				if strings.HasPrefix(v, "{") {
					obj = decodeJSONParam(v, lim)
				} else {
					group, next, err := pairGroup(s, key, itemSchema, argv, i-1, lim, spend)
					if err != nil {
						return nil, err
					}
					obj, i = group, next
				}
				if err := appendItems(params, key, []any{obj}, lim); err != nil {
					return nil, err
				}
			default:
				parts := strings.Split(v, ",")
				items := make([]any, 0, len(parts))
				for _, p := range parts {
					items = append(items, coerce(p, itemType, lim))
				}
				if err := appendItems(params, key, items, lim); err != nil {
					return nil, err
				}
			}
		case "object":
			if !(i+1 < len(argv)) || isFlag(i+1) {
				params[key] = true
				i++
				continue
			}
			v := argv[i+1]
			if err := spend(key, len(v)); err != nil {
				return nil, err
			}
			switch {
			case strings.HasPrefix(v, "{") || strings.HasPrefix(v, "["):
				params[key] = decodeJSONParam(v, lim)
				i += 2
			case strings.Contains(v, "="):
				group, next, err := pairGroup(s, key, prop, argv, i+1, lim, spend)
				if err != nil {
					return nil, err
				}
				params[key] = group
				i = next
			default:
				params[key] = v
				i += 2
			}
		default:
			if i+1 < len(argv) && !isFlag(i+1) {
				v := argv[i+1]
				if err := spend(key, len(v)); err != nil {
					return nil, err
				}
				params[key] = coerce(v, typ, lim)
				i += 2
			} else {
				params[key] = true
				i++
			}
		}
	}
	if len(unknown) > 0 {
		return nil, s.unknownFlags(unknown)
	}
	return params, nil
}

// pairGroup parses "a=1 b=x" words starting at argv[start] up to the next
// --flag into an object, coercing values by the object's properties.
func pairGroup(s *flagSchema, key string, obj schemaNode, argv []string, start int, lim Limits, spend func(string, int) error) (map[string]any, int, error) {
	props := s.objectProps(obj)
	out := make(map[string]any)
	i := start
	for ; i < len(argv) && !strings.HasPrefix(argv[i], "--"); i++ {
		k, v, ok := strings.Cut(argv[i], "=")
		if !ok || k == "" {
			return nil, 0, flagErrorf("--%s: expected --flag or key=value, got '%s'", key, argv[i])
		}
		if i > start {
			if err := spend(key, len(argv[i])); err != nil {
				return nil, 0, err
			}
		}
		var sub schemaNode
		if props != nil {
			p, known := props[k].(map[string]any)
			if !known {
				names := make([]string, 0, len(props))
				for n := range props {
					names = append(names, n)
				}
				slices.Sort(names)
				return nil, 0, flagErrorf("--%s: unknown key '%s'; valid keys: %s", key, k, strings.Join(names, ", "))
			}
			sub = s.resolve(p)
		}
		out[k] = coerce(v, s.typeOf(sub), lim)
	}
	return out, i, nil
}

func appendItems(params map[string]any, key string, items []any, lim Limits) error {
	prev, _ := params[key].([]any)
	all := append(prev, items...)
	if len(all) > lim.MaxArrayItems {
		return flagErrorf("--%s: array flag has %d items; maximum is %d", key, len(all), lim.MaxArrayItems)
	}
	params[key] = all
	return nil
}

// coerce converts a raw flag value to the schema type; a value that does
// not parse stays a string (the schema check then reports it).
func coerce(raw, typ string, lim Limits) any {
	switch typ {
	case "integer":
		if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
			return n
		}
	case "number":
		if f, err := strconv.ParseFloat(raw, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			if f == math.Trunc(f) && math.Abs(f) < 1<<53 && !strings.ContainsAny(raw, ".eE") {
				return int64(f)
			}
			return f
		}
	case "boolean":
		switch strings.ToLower(raw) {
		case "true", "1", "yes", "on":
			return true
		case "false", "0", "no", "off":
			return false
		}
	case "array", "object":
		if strings.HasPrefix(raw, "[") || strings.HasPrefix(raw, "{") {
			return decodeJSONParam(raw, lim)
		}
	}
	return raw
}

// decodeJSONParam decodes a JSON flag value (≤ MaxFlagBytes); invalid or
// oversized JSON stays the raw string.
func decodeJSONParam(raw string, lim Limits) any {
	if len(raw) > lim.MaxFlagBytes {
		return raw
	}
	v, err := decodeJSON([]byte(raw))
	if err != nil {
		return raw
	}
	return v
}

// decodeJSON decodes one JSON text into params types: numbers become
// int64 when integral and in range, float64 otherwise.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return normalizeNumbers(v), nil
}

func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = normalizeNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalizeNumbers(x[k])
		}
	}
	return v
}

// usageHint renders a tool's flags for prompts and help: properties in
// alphabetical order, "--k <type>".
func usageHint(s *flagSchema) string {
	if s.root == nil {
		return ""
	}
	props := s.objectProps(s.root)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		parts = append(parts, "--"+n+" "+typeHint(s, s.resolve(p)))
	}
	return strings.Join(parts, " ")
}

func typeHint(s *flagSchema, n schemaNode) string {
	switch t := s.typeOf(n); t {
	case "integer", "number", "boolean", "string":
		return "<" + t + ">"
	case "array":
		if s.typeOf(s.items(n)) == "object" {
			return "<json|key=value...>"
		}
		return "<json|a,b,c>"
	case "object":
		return "<json|key=value...>"
	case "":
		return "<value>"
	default:
		return "<" + strings.ToUpper(t) + ">"
	}
}
