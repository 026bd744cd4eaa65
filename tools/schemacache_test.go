package tools

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestCompileSchema: a schema is compiled once per name and bytes, and
// the compiled schema validates as a fresh one does; an error is the
// same each time; off, the cache compiles every time.
func TestCompileSchema(t *testing.T) {
	defer SetSchemaCache(true)
	raw := []byte(`{"type":"object","properties":{"path":{"type":"string","pattern":"^[a-z]+$"}},"required":["path"]}`)
	a, err := CompileSchema("mem:///tools/x.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := CompileSchema("mem:///tools/x.json", append([]byte(nil), raw...))
	if err != nil || b != a {
		t.Errorf("the same schema again: %p, %v; want the one compiled first (%p)", b, err, a)
	}
	if c, _ := CompileSchema("mem:///tools/y.json", raw); c == a {
		t.Error("another name shares the first name's schema")
	}
	if c, _ := CompileSchema("mem:///tools/x.json", []byte(`{"type":"object"}`)); c == a {
		t.Error("another schema under the same name is the first one")
	}
	if err := a.Validate(map[string]any{"path": "abc"}); err != nil {
		t.Errorf("a valid value: %v", err)
	}
	if err := a.Validate(map[string]any{"path": "ABC"}); err == nil {
		t.Error("an invalid value passes")
	}
	for _, bad := range []string{`{"type": 3}`, `{"$ref": "https://example.com/x.json"}`, `{nope`} {
		_, e1 := CompileSchema("mem:///tools/bad.json", []byte(bad))
		_, e2 := CompileSchema("mem:///tools/bad.json", []byte(bad))
		if e1 == nil || e2 == nil || e1.Error() != e2.Error() {
			t.Errorf("%s: %v, then %v; want the same error twice", bad, e1, e2)
		}
	}
	if !SetSchemaCache(false) {
		t.Error("the cache was not on")
	}
	c1, _ := CompileSchema("mem:///tools/x.json", raw)
	c2, _ := CompileSchema("mem:///tools/x.json", raw)
	if c1 == c2 || c1 == a {
		t.Error("with the cache off, a schema is not compiled again")
	}
	SetSchemaCache(true)

	// Bounded: past schemaCacheMax schemas, it starts again.
	for i := range schemaCacheMax + 1 {
		if _, err := CompileSchema(fmt.Sprintf("mem:///tools/n%d.json", i), []byte(`{"type":"object"}`)); err != nil {
			t.Fatal(err)
		}
	}
	schemas.mu.Lock()
	n := len(schemas.m)
	schemas.mu.Unlock()
	if n > schemaCacheMax {
		t.Errorf("the cache holds %d schemas, more than %d", n, schemaCacheMax)
	}
}

// Worlds open at once: the cache is shared by goroutines (-race).
func TestCompileSchemaConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				name := fmt.Sprintf("mem:///tools/c%d.json", j%5)
				s, err := CompileSchema(name, []byte(`{"type":"object","required":["a"]}`))
				if err != nil {
					t.Error(err)
					return
				}
				if err := s.Validate(map[string]any{}); err == nil || !strings.Contains(err.Error(), "a") {
					t.Errorf("goroutine %d: an object without a: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
