package jsonschema_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
)

// gen makes random schemas and values from palettes that hit every
// keyword, the drafts' differences, edge numbers, formats and schemas the
// meta-schemas refuse.
type gen struct {
	r       *rand.Rand
	anchors int
	version int // the draft of the schema being made
}

var (
	genNames    = []string{"a", "b", "c", "id", "path", "n", "x-y", "a/b", "~t", "é", "", "0"}
	genPatterns = []string{"^a", "b$", "[0-9]", "^$", ".", "^x-", "é", "\\d+", "a{2,}", "(", "[z-a]"}
	genFormats  = []string{"date", "time", "date-time", "email", "hostname", "ipv4", "ipv6", "uri", "uri-reference",
		"iri", "uri-template", "json-pointer", "relative-json-pointer", "uuid", "duration", "period", "regex", "semver", "unknown"}
	genStrings = []string{"", "a", "abc", "ab", "aaaa", "b", "x-1", "é", "2024-02-29", "2023-02-29", "12:30:00Z", "23:59:60Z",
		"2024-01-01T12:00:00+01:00", "2024-01-01t00:00:00z", "a@b.c", "a..b@c.d", "\"q\"@x.y", "[IPv6:::1]", "user@[1.2.3.4]",
		"example.com", "-bad.com", "1.2.3.4", "01.2.3.4", "::1", "fe80::1%eth0", "http://x/{y}", "http://x/{{y}}", "/a/b",
		"a b", "http://[::1]:80/", "#/a", "\\x", "/a~0b", "/a~2", "0/a", "1#", "01", "123e4567-e89b-12d3-a456-426614174000",
		"P1Y2M", "PT", "P1W", "P1D/2024-01-01T00:00:00Z", "1.2.3", "1.2.3-rc.1+b.2", "01.2.3", "(", "[a-", "^a+$",
		"mailto:x@y", "//host", "urn:x:y", "~", "\x7f", "名前"}
	genNumbers = []string{"0", "-0", "1", "-1", "2", "3", "0.5", "1.5", "-2.5", "1e3", "1E-2", "10", "100", "1000", "1234567",
		"12345678901234567890", "0.1", "0.30000000000000004", "1e308", "-1e308", "5e-324", "1.0", "2.0", "255", "256", "1e400"}
	genTypes  = []string{"null", "boolean", "number", "integer", "string", "array", "object", "foo"}
	genDrafts = []string{"http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2019-09/schema",
		"https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#",
		"http://json-schema.org/schema#", "https://example.com/my-meta", "mem:///test/schema.json", ":bad"}
)

func (g *gen) pick(ss []string) string { return ss[g.r.IntN(len(ss))] }

// pattern is mostly a valid regex.
func (g *gen) pattern() string {
	if g.chance(0.03) {
		return g.pick(genPatterns)
	}
	return g.pick(genPatterns[:len(genPatterns)-2])
}

// distinct drops repeated values (enum, required and the like must not
// repeat: the meta-schemas refuse them).
func distinct(vs []any) []any {
	var out []any
	for _, v := range vs {
		dup := false
		for _, o := range out {
			if mustJSON(o) == mustJSON(v) {
				dup = true
			}
		}
		if !dup {
			out = append(out, v)
		}
	}
	return out
}
func (g *gen) chance(p float64) bool { return g.r.Float64() < p }
func (g *gen) num() json.Number      { return json.Number(g.pick(genNumbers)) }
func (g *gen) small() json.Number    { return json.Number(strconv.Itoa(g.r.IntN(5))) }

// value is a random JSON value, as UnmarshalJSON decodes one.
func (g *gen) value(depth int) any {
	switch n := g.r.IntN(10); {
	case n == 0:
		return nil
	case n == 1:
		return g.chance(0.5)
	case n <= 3:
		return g.num()
	case n <= 6 || depth <= 0:
		return g.pick(genStrings)
	case n == 7:
		arr := make([]any, g.r.IntN(5))
		for i := range arr {
			if i > 0 && g.chance(0.2) {
				arr[i] = arr[i-1] // duplicates, for uniqueItems
				continue
			}
			arr[i] = g.value(depth - 1)
		}
		return arr
	default:
		obj := map[string]any{}
		for range g.r.IntN(5) {
			obj[g.pick(genNames)] = g.value(depth - 1)
		}
		return obj
	}
}

