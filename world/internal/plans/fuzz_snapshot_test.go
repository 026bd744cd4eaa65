package plans

import (
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/demiurge-dev/demiurge/schema"
)

// FuzzDecodeInstance: a snapshot of a plan instance that is not what
// Encode wrote is an error, never a panic.
func FuzzDecodeInstance(f *testing.F) {
	ar, err := txtar.ParseFile("testdata/fetch.txtar")
	if err != nil {
		f.Fatal(err)
	}
	var srcs []schema.Source
	for _, file := range ar.Files {
		if file.Name != "script" && file.Name != "want" {
			srcs = append(srcs, schema.Source{Name: file.Name, Data: file.Data})
		}
	}
	cat, err := schema.LoadSources(srcs, nil)
	if err != nil {
		f.Fatal(err)
	}
	p, err := NewPrograms(cat).Get("demo/fetch@1")
	if err != nil {
		f.Fatal(err)
	}
	input, err := schema.NormalizeJSON(cat, schema.RefType(p.Def.Input), []byte(`{"id": 7, "url": "https://example.com/a"}`))
	if err != nil {
		f.Fatal(err)
	}
	b, err := schema.Encode(Start(p, 1, input, nil, nil).Encode())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := schema.Decode(b)
		if err != nil {
			return
		}
		if in, err := DecodeInstance(v); err == nil {
			_ = in.Check(p)
		}
	})
}
