package cassette

import (
	"context"
	"encoding/hex"
	"fmt"
	"github.com/demiurge-dev/demiurge/adapters/llm"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
)

// record is a journal record of a test bundle; payload nil is an empty
// payload, raw (when set) is used as is.
type record struct {
	kind    string
	payload schema.Value
	raw     []byte
}

func intent(hash, kind string) record {
	return record{kind: "Intent", payload: schema.Record("intent", hash, "kind", kind, "params", schema.Record())}
}

func receipt(hash, status string, payload schema.Value, errText string) record {
	m := schema.Record("intent", hash, "status", status, "adapter", "llm")
	if payload != nil {
		m = m.With("payload", payload)
	}
	if errText != "" {
		m = m.With("error", errText)
	}
	return record{kind: "Receipt", payload: m}
}

// journalBytes encodes records as a bundle's journal.cbor: a CBOR sequence
// of chained records, as replay.Export writes it.
func journalBytes(t testing.TB, recs ...record) []byte {
	t.Helper()
	var out []byte
	prev := journal.Genesis("main")
	for i, r := range recs {
		p := r.raw
		if p == nil && r.payload != nil {
			var err error
			if p, err = schema.Encode(r.payload); err != nil {
				t.Fatal(err)
			}
		}
		b, err := journal.Record{Seq: uint64(i + 1), Kind: r.kind, Payload: p, Prev: prev}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		prev = cas.Sum(b)
		out = append(out, b...)
	}
	return out
}

// writeBundle writes a bundle with the given journal and blobs into a new
// directory and returns it.
func writeBundle(t testing.TB, journalCBOR []byte, blobs ...[]byte) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "journal.cbor"), journalCBOR, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "blobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range blobs {
		writeBlob(t, dir, cas.Sum(b), b)
	}
	return dir
}