// schema is a random schema; root adds $schema, $defs and definitions.
func (g *gen) schema(depth int, root bool) any {
	if !root && g.chance(0.1) {
		return g.chance(0.7)
	}
	s := map[string]any{}
	if root {
		g.version = 2020
		if g.chance(0.7) {
			d := g.pick(genDrafts[:7])
			if g.chance(0.03) {
				d = g.pick(genDrafts[7:])
			}
			s["$schema"] = d
			for _, v := range []struct {
				part    string
				version int
			}{{"draft-04", 4}, {"draft-06", 6}, {"draft-07", 7}, {"2019-09", 2019}} {
				if strings.Contains(d, v.part) {
					g.version = v.version
				}
			}
		}
	}
	if root && g.chance(0.3) {
		defs := map[string]any{"d": g.schema(depth-1, false), "e": g.schema(depth-1, false)}
		if g.chance(0.5) {
			s["$defs"] = defs
		} else {
			s["definitions"] = defs
		}
	}
	keys := g.r.IntN(5) + 1
	for range keys {
		g.keyword(s, depth)
	}
	return s
}

func (g *gen) sub(depth int) any {
	if depth <= 0 {
		return map[string]any{"type": g.pick(genTypes[:7])}
	}
	return g.schema(depth-1, false)
}

func (g *gen) subs(depth int) []any {
	out := make([]any, g.r.IntN(3)+1)
	for i := range out {
		out[i] = g.sub(depth)
	}
	if g.chance(0.03) {
		return []any{}
	}
	return out
}

func (g *gen) names() []any {
	var out []any
	for range g.r.IntN(3) + 1 {
		out = append(out, g.pick(genNames))
	}
	return distinct(out)
}

func (g *gen) keyword(s map[string]any, depth int) {
	k := g.r.IntN(30)
	if g.chance(0.03) {
		k = 30 + g.r.IntN(4) // refused keywords, anchors and dynamic references: rarer
	}
	switch k {
	case 0:
		if g.chance(0.3) {
			s["type"] = []any{g.pick(genTypes), g.pick(genTypes)}
		} else {
			s["type"] = g.pick(genTypes)
		}
	case 1:
		s["enum"] = distinct([]any{g.value(1), g.value(1), g.value(0)})
	case 2:
		s["const"] = g.value(1)
	case 3:
		props := map[string]any{}
		for range g.r.IntN(3) + 1 {
			props[g.pick(genNames)] = g.sub(depth)
		}
		s["properties"] = props
	case 4:
		s["required"] = g.names()
	case 5:
		if g.chance(0.5) {
			s["additionalProperties"] = g.chance(0.3)
		} else {
			s["additionalProperties"] = g.sub(depth)
		}
	case 6:
		s["patternProperties"] = map[string]any{g.pattern(): g.sub(depth)}
	case 7:
		s["propertyNames"] = g.sub(depth)
	case 8:
		if g.version < 2020 && g.chance(0.4) || g.chance(0.02) {
			s["items"] = g.subs(depth)
		} else {
			s["items"] = g.sub(depth)
		}
	case 9:
		s["prefixItems"] = g.subs(depth)
	case 10:
		if g.chance(0.5) {
			s["additionalItems"] = g.chance(0.5)
		} else {
			s["additionalItems"] = g.sub(depth)
		}
	case 11:
		s["contains"] = g.sub(depth)
		if g.chance(0.5) {
			s["minContains"] = g.small()
		}
		if g.chance(0.3) {
			s["maxContains"] = g.small()
		}
	case 12:
		s[g.pick([]string{"minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties"})] = g.small()
	case 13:
		s[g.pick([]string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})] = g.num()
	case 14:
		s["multipleOf"] = json.Number(g.pick([]string{"2", "0.5", "0.1", "3", "1e-3"}))
		if g.chance(0.05) {
			s["multipleOf"] = json.Number(g.pick([]string{"0", "-1"}))
		}
	case 15:
		s["pattern"] = g.pattern()
	case 16:
		s["format"] = g.pick(genFormats)
	case 17:
		s["allOf"] = g.subs(depth)
	case 18:
		s["anyOf"] = g.subs(depth)
	case 19:
		s["oneOf"] = g.subs(depth)
	case 20:
		s["not"] = g.sub(depth)
	case 21:
		s["if"] = g.sub(depth)
		if g.chance(0.7) {
			s["then"] = g.sub(depth)
		}
		if g.chance(0.7) {
			s["else"] = g.sub(depth)
		}
	case 22:
		s["dependentRequired"] = map[string]any{g.pick(genNames): g.names()}
	case 23:
		s["dependentSchemas"] = map[string]any{g.pick(genNames): g.sub(depth)}
	case 24:
		if g.chance(0.5) {
			s["dependencies"] = map[string]any{g.pick(genNames): g.names()}
		} else {
			s["dependencies"] = map[string]any{g.pick(genNames): g.sub(depth)}
		}
	case 25:
		s["$ref"] = g.pick([]string{"#", "#/$defs/d", "#/definitions/e", "#/$defs/missing", "#a", "#/properties/a",
			"other.json", "#/definitions/d/type", "http://json-schema.org/draft-07/schema#", "#%zz", "#a1"})
	case 26:
		s["unevaluatedProperties"] = g.sub(depth)
	case 27:
		s["unevaluatedItems"] = g.sub(depth)
	case 28:
		s["uniqueItems"] = g.chance(0.8)
	case 29:
		// exclusive bounds as draft-04 writes them
		if g.version == 4 || g.chance(0.05) {
			s["minimum"] = g.num()
			s["exclusiveMinimum"] = g.chance(0.7)
		}
	case 30:
		// keywords the meta-schemas refuse
		bad := []map[string]any{
			{"type": json.Number("3")}, {"minLength": json.Number("-1")}, {"required": "a"}, {"enum": []any{}},
			{"properties": []any{}}, {"items": "x"}, {"pattern": "("}, {"$ref": json.Number("1")}, {"multipleOf": json.Number("0")},
			{"minItems": json.Number("1.5")}, {"$id": "#frag"}, {"$anchor": "a b"}, {"format": json.Number("1")},
		}
		for k, v := range bad[g.r.IntN(len(bad))] {
			s[k] = v
		}
	case 31:
		g.anchors++
		s["$anchor"] = fmt.Sprintf("a%d", g.anchors%4)
		if g.chance(0.3) {
			s["$id"] = g.pick([]string{"sub.json", "http://example.com/s", "#x", "urn:x"})
		}
	case 32:
		s["$dynamicRef"] = g.pick([]string{"#meta", "#", "#a"})
		if g.chance(0.5) {
			s["$dynamicAnchor"] = "meta"
		}
	case 33:
		s["$recursiveRef"] = "#"
		if g.chance(0.5) {
			s["$recursiveAnchor"] = true
		}
	}
}

