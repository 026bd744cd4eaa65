package plans

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/*.txtar")

// testHost records what an instance does.
type testHost struct {
	*schema.Catalog
	out     *bytes.Buffer
	deny    map[string]string // effect kind → denial
	intents map[string]cas.Ref
}

func (h *testHost) Emit(in *Instance, s *schema.Step, params schema.Value, key []byte) (cas.Ref, error) {
	if why, ok := h.deny[s.Kind]; ok {
		fmt.Fprintf(h.out, "  denied %s: %s\n", s.Kind, why)
		return cas.Ref{}, fmt.Errorf("denied: %s", why)
	}
	ef, _ := h.EffectKind(s.Kind)
	norm, err := schema.Normalize(h, schema.RefType(ef.ParamsSchema), params)
	if err != nil {
		return cas.Ref{}, err
	}
	ref, err := schema.Ref(schema.Record("kind", s.Kind, "params", norm, "plan", in.ID, "step", s.ID, "key", key))
	if err != nil {
		return cas.Ref{}, err
	}
	h.intents[s.EffectIDAs] = ref
	fmt.Fprintf(h.out, "  emit %s %s as %s key=%x\n", s.Kind, schema.ValueJSON(norm), s.EffectIDAs, key)
	return ref, nil
}

func (h *testHost) Raise(in *Instance, s *schema.Step, event string, v schema.Value) error {
	nv, err := schema.Normalize(h, schema.RefType(event), v)
	if err != nil {
		return err
	}
	fmt.Fprintf(h.out, "  raise %s %s\n", event, schema.ValueJSON(nv))
	return nil
}

// TestPlanScripts runs testdata/*.txtar: AIR files, a "script" of
// commands, and the "want" output. Commands:
//
//	start PLAN INPUT_JSON        start an instance (correlation from the input's "id" if any)
//	deny KIND REASON             refuse effects of KIND from now on
//	receipt HANDLE PAYLOAD_JSON  deliver the receipt of the effect under HANDLE
//	fail HANDLE MESSAGE          deliver a failed receipt
//	event SCHEMA VALUE_JSON      offer an event
//	roundtrip                    snapshot and restore the instance
//
// After each command the instance runs; the output shows what it did and
// its step states.
func TestPlanScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txtar")
	if len(files) == 0 {
		t.Fatal("no scripts")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var srcs []schema.Source
			var script string
			wantIdx := -1
			for i, f := range ar.Files {
				switch f.Name {
				case "script":
					script = string(f.Data)
				case "want":
					wantIdx = i
				default:
					srcs = append(srcs, schema.Source{Name: f.Name, Data: f.Data})
				}
			}
			cat, err := schema.LoadSources(srcs, nil)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			got := runScript(t, cat, script)
			if wantIdx < 0 {
				ar.Files = append(ar.Files, txtar.File{Name: "want"})
				wantIdx = len(ar.Files) - 1
			}
			if string(ar.Files[wantIdx].Data) == got {
				return
			}
			if *update {
				ar.Files[wantIdx].Data = []byte(got)
				if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			t.Errorf("output differs (rerun with -update and review the diff)\ngot:\n%s\nwant:\n%s", got, ar.Files[wantIdx].Data)
		})
	}
}

func runScript(t *testing.T, cat *schema.Catalog, script string) string {
	var out bytes.Buffer
	h := &testHost{Catalog: cat, out: &out, deny: map[string]string{}, intents: map[string]cas.Ref{}}
	progs := NewPrograms(cat)
	var in *Instance
	var prog *Program
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fmt.Fprintf(&out, "> %s\n", line)
		cmd, rest, _ := strings.Cut(line, " ")
		arg1, arg2, _ := strings.Cut(rest, " ")
		switch cmd {
		case "start":
			p, err := progs.Get(arg1)
			if err != nil {
				t.Fatal(err)
			}
			d := p.Def
			input, err := schema.NormalizeJSON(cat, schema.RefType(d.Input), []byte(arg2))
			if err != nil {
				fmt.Fprintf(&out, "  error: %v\n", err)
				continue
			}
			var corr schema.Value
			if m, ok := input.(*schema.Map); ok {
				corr, _ = m.Get("id")
			}
			prog, in = p, Start(p, 1, input, corr, nil)
		case "deny":
			h.deny[arg1] = arg2
			continue
		case "receipt", "fail":
			ref, ok := h.intents[arg1]
			if !ok {
				t.Fatalf("no effect under handle %s", arg1)
			}
			if cmd == "fail" {
				in.DeliverReceipt(ref, Receipt{Err: arg2})
				break
			}
			ef := emittedKind(prog, arg1)
			d, _ := cat.EffectKind(ef)
			payload, err := schema.NormalizeJSON(cat, schema.RefType(d.ReceiptSchema), []byte(arg2))
			if err != nil {
				t.Fatalf("receipt: %v", err)
			}
			in.DeliverReceipt(ref, Receipt{Payload: payload})
		case "event":
			v, err := schema.NormalizeJSON(cat, schema.RefType(arg1), []byte(arg2))
			if err != nil {
				t.Fatalf("event: %v", err)
			}
			if in.OfferEvent(prog, arg1, v) {
				fmt.Fprintf(&out, "  taken\n")
			}
		case "roundtrip":
			enc := in.Encode()
			b1, err := schema.Encode(enc)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := schema.Decode(b1)
			if err != nil {
				t.Fatal(err)
			}
			in2, err := DecodeInstance(dec)
			if err != nil {
				t.Fatal(err)
			}
			if err := in2.Check(prog); err != nil {
				t.Fatal(err)
			}
			b2, _ := schema.Encode(in2.Encode())
			if !bytes.Equal(b1, b2) {
				t.Fatalf("snapshot round trip changed the instance")
			}
			in = in2
			fmt.Fprintf(&out, "  restored (%d bytes)\n", len(b1))
		default:
			t.Fatalf("unknown command %q", cmd)
		}
		in.Run(prog, h)
		switch in.Status {
		case Running:
			fmt.Fprintf(&out, "  running: %s\n", in.Describe(prog))
		case EndedOK:
			fmt.Fprintf(&out, "  ended ok result=%s: %s\n", schema.ValueJSON(in.Result), in.Describe(prog))
		case EndedError:
			fmt.Fprintf(&out, "  ended with error [%s] %v\n", in.Err.Code, in.Err)
		}
	}
	return out.String()
}

func emittedKind(p *Program, handle string) string {
	for _, s := range p.Def.Steps {
		if s.EffectIDAs == handle {
			return s.Kind
		}
	}
	return ""
}