// writeBlob writes b under the name of ref.
func writeBlob(t testing.TB, dir string, ref cas.Ref, b []byte) {
	t.Helper()
	d := ref.Digest()
	if err := os.WriteFile(filepath.Join(dir, "blobs", hex.EncodeToString(d[:])), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// answer is an llm.generate receipt payload whose text is text and which
// refers to the given blobs.
func answer(text string, refs ...cas.Ref) *schema.Map {
	calls := []schema.Value{}
	for _, r := range refs {
		calls = append(calls, r.String())
	}
	return schema.Record("output_text", text, "output_ref", cas.Sum([]byte(text)).String(), "tool_call_refs", calls,
		"model", "gpt-test", "finish_reason", "stop")
}

// a session of three llm.generate calls: the first refers to a tool call
// blob that refers to another blob, the second failed, the third timed
// out; between them, other effects and a receipt that arrives after a
// later intent.
var (
	nested   = []byte(`{"arguments":"{}"}`)
	toolCall = []byte(`{"call_id":"c1","name":"echo","ref":"` + cas.Sum(nested).String() + `"}`)
	unused   = []byte("a blob no answer refers to")
	notThere = cas.Sum([]byte("a blob the bundle does not hold"))
)

func threeAnswers(t testing.TB) []byte {
	return journalBytes(t,
		record{kind: "Manifest", payload: schema.Record("manifest", cas.Sum(nil).String())},
		intent("i1", "llm.generate"),
		receipt("i1", effects.StatusOK, answer("first", cas.Sum(toolCall), notThere, cas.Sum(toolCall)), ""),
		intent("w1", "workspace.call"),
		receipt("w1", effects.StatusOK, schema.Record("stdout", "not an answer"), ""),
		intent("i2", "llm.generate"),
		intent("i3", "llm.generate"),
		receipt("i2", effects.StatusError, nil, "llm.generate: 429 rate limited"),
		receipt("i3", effects.StatusTimeout, nil, "deadline exceeded"),
		receipt("nobody", effects.StatusOK, answer("an unknown intent's"), ""),
	)
}

// failingStore is a memory store whose Put fails.
type failingStore struct {
	*cas.Memory
	err error
}

func (s failingStore) Put(context.Context, []byte) (cas.Ref, error) { return cas.Ref{}, s.err }

// countingStore is a memory store that counts Puts.
type countingStore struct {
	*cas.Memory
	puts atomic.Int64
}

func (s *countingStore) Put(ctx context.Context, b []byte) (cas.Ref, error) {
	s.puts.Add(1)
	return s.Memory.Put(ctx, b)
}

// loose is a loose cassette's options: the tests of how answers are
// played make requests of their own.
var loose = &Options{Loose: true}

func newCall(store cas.Store, params schema.Value, progress func(string)) *effects.Call {
	return &effects.Call{Intent: &effects.Intent{Kind: "llm.generate"}, Params: params, CAS: store, Progress: progress}
}

func TestRun(t *testing.T) {
	dir := writeBundle(t, threeAnswers(t), toolCall, nested, unused)
	var warned []int
	c, err := Open(dir, &Options{Loose: true, Warn: func(_ *effects.Call, m *Mismatch) { warned = append(warned, m.Call) }})
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() != 3 {
		t.Fatalf("Len() = %d; want 3", c.Len())
	}
	store := &countingStore{Memory: cas.NewMemory()}
	var progress []string
	// A loose cassette gives requests that do not match the recording
	// (any model, any messages) the recorded answers in order, and warns.
	for i, tc := range []struct {
		params schema.Value
		status string
		want   schema.Value // payload when ok
		err    string
	}{
		{params: schema.Record("model", "gpt-test"), status: effects.StatusOK, want: answer("first", cas.Sum(toolCall), notThere, cas.Sum(toolCall))},
		{params: schema.Record("model", "another model", "message_refs", []schema.Value{cas.Sum(nil).String()}),
			status: effects.StatusError, err: "llm.generate: 429 rate limited"},
		{params: nil, status: effects.StatusTimeout, err: "deadline exceeded"},
		{params: schema.Record("model", "gpt-test"), status: effects.StatusError,
			err: "the cassette " + dir + " holds 3 model answers and this is call 4; record a longer session"},
		{params: schema.Record("model", "gpt-test"), status: effects.StatusError,
			err: "the cassette " + dir + " holds 3 model answers and this is call 5; record a longer session"},
	} {
		r := c.Run(t.Context(), newCall(store, tc.params, func(s string) { progress = append(progress, s) }))
		if r.Status != tc.status || r.Error != tc.err || r.AdapterID != "cassette" {
			t.Errorf("call %d: receipt %s %q from %q; want %s %q from cassette", i+1, r.Status, r.Error, r.AdapterID, tc.status, tc.err)
		}
		if tc.want != nil && !schema.Equal(r.Payload, tc.want) {
			t.Errorf("call %d: payload %s; want %s", i+1, schema.String(r.Payload), schema.String(tc.want))
		}
		if tc.want == nil && r.Payload != nil {
			t.Errorf("call %d: payload %s; want none", i+1, schema.String(r.Payload))
		}
	}
	if strings.Join(progress, "|") != "first" {
		t.Errorf("progress %q; want the first answer's text", progress)
	}
	if fmt.Sprint(warned) != "[1 2 3]" {
		t.Errorf("warned of calls %v; want [1 2 3]", warned)
	}
	// The tool call blob and the blob it refers to are stored; the blob no
	// answer refers to is not, and the ref the bundle lacks is skipped.
	for _, b := range [][]byte{toolCall, nested} {
		if ok, err := store.Has(t.Context(), cas.Sum(b)); !ok || err != nil {
			t.Errorf("blob %s not stored: %v", b, err)
		}
	}
	if store.Len() != 2 || store.puts.Load() != 2 {
		t.Errorf("%d blobs stored in %d puts; want 2 in 2 (each once, though the answer names one twice)", store.Len(), store.puts.Load())
	}
}

// TestRunProgress: progress is the answer's text, if any; a call without a
// progress function works.
func TestRunProgress(t *testing.T) {
	dir := writeBundle(t, journalBytes(t,
		intent("a", "llm.generate"), receipt("a", effects.StatusOK, answer(""), ""),
		intent("b", "llm.generate"), receipt("b", effects.StatusOK, answer("text"), ""),
		intent("c", "llm.generate"), receipt("c", effects.StatusOK, answer("more"), "")))
	c, err := Open(dir, loose)
	if err != nil {
		t.Fatal(err)
	}
	if m := c.Model(); m != "" {
		t.Errorf("Model() = %q; want none: the recorded params name no model", m)
	}
	var progress []string
	for _, f := range []func(string){func(s string) { progress = append(progress, s) }, func(s string) { progress = append(progress, s) }, nil} {
		if r := c.Run(t.Context(), newCall(cas.NewMemory(), nil, f)); r.Status != effects.StatusOK {
			t.Fatalf("receipt %s %q", r.Status, r.Error)
		}
	}
	if strings.Join(progress, "|") != "text" {
		t.Errorf("progress %q; want [text]", progress)
	}
}

// TestRunStoreFails: an answer whose blobs cannot be stored is an error
// that names the answer.
func TestRunStoreFails(t *testing.T) {
	c, err := Open(writeBundle(t, threeAnswers(t), toolCall, nested), loose)
	if err != nil {
		t.Fatal(err)
	}
	r := c.Run(t.Context(), newCall(failingStore{cas.NewMemory(), cas.ErrReadOnly}, nil, nil))
	if r.Status != effects.StatusError || r.Error != "answer 1: cas: store is read-only" {
		t.Errorf("receipt %s %q; want error %q", r.Status, r.Error, "answer 1: cas: store is read-only")
	}
}

// TestRunConcurrent: concurrent calls get every answer exactly once.
func TestRunConcurrent(t *testing.T) {
	const n = 20
	var recs []record
	for i := range n {
		id := fmt.Sprintf("i%d", i)
		recs = append(recs, intent(id, "llm.generate"), receipt(id, effects.StatusOK, answer(id), ""))
	}
	c, err := Open(writeBundle(t, journalBytes(t, recs...)), loose)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range n + 5 {
		wg.Go(func() {
			r := c.Run(t.Context(), newCall(cas.NewMemory(), nil, nil))
			text, _ := schema.FieldPath(r.Payload, "output_text").(string)
			mu.Lock()
			defer mu.Unlock()
			seen[r.Status+" "+text]++
		})
	}
	wg.Wait()
	for i := range n {
		if k := fmt.Sprintf("ok i%d", i); seen[k] != 1 {
			t.Errorf("answer i%d given %d times", i, seen[k])
		}
	}
	if seen["error "] != 5 {
		t.Errorf("%d calls past the end; want 5 (%v)", seen["error "], seen)
	}
}

func TestOpenErrors(t *testing.T) {
	good := threeAnswers(t)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) string // returns the bundle dir
		want  string                    // a regexp; DIR is the bundle
	}{
		{"no bundle", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nothing") },
			`^cassette DIR: open DIR/journal.cbor: no such file or directory \(want a session bundle: demiurge export\)$`},
		{"journal is a directory", func(t *testing.T) string {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "journal.cbor"), 0o755); err != nil {
				t.Fatal(err)
			}
			return dir
		}, `^cassette DIR: DIR/journal.cbor is not a regular file \(a directory\): a bundle's journal must be a regular file`},
		{"empty journal", func(t *testing.T) string { return writeBundle(t, nil) },
			`^cassette DIR: the recording holds no model answers$`},
		{"no llm.generate", func(t *testing.T) string {
			return writeBundle(t, journalBytes(t, intent("w", "workspace.call"), receipt("w", effects.StatusOK, schema.Record(), "")))
		}, `^cassette DIR: the recording holds no model answers$`},
		{"receipt before its intent", func(t *testing.T) string {
			return writeBundle(t, journalBytes(t, receipt("i", effects.StatusOK, answer("x"), ""), intent("i", "llm.generate")))
		}, `^cassette DIR: the recording holds no model answers$`},
		{"not CBOR", func(t *testing.T) string { return writeBundle(t, []byte("this is not a journal")) },
			`^cassette DIR: journal record 1: `},
		{"truncated record", func(t *testing.T) string { return writeBundle(t, good[:len(good)-3]) },
			`^cassette DIR: journal record 10: `},
		{"a record that is not a journal record", func(t *testing.T) string {
			b, err := cas.Marshal(map[string]int{"seq": 1})
			if err != nil {
				t.Fatal(err)
			}
			return writeBundle(t, append(journalBytes(t, intent("i", "llm.generate")), b...))
		}, `^cassette DIR: journal record 2: `},
		{"payload not CBOR", func(t *testing.T) string {
			return writeBundle(t, journalBytes(t, intent("i", "llm.generate"), record{kind: "Receipt", raw: []byte{0xff, 0x00}}))
		}, `^cassette DIR: record 2: `},
		{"unknown status", func(t *testing.T) string {
			return writeBundle(t, journalBytes(t, intent("i", "llm.generate"), receipt("i", "done", answer("x"), "")))
		}, `^cassette DIR: record 2: receipt status "done", want ok, error or timeout$`},
		{"no status", func(t *testing.T) string {
			return writeBundle(t, journalBytes(t, intent("i", "llm.generate"), receipt("i", "", answer("x"), "")))
		}, `^cassette DIR: record 2: receipt status "", want ok, error or timeout$`},
		{"ok without a payload", func(t *testing.T) string {
			return writeBundle(t, journalBytes(t, intent("i", "llm.generate"), receipt("i", effects.StatusOK, nil, "")))
		}, `^cassette DIR: record 2: an ok llm.generate receipt without a payload record$`},
		{"ok with a payload that is not a record", func(t *testing.T) string {
			return writeBundle(t, journalBytes(t, intent("i", "llm.generate"), receipt("i", effects.StatusOK, "text", "")))
		}, `^cassette DIR: record 2: an ok llm.generate receipt without a payload record$`},
		{"blob under another name", func(t *testing.T) string {
			dir := writeBundle(t, good)
			writeBlob(t, dir, cas.Sum([]byte("x")), []byte("y"))
			return dir
		}, `^cassette DIR: blob ` + hexOf(cas.Sum([]byte("x"))) + ` does not match its name: its bytes hash to ` + cas.Sum([]byte("y")).String() + `$`},
		{"blobs is a file", func(t *testing.T) string {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "journal.cbor"), good, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "blobs"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return dir
		}, `^cassette DIR: .*DIR/blobs: not a directory$`},
		{"a directory among the blobs", func(t *testing.T) string {
			dir := writeBundle(t, good)
			if err := os.Mkdir(filepath.Join(dir, "blobs", "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			return dir
		}, `^cassette DIR: DIR/blobs/sub is not a regular file \(a directory\): a bundle's blob must be a regular file$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t)
			c, err := Open(dir, nil)
			if err == nil {
				t.Fatalf("Open = %d answers, no error; want %s", c.Len(), tc.want)
			}
			re := regexp.MustCompile(strings.ReplaceAll(tc.want, "DIR", regexp.QuoteMeta(dir)))
			if !re.MatchString(err.Error()) {
				t.Errorf("error %q\ndoes not match %q", err, re)
			}
		})
	}
}

func hexOf(r cas.Ref) string {
	d := r.Digest()
	return hex.EncodeToString(d[:])
}

// TestOpenNoBlobs: a bundle without a blobs directory has no blobs.
func TestOpenNoBlobs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "journal.cbor"), threeAnswers(t), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(dir, loose)
	if err != nil {
		t.Fatal(err)
	}
	store := cas.NewMemory()
	if r := c.Run(t.Context(), newCall(store, nil, nil)); r.Status != effects.StatusOK {
		t.Fatalf("receipt %s %q", r.Status, r.Error)
	}
	if store.Len() != 0 {
		t.Errorf("%d blobs stored from a bundle without blobs", store.Len())
	}
}

// TestRecordedSessions plays the model answers of the recorded sessions
// under testdata/sessions: as many as the trace shows, each a valid
// sys/LlmGenerateReceipt@1 whose output and tool call blobs land in the
// store.
func TestRecordedSessions(t *testing.T) {
	all, err := filepath.Glob("../../../testdata/sessions/*")
	var dirs []string // the sessions, not the README beside them
	for _, d := range all {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			dirs = append(dirs, d)
		}
	}
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no recorded sessions: %v", err)
	}
	answerLine := regexp.MustCompile(`(?m)^ *\d+ \S+ receipt \S+ \S+ from llm `)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			trace, err := os.ReadFile(filepath.Join(dir, "trace.txt"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := len(answerLine.FindAll(trace, -1))
			if c.Len() != want || want == 0 {
				t.Fatalf("Len() = %d; the trace shows %d model answers", c.Len(), want)
			}
			if m := c.Model(); m == "" || filepath.Base(dir) == "demo" && m != "gpt-test" {
				t.Errorf("Model() = %q; want the recorded model (the demo's is gpt-test)", m)
			}
			// The store holds the bundle's blobs, and each call makes the
			// recorded request: the strict cassette reads both sides.
			store := cas.NewMemory()
			for _, b := range c.blobs {
				if _, err := store.Put(t.Context(), b); err != nil {
					t.Fatal(err)
				}
			}
			v1 := &Cassette{answers: c.answers, blobs: c.blobs, opts: *loose} // the same answers, to a Chat@1 world
			for k := range c.Len() {
				// A world of sys/llm.generate@1 gets the answers as
				// recorded; one of @2 gets them as @2 would have said
				// them (the recorded model has no price: cost unknown).
				call1 := newCall(store, nil, nil)
				call1.Intent.Effect = llm.EffectV1
				r1 := v1.Run(t.Context(), call1)
				r := c.Run(t.Context(), newCall(store, c.answers[k].Params, nil))
				if r.AdapterID == "cassette" && r.Status == effects.StatusError && c.answers[k].Status == effects.StatusOK {
					t.Fatalf("answer %d: %s", k+1, r.Error)
				}
				if r.Status != effects.StatusOK {
					continue
				}
				if _, err := schema.Normalize(schema.BuiltinTypes, schema.RefType("sys/LlmGenerateReceipt@1"), r1.Payload); err != nil {
					t.Errorf("answer %d does not fit sys/LlmGenerateReceipt@1: %v", k+1, err)
				}
				if _, err := schema.Normalize(schema.BuiltinTypes, schema.RefType("sys/LlmGenerateReceipt@2"), r.Payload); err != nil {
					t.Errorf("answer %d does not fit sys/LlmGenerateReceipt@2: %v", k+1, err)
				}
				// The sessions of gpt-test, a model with no price, have no
				// cost; those of a priced model (claude-sonnet-5,
				// gemini-3.5-flash) keep theirs.
				cost := schema.FieldPath(r.Payload, "cost_microusd")
				if c.Model() == "gpt-test" && cost != nil {
					t.Errorf("answer %d of an unpriced model costs %v; want unknown (null)", k+1, cost)
				}
				if c.Model() != "gpt-test" && cost == nil {
					t.Errorf("answer %d of %s has no cost", k+1, c.Model())
				}
				refs := []schema.Value{schema.FieldPath(r.Payload, "output_ref")}
				calls, _ := schema.FieldPath(r.Payload, "tool_call_refs").([]schema.Value)
				for _, ref := range append(refs, calls...) {
					if ok, err := store.Has(t.Context(), cas.MustParseRef(ref.(string))); !ok || err != nil {
						t.Errorf("answer %d: %v is not in the store (%v)", k+1, ref, err)
					}
				}
			}
			if r := c.Run(t.Context(), newCall(store, nil, nil)); r.Status != effects.StatusError {
				t.Errorf("a call past the last answer: %s", r.Status)
			}
		})
	}
}

// FuzzDecodeAnswers: reading a bundle's journal never panics, and a
// cassette of what it reads answers every call.
func FuzzDecodeAnswers(f *testing.F) {
	f.Add(threeAnswers(f))
	f.Add(journalBytes(f, intent("i", "llm.generate"), receipt("i", "", nil, "")))
	f.Add(journalBytes(f, intent("i", "llm.generate"), record{kind: "Receipt", raw: []byte{0xff}}))
	// The recorded sessions are not seeds: minimizing inputs of their size
	// stalls a local fuzzing run; TestRecordedSessions reads them.
	f.Fuzz(func(t *testing.T, b []byte) {
		answers, err := decodeAnswers(b)
		if err != nil {
			return
		}
		c := &Cassette{dir: "fuzz", answers: answers, blobs: map[cas.Ref][]byte{}, opts: *loose}
		for k := range c.Len() + 1 {
			r := c.Run(t.Context(), newCall(cas.NewMemory(), nil, nil))
			if k < c.Len() && r.Status != answers[k].Status {
				t.Fatalf("answer %d: status %s; want %s (%s)", k+1, r.Status, answers[k].Status, r.Error)
			}
		}
	})
}