// TestDifferentialGenerated compares both on random schemas and values.
func TestDifferentialGenerated(t *testing.T) {
	n := 4000
	if testing.Short() {
		n = 500
	}
	var st stats
	g := &gen{r: rand.New(rand.NewPCG(1, 2))}
	for i := range n {
		schema := g.schema(3, true)
		var instances []any
		for range 8 {
			instances = append(instances, g.value(3))
		}
		if !compare(t, fmt.Sprintf("generated %d: %s", i, mustJSON(schema)), schema, instances, &st) && t.Failed() {
			if st.schemas > 0 && countFailures(t) > 20 {
				t.Fatal("too many differences")
			}
		}
	}
	t.Logf("generated: %d schemas (%d refused by both, %d where santhosh panics), %d instances (%d invalid)",
		st.schemas, st.compileErrs, st.santhoshPanics, st.instances, st.invalid)
}

var failures = map[testing.TB]int{}

func countFailures(t testing.TB) int {
	failures[t]++
	return failures[t]
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// FuzzDifferential compares both on any schema and value.
func FuzzDifferential(f *testing.F) {
	f.Add(`{"type":"object","properties":{"limit":{"type":"integer"}},"required":["limit"]}`, `{"limit":"5"}`)
	f.Add(`{"$schema":"http://json-schema.org/draft-07/schema#","format":"email"}`, `"a@b"`)
	f.Add(`{"anyOf":[{"minimum":3},{"multipleOf":0.5}]}`, `1.25`)
	f.Add(`{"properties":{"a":{"pattern":"("}}}`, `{}`)
	f.Add(`{"unevaluatedProperties":false,"allOf":[{"properties":{"a":true}}]}`, `{"a":1,"b":2}`)
	g := &gen{r: rand.New(rand.NewPCG(3, 4))}
	for range 30 {
		f.Add(mustJSON(g.schema(2, true)), mustJSON(g.value(2)))
	}
	f.Fuzz(func(t *testing.T, schemaJSON, instanceJSON string) {
		schema, err := jsonschema.UnmarshalJSON(strings.NewReader(schemaJSON))
		if err != nil {
			return
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(instanceJSON))
		if err != nil {
			return
		}
		var st stats
		compare(t, "fuzz", schema, []any{inst}, &st)
	})
}
