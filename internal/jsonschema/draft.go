package jsonschema

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
)

// metaFS holds the drafts' meta-schemas, by their path at json-schema.org.
// They are the files json-schema.org publishes (github.com/json-schema-org/
// json-schema-spec at the commits its website pins: draft-04 dba92b7,
// draft-06 59ed5f6, draft-07 567f768, 2019-09 41014ea, 2020-12 769daad),
// two of them changed as santhosh-tekuri/jsonschema v6.0.3 has them, so
// that the same schemas are refused: draft-04 has no top-level id, its id
// has "format": "uriref" (which nothing checks), its $schema "format":
// "uri", and $ref must be a string; draft-06 has no examples property and
// does not check patternProperties' names as regexes. TestMetaSchemas
// checks each file against santhosh's copy.
//
//go:embed metaschemas
var metaFS embed.FS

// A draft is a version of JSON Schema: its meta-schema, its id keyword,
// where its subschemas sit, its vocabularies.
type draft struct {
	version    int
	url        string // the meta-schema's URL, without a fragment
	id         string // the keyword of a schema's id
	subschemas [][]string
	// vocabPrefix and vocabs are the draft's vocabularies (2019-09 on):
	// their URLs are the prefix and the name; defaultVocabs are those of a
	// schema whose meta-schema lists none.
	vocabPrefix   string
	vocabs        []string
	defaultVocabs []string
}

// The places of subschemas, by draft: a path of keywords, where "*" is
// every property of an object and "[]" every item of an array. Written
// out (each draft's list is the one before with its additions) so that
// nothing is built at init.
var (
	subschemas4 = [][]string{{"definitions", "*"}, {"not"}, {"allOf", "[]"}, {"anyOf", "[]"}, {"oneOf", "[]"},
		{"properties", "*"}, {"additionalProperties"}, {"patternProperties", "*"},
		{"items"}, {"items", "[]"}, {"additionalItems"}, {"dependencies", "*"}}
	subschemas6 = [][]string{{"definitions", "*"}, {"not"}, {"allOf", "[]"}, {"anyOf", "[]"}, {"oneOf", "[]"},
		{"properties", "*"}, {"additionalProperties"}, {"patternProperties", "*"},
		{"items"}, {"items", "[]"}, {"additionalItems"}, {"dependencies", "*"},
		{"propertyNames"}, {"contains"}}
	subschemas7 = [][]string{{"definitions", "*"}, {"not"}, {"allOf", "[]"}, {"anyOf", "[]"}, {"oneOf", "[]"},
		{"properties", "*"}, {"additionalProperties"}, {"patternProperties", "*"},
		{"items"}, {"items", "[]"}, {"additionalItems"}, {"dependencies", "*"},
		{"propertyNames"}, {"contains"}, {"if"}, {"then"}, {"else"}}
	subschemas2019 = [][]string{{"definitions", "*"}, {"not"}, {"allOf", "[]"}, {"anyOf", "[]"}, {"oneOf", "[]"},
		{"properties", "*"}, {"additionalProperties"}, {"patternProperties", "*"},
		{"items"}, {"items", "[]"}, {"additionalItems"}, {"dependencies", "*"},
		{"propertyNames"}, {"contains"}, {"if"}, {"then"}, {"else"},
		{"$defs", "*"}, {"dependentSchemas", "*"}, {"unevaluatedProperties"}, {"unevaluatedItems"}, {"contentSchema"}}
	subschemas2020 = [][]string{{"definitions", "*"}, {"not"}, {"allOf", "[]"}, {"anyOf", "[]"}, {"oneOf", "[]"},
		{"properties", "*"}, {"additionalProperties"}, {"patternProperties", "*"},
		{"items"}, {"items", "[]"}, {"additionalItems"}, {"dependencies", "*"},
		{"propertyNames"}, {"contains"}, {"if"}, {"then"}, {"else"},
		{"$defs", "*"}, {"dependentSchemas", "*"}, {"unevaluatedProperties"}, {"unevaluatedItems"}, {"contentSchema"},
		{"prefixItems", "[]"}}
)

var (
	draft4    = &draft{version: 4, url: "http://json-schema.org/draft-04/schema", id: "id", subschemas: subschemas4}
	draft6    = &draft{version: 6, url: "http://json-schema.org/draft-06/schema", id: "$id", subschemas: subschemas6}
	draft7    = &draft{version: 7, url: "http://json-schema.org/draft-07/schema", id: "$id", subschemas: subschemas7}
	draft2019 = &draft{
		version: 2019, url: "https://json-schema.org/draft/2019-09/schema", id: "$id", subschemas: subschemas2019,
		vocabPrefix:   "https://json-schema.org/draft/2019-09/vocab/",
		vocabs:        []string{"applicator", "content", "core", "format", "meta-data", "validation"},
		defaultVocabs: []string{"core", "applicator", "validation"},
	}
	draft2020 = &draft{
		version: 2020, url: "https://json-schema.org/draft/2020-12/schema", id: "$id", subschemas: subschemas2020,
		vocabPrefix: "https://json-schema.org/draft/2020-12/vocab/",
		vocabs: []string{"applicator", "content", "core", "format-annotation", "format-assertion",
			"meta-data", "unevaluated", "validation"},
		defaultVocabs: []string{"core", "applicator", "unevaluated", "validation"},
	}
	draftLatest = draft2020
)

