package schema_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// counterVariant loads examples/counter with its Phase's Done arm renamed
// and a schema added, into st.
func counterVariant(t *testing.T, st *cas.Memory, edit bool) *schema.Catalog {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"manifest.air.json", "reducer.air.json", "types.air.json"} {
		b, err := os.ReadFile(filepath.Join("..", "examples", "counter", f))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if edit && f == "types.air.json" {
			s = strings.Replace(s, `"Done"`, `"Finished"`, 1)
			s = strings.Replace(s, "[", `[{"$kind": "defschema", "name": "counter/Extra@1", "type": {"text": {}}},`, 1)
		}
		if edit && f == "manifest.air.json" {
			s = strings.Replace(s, `{"name": "counter/Phase@1"},`, `{"name": "counter/Phase@1"}, {"name": "counter/Extra@1"},`, 1)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := schema.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Nodes(func(_ cas.Ref, node []byte) error { _, err := st.Put(context.Background(), node); return err }); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDiffManifests: a changed def and an added one, by kind and name,
// with both nodes; the same manifest differs in nothing; a manifest the
// store lacks, or a node that is not a manifest, is an error.
func TestDiffManifests(t *testing.T) {
	ctx := context.Background()
	st := cas.NewMemory()
	a, b := counterVariant(t, st, false), counterVariant(t, st, true)
	d, err := schema.DiffManifests(ctx, st, a.ManifestRef(), b.ManifestRef())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range d.Defs {
		got = append(got, c.Kind+" "+c.Name)
		if c.Err != nil {
			t.Errorf("%s: %v", c.Name, c.Err)
		}
	}
	if strings.Join(got, ", ") != "defschema counter/Extra@1, defschema counter/Phase@1" {
		t.Fatalf("defs %v", got)
	}
	if extra := d.Defs[0]; extra.A.Valid() || extra.ValueA != nil || !extra.B.Valid() || extra.ValueB == nil {
		t.Errorf("the added def: %+v", extra)
	}
	if !strings.Contains(string(schema.ValueJSON(d.Defs[1].ValueB)), "Finished") {
		t.Errorf("the changed def's new node: %s", schema.ValueJSON(d.Defs[1].ValueB))
	}
	if d.RestA != nil {
		t.Errorf("the manifests' own fields differ: %v", d.RestA)
	}
	if same, err := schema.DiffManifests(ctx, st, a.ManifestRef(), a.ManifestRef()); err != nil || len(same.Defs) != 0 || same.RestA != nil {
		t.Errorf("a manifest against itself: %+v, %v", same, err)
	}
	if _, err := schema.DiffManifests(ctx, st, a.ManifestRef(), cas.Sum([]byte("nothing"))); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("a missing manifest: %v", err)
	}
	def, _ := a.DefRef(schema.KindDefSchema, "counter/Phase@1")
	if _, err := schema.DiffManifests(ctx, st, def, a.ManifestRef()); err == nil || !strings.Contains(err.Error(), "not a manifest") {
		t.Errorf("a def for a manifest: %v", err)
	}
	// A def node the store lacks is noted, not fatal.
	bare := cas.NewMemory()
	for _, r := range []cas.Ref{a.ManifestRef(), b.ManifestRef()} {
		n, err := st.Get(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bare.Put(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	d, err = schema.DiffManifests(ctx, bare, a.ManifestRef(), b.ManifestRef())
	if err != nil || len(d.Defs) != 2 || !errors.Is(d.Defs[1].Err, cas.ErrNotFound) {
		t.Errorf("defs missing from the store: %+v, %v", d, err)
	}
}
