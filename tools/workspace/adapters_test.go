package workspace

import (
	"context"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
)

// effectSchemas returns the params and receipt schemas of a built-in
// effect kind.
func effectSchemas(t *testing.T, kind string) (params, receipt string) {
	t.Helper()
	ef, ok := schema.BuiltinEffectKind(kind)
	if !ok {
		t.Fatalf("no built-in effect %s", kind)
	}
	return ef.ParamsSchema, ef.ReceiptSchema
}

// runEffect normalizes params as the gate does, runs the adapter and checks
// an ok receipt against the receipt schema, as the world does.
func runEffect(t *testing.T, ads map[string]effects.Adapter, store cas.Store, kind string, params schema.Value) effects.Receipt {
	t.Helper()
	ps, rs := effectSchemas(t, kind)
	p, err := schema.Normalize(schema.BuiltinTypes, schema.RefType(ps), params)
	if err != nil {
		t.Fatalf("%s params: %v", kind, err)
	}
	r := ads[kind].Run(t.Context(), &effects.Call{Intent: &effects.Intent{Kind: kind}, Params: p, CAS: store})
	if r.Status == effects.StatusOK {
		if _, err := schema.Normalize(schema.BuiltinTypes, schema.RefType(rs), r.Payload); err != nil {
			t.Fatalf("%s receipt %s does not fit %s: %v", kind, schema.String(r.Payload), rs, err)
		}
	}
	return r
}

func field(v schema.Value, name string) schema.Value {
	f, _ := v.(*schema.Map).Get(name)
	return f
}

