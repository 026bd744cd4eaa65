package jsonschema_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
)

// suiteCase is a schema of JSON-Schema-Test-Suite and the values its tests
// validate.
type suiteCase struct {
	name      string
	schema    any
	instances []any
}

// draftURLs are the $schema a draft's directory of the suite implies.
var draftURLs = map[string]string{
	"draft4":       "http://json-schema.org/draft-04/schema#",
	"draft6":       "http://json-schema.org/draft-06/schema#",
	"draft7":       "http://json-schema.org/draft-07/schema#",
	"draft2019-09": "https://json-schema.org/draft/2019-09/schema",
	"draft2020-12": "https://json-schema.org/draft/2020-12/schema",
}

// loadSuite reads testdata/JSON-Schema-Test-Suite.tar.gz: the tests of
// github.com/json-schema-org/JSON-Schema-Test-Suite at 44401e0c (MIT, its
// LICENSE inside) for drafts 4, 6, 7, 2019-09 and 2020-12, optional ones
// included. A schema object without $schema gets its directory's draft.
func loadSuite(t testing.TB) []suiteCase {
	f, err := os.Open("testdata/JSON-Schema-Test-Suite.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out []suiteCase
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(h.Name, ".json") {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		dir := strings.Split(h.Name, "/")[1]
		var groups []struct {
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Tests       []struct {
				Data json.RawMessage `json:"data"`
			} `json:"tests"`
		}
		if err := json.Unmarshal(data, &groups); err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		for _, g := range groups {
			schema, err := jsonschema.UnmarshalJSON(bytes.NewReader(g.Schema))
			if err != nil {
				t.Fatalf("%s: %s: %v", h.Name, g.Description, err)
			}
			if obj, ok := schema.(map[string]any); ok {
				if _, ok := obj["$schema"]; !ok {
					obj["$schema"] = draftURLs[dir]
				}
			}
			c := suiteCase{name: path.Join(strings.TrimPrefix(h.Name, "tests/"), g.Description), schema: schema}
			for _, tc := range g.Tests {
				v, err := jsonschema.UnmarshalJSON(bytes.NewReader(tc.Data))
				if err != nil {
					t.Fatalf("%s: %s: %v", h.Name, g.Description, err)
				}
				c.instances = append(c.instances, v)
			}
			out = append(out, c)
		}
	}
	return out
}

func TestDifferentialSuite(t *testing.T) {
	var st stats
	for _, c := range loadSuite(t) {
		compare(t, c.name, c.schema, c.instances, &st)
	}
	t.Logf("JSON-Schema-Test-Suite: %d schemas (%d refused by both, %d where santhosh panics), %d instances (%d invalid)",
		st.schemas, st.compileErrs, st.santhoshPanics, st.instances, st.invalid)
}