// draftAt is the draft whose meta-schema is at u (with http or https, and
// an empty fragment or none), or nil.
func draftAt(u string) *draft {
	u, frag := splitHash(u)
	if frag != "" {
		return nil
	}
	if rest, ok := strings.CutPrefix(u, "http://"); ok {
		u = rest
	} else {
		u = strings.TrimPrefix(u, "https://")
	}
	switch u {
	case "json-schema.org/schema":
		return draftLatest
	case "json-schema.org/draft/2020-12/schema":
		return draft2020
	case "json-schema.org/draft/2019-09/schema":
		return draft2019
	case "json-schema.org/draft-07/schema":
		return draft7
	case "json-schema.org/draft-06/schema":
		return draft6
	case "json-schema.org/draft-04/schema":
		return draft4
	}
	return nil
}

// idOf is a schema object's id, without its fragment, or "". Before
// 2019-09 an object with $ref has no id: its other keywords are ignored.
func (d *draft) idOf(obj map[string]any) string {
	if d.version < 2019 {
		if _, ok := obj["$ref"]; ok {
			return ""
		}
	}
	id, ok := obj[d.id].(string)
	if !ok {
		return ""
	}
	id, _ = splitHash(id)
	return id
}

// vocabsOf lists the vocabularies a meta-schema (doc, at u) requires, or
// nil when it lists none; core is always in.
func (d *draft) vocabsOf(u string, doc any) ([]string, error) {
	if d.version < 2019 {
		return nil, nil
	}
	obj, _ := doc.(map[string]any)
	listed, ok := obj["$vocabulary"].(map[string]any)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, v := range sortedKeys(listed) {
		if req, ok := listed[v].(bool); !ok || !req {
			continue
		}
		name, ok := strings.CutPrefix(v, d.vocabPrefix)
		if !ok || !slices.Contains(d.vocabs, name) {
			return nil, fmt.Errorf("unsupported vocabulary %q in %q", v, u)
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if !slices.Contains(out, "core") {
		out = append(out, "core")
	}
	return out, nil
}

// A dialect is a draft and the vocabularies its schemas use (nil: the
// draft's defaults).
type dialect struct {
	draft  *draft
	vocabs []string
}

func (dl dialect) hasVocab(name string) bool {
	if name == "core" || dl.draft.version < 2019 {
		return true
	}
	if dl.vocabs != nil {
		return slices.Contains(dl.vocabs, name)
	}
	return slices.Contains(dl.draft.defaultVocabs, name)
}

// metaSchema is the schema that checks schemas of the dialect: the
// draft's meta-schema, or for a list of vocabularies the allOf of theirs.
func (dl dialect) metaSchema() (*Schema, error) {
	if dl.vocabs == nil {
		return metaSchemas.get(dl.draft.url)
	}
	s := &Schema{Location: "urn:mem:metaschema", loc: location{url: "urn:mem:metaschema"}, DraftVersion: dl.draft.version}
	for _, v := range dl.vocabs {
		sch, err := metaSchemas.get(strings.TrimSuffix(dl.draft.url, "schema") + "meta/" + v)
		if err != nil {
			return nil, err
		}
		s.allOf = append(s.allOf, sch)
	}
	s.resource = s
	if s.DraftVersion >= 2020 {
		s.dynamicAnchor = "meta"
		s.dynamicAnchors = map[string]*Schema{"meta": s}
	}
	return s, nil
}

// metaSchemas compiles the meta-schemas when a schema first needs one,
// not at init: a program that never compiles a schema pays nothing.
var metaSchemas = &metaCompiler{}

type metaCompiler struct {
	mu sync.Mutex
	c  *Compiler
}

func (m *metaCompiler) get(u string) (*Schema, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c == nil {
		m.c = NewCompiler()
		m.c.assertFormat = true
		m.c.isMeta = true
	}
	if s, ok := m.c.schemas[location{url: u}]; ok {
		return s, nil
	}
	s, err := m.c.Compile(u)
	if err != nil {
		return nil, fmt.Errorf("jsonschema: the meta-schema %s does not compile: %w", u, err)
	}
	return s, nil
}

// metaDoc returns the meta-schema document at u, nil when u is not one
// (a URL of json-schema.org with no file here), or the error of reading
// it.
func metaDoc(u string) (any, error) {
	f, err := openMeta(u)
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	return UnmarshalJSON(f)
}

func openMeta(u string) (fs.File, error) {
	path, ok := strings.CutPrefix(u, "http://json-schema.org/")
	if !ok {
		if path, ok = strings.CutPrefix(u, "https://json-schema.org/"); !ok {
			return nil, nil
		}
	}
	if path == "schema" {
		return openMeta(draftLatest.url)
	}
	f, err := metaFS.Open("metaschemas/" + path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return f, err
}

// isMetaURL tells whether u is a meta-schema's URL (which no resource may
// take).
func isMetaURL(u string) bool {
	f, err := openMeta(u)
	if f != nil {
		f.Close()
	}
	return f != nil || err != nil
}