func TestAdapters(t *testing.T) {
	w := newFakeWorld()
	store := cas.NewMemory()
	svc := NewService(store, CellHeads(w.state), nil)
	ads := Adapters(svc)
	if len(ads) != 8 {
		t.Fatalf("%d adapters", len(ads))
	}
	ok := func(kind string, params schema.Value) schema.Value {
		t.Helper()
		r := runEffect(t, ads, store, kind, params)
		if r.Status != effects.StatusOK || r.AdapterID != AdapterID {
			t.Fatalf("%s: %+v", kind, r)
		}
		return r.Payload
	}
	bad := func(kind string, params schema.Value, msg string) {
		t.Helper()
		r := runEffect(t, ads, store, kind, params)
		if r.Status != effects.StatusError || !strings.Contains(r.Error, msg) {
			t.Errorf("%s: %+v; want an error containing %q", kind, r, msg)
		}
	}

	res := ok("workspace.resolve", schema.Record("workspace", "alpha"))
	if schema.String(res) != `{"head":null,"exists":false,"root_hash":null,"resolved_version":null}` {
		t.Errorf("resolve of a new workspace: %s", schema.String(res))
	}
	empty := field(ok("workspace.empty_root", schema.Record("workspace", "alpha")), "root_hash").(string)
	if empty != EmptyRootRef.String() {
		t.Errorf("empty_root %s; want %s", empty, EmptyRootRef)
	}
	wr := ok("workspace.write_bytes", schema.Record("root_hash", empty, "path", "seed/alpha.txt", "bytes", []byte("seed marker\n")))
	r1 := field(wr, "new_root_hash").(string)
	if field(wr, "blob_hash") != cas.Sum([]byte("seed marker\n")).String() {
		t.Errorf("blob_hash %v", field(wr, "blob_hash"))
	}
	r2 := field(ok("workspace.write_bytes", schema.Record("root_hash", r1, "path", "README.txt", "bytes", []byte("hi"), "mode", ModeExec)), "new_root_hash").(string)

	list := ok("workspace.list", schema.Record("root_hash", r2, "scope", "subtree", "limit", uint64(200)))
	if got := schema.String(field(list, "entries")); !strings.Contains(got, `"path":"README.txt"`) || !strings.Contains(got, `"path":"seed/alpha.txt"`) || strings.Count(got, `"path"`) != 3 {
		t.Errorf("list subtree: %s", got)
	}
	page := ok("workspace.list", schema.Record("root_hash", r2, "limit", uint64(1)))
	if field(page, "next_cursor") != "README.txt" {
		t.Errorf("list page: %s", schema.String(page))
	}
	bad("workspace.list", schema.Record("root_hash", r2, "scope", "everything", "limit", uint64(0)), `scope "everything" is not "dir" or "subtree"`)

	ref := ok("workspace.read_ref", schema.Record("root_hash", r2, "path", "README.txt"))
	if schema.String(ref) != `{"hash":"`+cas.Sum([]byte("hi")).String()+`","kind":"file","mode":493,"size":2}` {
		t.Errorf("read_ref: %s", schema.String(ref))
	}
	if v := ok("workspace.read_ref", schema.Record("root_hash", r2, "path", "missing")); v != nil {
		t.Errorf("read_ref of a missing path: %s", schema.String(v))
	}
	if b := ok("workspace.read_bytes", schema.Record("root_hash", r2, "path", "seed/alpha.txt", "range", schema.Record("start", uint64(5), "end", uint64(11)))); string(b.([]byte)) != "marker" {
		t.Errorf("read_bytes range: %q", b)
	}
	bad("workspace.read_bytes", schema.Record("root_hash", r2, "path", "../../etc/passwd"), "escapes the workspace")
	bad("workspace.write_bytes", schema.Record("root_hash", r2, "path", "/abs", "bytes", []byte{}), "is absolute")
	bad("workspace.write_bytes", schema.Record("root_hash", r2, "path", "x", "bytes", []byte{}, "mode", uint64(0o4755)), "not a permission mode")
	bad("workspace.read_bytes", schema.Record("root_hash", cas.Sum([]byte("nothing")).String(), "path", "x"), "not found")

	r3 := field(ok("workspace.remove", schema.Record("root_hash", r2, "path", "seed")), "new_root_hash").(string)
	diff := ok("workspace.diff", schema.Record("root_a", r2, "root_b", r3))
	if got := schema.String(diff); got != `{"changes":[{"kind":"removed","path":"seed","new_hash":null,"old_hash":"`+mustRef(t, store, r2, "seed")+`"},{"kind":"removed","path":"seed/alpha.txt","new_hash":null,"old_hash":"`+cas.Sum([]byte("seed marker\n")).String()+`"}]}` {
		t.Errorf("diff: %s", got)
	}
	bad("workspace.remove", schema.Record("root_hash", r3, "path", "seed"), "not found")

	// resolve sees the world's versions and the service's own commits.
	if err := w.record(tools.Commit{Workspace: "alpha", Root: cas.MustParseRef(r2)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Update(context.Background(), "alpha", func(context.Context, cas.Ref) (cas.Ref, error) { return cas.MustParseRef(r3), nil }); err != nil {
		t.Fatal(err)
	}
	if got := schema.String(ok("workspace.resolve", schema.Record("workspace", "alpha"))); got != `{"head":2,"exists":true,"root_hash":"`+r3+`","resolved_version":2}` {
		t.Errorf("resolve newest: %s", got)
	}
	if got := schema.String(ok("workspace.resolve", schema.Record("workspace", "alpha", "version", uint64(1)))); got != `{"head":2,"exists":true,"root_hash":"`+r2+`","resolved_version":1}` {
		t.Errorf("resolve version 1: %s", got)
	}
	if got := schema.String(ok("workspace.resolve", schema.Record("workspace", "alpha", "version", uint64(7)))); got != `{"head":2,"exists":true,"root_hash":null,"resolved_version":null}` {
		t.Errorf("resolve version 7: %s", got)
	}
	bad("workspace.resolve", schema.Record("workspace", "a/b"), "invalid workspace name")
}

func mustRef(t *testing.T, g cas.Getter, root, p string) string {
	e, err := ReadRef(t.Context(), g, cas.MustParseRef(root), p)
	if err != nil {
		t.Fatal(err)
	}
	return e.Hash.String()
}
