package jsonschema_test

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
)

func compile(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(testURL, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(testURL)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, instance string) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(instance))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

// TestMetaSchemas: the embedded meta-schemas hold the same JSON as
// santhosh's, so that the same schemas are refused.
func TestMetaSchemas(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/santhosh-tekuri/jsonschema/v6").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "metaschemas")
	n := 0
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		theirs, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		ours, err := os.ReadFile(filepath.Join("metaschemas", rel))
		if err != nil {
			return err
		}
		var a, b any
		if err := json.Unmarshal(ours, &a); err != nil {
			return err
		}
		if err := json.Unmarshal(theirs, &b); err != nil {
			return err
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("%s differs from santhosh's", rel)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 19 {
		t.Errorf("%d meta-schemas, want 19", n)
	}
}

// TestHugeNumbers: a number whose exponent is past big.Rat's bound is
// compared with bounds as a number beyond every float64; santhosh panics
// on it (a deliberate difference).
func TestHugeNumbers(t *testing.T) {
	s := compile(t, `{"properties":{"n":{"type":"number","maximum":10,"multipleOf":2}},"items":{"uniqueItems":true}}`)
	err := validate(t, s, `{"n":1e10000000}`)
	if err == nil || !strings.Contains(err.Error(), "maximum: got") {
		t.Errorf("got %v", err)
	}
	if err := validate(t, s, `{"n":-1e10000000}`); err != nil {
		t.Errorf("got %v", err)
	}
	if err := validate(t, compile(t, `{"type":"integer"}`), `1e10000000`); err == nil {
		t.Error("1e10000000 is an integer?")
	}
	// Such numbers equal nothing, as in santhosh's arrays of up to 20
	// items (it panics on longer ones).
	long := `[` + strings.Repeat(`1e10000000,`, 25) + `1]`
	if err := validate(t, compile(t, `{"uniqueItems":true}`), long); err != nil {
		t.Errorf("got %v", err)
	}
}

// TestPropertyNamesLocation: a propertyNames error is at the object's
// place. (santhosh's node shows the place its validator visited next, a
// slice it goes on appending to: a deliberate difference, not in
// SchemaErrorText, which shows only leaves.)
func TestPropertyNamesLocation(t *testing.T) {
	s := compile(t, `{"properties":{"a":{"propertyNames":{"maxLength":1}},"b":{"type":"object","properties":{"c":{}}}}}`)
	err := validate(t, s, `{"a":{"xy":1},"b":{"c":1}}`)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v", err)
	}
	want := "jsonschema validation failed with 'mem:///test/schema.json#'\n- at '/a': invalid propertyName 'xy'\n  - at '': maxLength: got 2, want 1"
	if got := ve.Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestRelativeURL: schemas are named by absolute URLs; a relative one is
// refused rather than read as a file of the working directory.
func TestRelativeURL(t *testing.T) {
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", map[string]any{}); err == nil {
		t.Error("relative URL accepted")
	}
	if _, err := c.Compile("schema.json"); err == nil {
		t.Error("relative URL compiled")
	}
}

// TestExternalRefused: without a loader, a reference to another document
// is refused with the URL.
func TestExternalRefused(t *testing.T) {
	doc := map[string]any{"properties": map[string]any{"a": map[string]any{"$ref": "https://example.com/s.json"}}}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(testURL, doc); err != nil {
		t.Fatal(err)
	}
	_, err := c.Compile(testURL)
	var le *jsonschema.LoadURLError
	if !errors.As(err, &le) || le.URL != "https://example.com/s.json" {
		t.Errorf("got %v", err)
	}
}

// TestConcurrentFirstUse: the meta-schemas are compiled on first use,
// from any number of goroutines at once (go test -race).
func TestConcurrentFirstUse(t *testing.T) {
	drafts := []string{"http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2019-09/schema", "https://json-schema.org/draft/2020-12/schema"}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			doc := map[string]any{"$schema": drafts[i%len(drafts)], "type": "object", "required": []any{"a"}}
			c := jsonschema.NewCompiler()
			if err := c.AddResource(testURL, doc); err != nil {
				t.Error(err)
				return
			}
			s, err := c.Compile(testURL)
			if err != nil {
				t.Error(err)
				return
			}
			if s.Validate(map[string]any{}) == nil {
				t.Error("missing a accepted")
			}
		})
	}
	wg.Wait()
}

// TestInvalidJSONValue: a Go value that is not JSON is named by its type.
func TestInvalidJSONValue(t *testing.T) {
	s := compile(t, `{"type":"number"}`)
	err := s.Validate(math.NaN())
	if err == nil || !strings.Contains(err.Error(), "invalid jsonType float64") {
		t.Errorf("got %v", err)
	}
}
