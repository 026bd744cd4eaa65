package cli

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// forge copies the bundle src to a new directory with the state of the
// last State record of the chat changed by edit, the hash chain and
// bundle.json made to fit: a bundle whose journal the code does not
// derive, though nothing in it is broken.
func forge(t *testing.T, src string, edit func(*schema.Map) *schema.Map) string {
	t.Helper()
	b, err := replay.Read(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "forged")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	last := -1
	for i, r := range b.Records {
		if r.Kind == world.KindState && strings.Contains(string(r.Payload), "demiurge/Chat@2") {
			last = i
		}
	}
	if last < 0 {
		t.Fatal("no chat state in the bundle")
	}
	sr, err := world.DecodeState(b.Records[last])
	if err != nil {
		t.Fatal(err)
	}
	sv, err := schema.Decode(b.Blobs[sr.State])
	if err != nil {
		t.Fatal(err)
	}
	blob, err := schema.Encode(edit(sv.(*schema.Map)))
	if err != nil {
		t.Fatal(err)
	}
	ref := cas.Sum(blob)
	d := ref.Digest()
	if err := os.WriteFile(filepath.Join(dir, "blobs", hex.EncodeToString(d[:])), blob, 0o644); err != nil {
		t.Fatal(err)
	}
	pv, err := schema.Decode(b.Records[last].Payload)
	if err != nil {
		t.Fatal(err)
	}
	if b.Records[last].Payload, err = schema.Encode(pv.(*schema.Map).With("state", ref.String())); err != nil {
		t.Fatal(err)
	}
	var jb []byte
	prev := journal.Genesis(b.Manifest.World)
	for _, r := range b.Records {
		e, err := journal.Record{Seq: r.Seq, Kind: r.Kind, Payload: r.Payload, Prev: prev}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		prev = cas.Sum(e)
		jb = append(jb, e...)
	}
	if err := os.WriteFile(filepath.Join(dir, "journal.cbor"), jb, 0o644); err != nil {
		t.Fatal(err)
	}
	m := b.Manifest
	m.HeadHash = prev.String()
	js, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "bundle.json"), append(js, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

var keptLine = regexp.MustCompile(`(?m)^  demiurge --store (\S+) cas get --json (blake3:[0-9a-f]{64})   # the (journal's|replayed) state$`)

// TestReplayKeepsStates: a replay that diverges at a chat's state shows
// where the states differ, and keeps both in a store of their own, where
// cas get reads them; the store replayed is left unchanged.
func TestReplayKeepsStates(t *testing.T) {
	forged := forge(t, filepath.Join("..", "testdata", "sessions", "single-tool"), func(m *schema.Map) *schema.Map {
		return m.With("title", "forged")
	})
	check := func(r result) {
		t.Helper()
		if r.code != 1 {
			t.Fatalf("replay of a forged session: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, "the state of demiurge/Chat@2 (key \"main\") differs at 1 path:\n  title: \"forged\" → \"main\"\n") {
			t.Errorf("the report does not show the title's change:\n%s", r.stderr)
		}
		kept := keptLine.FindAllStringSubmatch(r.stderr, -1)
		if len(kept) != 2 {
			t.Fatalf("the report names %d kept states; want 2:\n%s", len(kept), r.stderr)
		}
		for _, k := range kept {
			t.Cleanup(func() { os.RemoveAll(k[1]) })
			out := mustRun(t, 0, "", "--store", k[1], "cas", "get", "--json", k[2])
			want := `"title":"main"`
			if k[3] == "journal's" {
				want = `"title":"forged"`
			}
			if !strings.Contains(out.stdout, want) {
				t.Errorf("the %s state %s: %.200s; want %s", k[3], k[2], out.stdout, want)
			}
		}
	}
	check(run(t, nil, "", "replay", forged))

	st := filepath.Join(t.TempDir(), "store")
	mustRun(t, 0, "", "--store", st, "import", forged)
	requireStoreUnchanged(t, st, func() {
		check(run(t, nil, "", "--store", st, "replay", "--world", "main", "--manifest", filepath.Join(forged, "air"), "--from-genesis"))
	})
}
