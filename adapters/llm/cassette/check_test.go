package cassette

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
)

// request is what a test's llm.generate call sends: its blobs and params.
type request struct {
	instructions string
	messages     []string // message blobs
	tools        string   // the tools blob
	choice       *llm.ToolChoice
	model        string
}

var (
	echoTool = `{"type":"function","name":"echo","description":"Echo the text.","parameters":{"type":"object","properties":{"text":{"type":"string","description":"what to say"}},"required":["text"],"additionalProperties":false},"strict":true}`
	prompt   = "You are a test.\n\n# echo\n\nEcho says what it is told.\n"
	// recorded is the recorded request: a user message, the model's call,
	// the tool's output (which names a journal head).
	recorded = request{
		instructions: prompt,
		messages: []string{
			`{"role":"user","content":"hi"}`,
			`[{"type":"function_call","call_id":"call_1","name":"echo","arguments":"{\"text\":\"hi\"}"}]`,
			`{"type":"function_call_output","call_id":"call_1","output":"{\"said\":\"hi\",\"head\":\"` + cas.Sum([]byte("head 1")).String() + `\"}"}`,
		},
		tools: `{"tools":[` + echoTool + `]}`,
		model: "gpt-test",
	}
)

// blobs returns the request's blobs and its params.
func (r request) blobs(t testing.TB) ([][]byte, schema.Value) {
	t.Helper()
	var blobs [][]byte
	p := llm.Params{Model: r.model, ToolChoice: r.choice}
	for _, m := range r.messages {
		blobs = append(blobs, []byte(m))
		p.MessageRefs = append(p.MessageRefs, cas.Sum([]byte(m)))
	}
	if r.tools != "" {
		blobs = append(blobs, []byte(r.tools))
		ref := cas.Sum([]byte(r.tools))
		p.ToolsRef = &ref
	}
	if r.instructions != "" {
		blobs = append(blobs, []byte(r.instructions))
		ref := cas.Sum([]byte(r.instructions))
		p.InstructionsRef = &ref
	}
	b, err := cas.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	v, err := schema.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return blobs, v
}

// recording writes a bundle whose one model call made the request r.
func recording(t testing.TB, r request) string {
	t.Helper()
	blobs, params := r.blobs(t)
	in := intent("i1", "llm.generate")
	in.payload = in.payload.(*schema.Map).With("params", params)
	return writeBundle(t, journalBytes(t, in, receipt("i1", effects.StatusOK, answer("hello"), "")), blobs...)
}

// call is a call making the request r, its blobs in a store.
func call(t testing.TB, r request) *effects.Call {
	t.Helper()
	blobs, params := r.blobs(t)
	store := cas.NewMemory()
	for _, b := range blobs {
		if _, err := store.Put(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	return newCall(store, params, nil)
}

func TestStrict(t *testing.T) {
	with := func(f func(r *request)) request {
		r := recorded
		r.messages = append([]string(nil), recorded.messages...)
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name string
		req  request
		want []string // in the error, in order; none: the call is answered
	}{
		{"the recorded request", recorded, nil},
		{"another model", with(func(r *request) { r.model = "gpt-other" }), nil},
		{"a tool output naming another head", with(func(r *request) {
			r.messages[2] = strings.ReplaceAll(r.messages[2], cas.Sum([]byte("head 1")).String(), cas.Sum([]byte("head 2")).String())
		}), nil},
		{"another tool description", with(func(r *request) {
			r.tools = strings.ReplaceAll(r.tools, "Echo the text.", "Say the text again.")
			r.tools = strings.ReplaceAll(r.tools, "what to say", "the words")
		}), nil},
		{"the tools' own prompt changed", with(func(r *request) { r.instructions = prompt + "Echo now says it twice.\n" }), nil},
		{"another user message", with(func(r *request) { r.messages[0] = `{"role":"user","content":"bye"}` }), []string{
			"cassette DIR: model call 1 is not the recorded one: 1 part of its request differs from the recording's, a user message (the recorded answer answers the recorded request)\n",
			"transcript item 1 (user message):\n--- recorded\n+++ this run\n@@ -1,2 +1,2 @@\n-content: \"hi\"\n+content: \"bye\"\n role: \"user\"\n",
			"To replay this recording, send the messages it recorded (demiurge trace DIR shows them)",
			"demiurge run --cassette-loose, agent.CassetteLoose",
		}},
		{"a user message as text", with(func(r *request) { r.messages[0] = "hi there\nand more" }), []string{
			"transcript item 1 (user message):", "-content: \"hi\"\n+content: |\n+  hi there\n+  and more\n",
		}},
		{"another tool output", with(func(r *request) { r.messages[2] = strings.ReplaceAll(r.messages[2], `said\":\"hi`, `said\":\"ho`) }), []string{
			"transcript item 3 (function_call_output call_1):", "output: (JSON)\n   head: \"blake3:…\"\n-  said: \"hi\"\n+  said: \"ho\"\n",
		}},
		{"one more message", with(func(r *request) { r.messages = append(r.messages, `{"role":"user","content":"more"}`) }), []string{
			"transcript item 4 (user message):\n--- recorded\n+++ this run\n@@ -1,1 +1,2 @@\n-(none)\n+content: \"more\"\n+role: \"user\"\n",
		}},
		// The recorded request after the chat's earlier turns (the demo
		// run again in the same world): said in one line, with what to do.
		{"earlier turns", with(func(r *request) {
			r.messages = append([]string{`{"role":"user","content":"before"}`, `{"role":"assistant","content":"ok"}`}, r.messages...)
		}), []string{
			"cassette DIR: model call 1 is not the recorded one: the chat already holds 2 transcript items from earlier turns, which the recording did not: it began with a new chat. Run it in a world of its own: leave --world out",
		}},
		{"another parameter", with(func(r *request) { r.tools = strings.ReplaceAll(r.tools, `"required":["text"]`, `"required":[]`) }), []string{
			"tool echo:", "-  required:\n-    - \"text\"\n+  required: []\n",
		}},
		{"one more tool", with(func(r *request) {
			r.tools = `{"tools":[` + echoTool + `,{"type":"function","name":"shout","parameters":{"type":"object"}}]}`
		}), []string{"tool shout:\n--- recorded\n+++ this run\n", "-(none)\n+name: \"shout\"\n"}},
		{"another system prompt", with(func(r *request) { r.instructions = "You are a pirate.\n\n# echo\n" }), []string{
			"system prompt:", "-You are a test.\n+You are a pirate.\n",
		}},
		{"a tool choice", with(func(r *request) { r.choice = &llm.ToolChoice{Kind: llm.ToolChoiceRequired} }), []string{
			"tool_choice:", "-(none)\n+Required \n",
		}},
		{"everything", with(func(r *request) {
			r.instructions = "Other.\n"
			r.tools = ""
			r.messages = []string{`{"role":"user","content":"x"}`}
		}), []string{"5 parts of its request differ", "system prompt:", "tool echo:", "transcript item 1 (user message):", "… and 2 more\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := recording(t, recorded)
			c, err := Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := c.Run(t.Context(), call(t, tc.req))
			if tc.want == nil {
				if r.Status != effects.StatusOK {
					t.Fatalf("receipt %s: %s; want the recorded answer", r.Status, r.Error)
				}
				return
			}
			if r.Status != effects.StatusError || r.AdapterID != "cassette" || r.Payload != nil {
				t.Fatalf("receipt %s from %s, payload %v; want an error from the cassette", r.Status, r.AdapterID, r.Payload)
			}
			rest := r.Error
			for _, w := range tc.want {
				w = strings.ReplaceAll(w, "DIR", dir)
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("the error lacks (after what came before)\n%s\nerror:\n%s", w, r.Error)
				}
				rest = rest[i+len(w):]
			}
			// The program that plays the cassette names its own flag.
			if strings.Contains(r.Error, DefaultLooseHint) {
				c, err := Open(dir, &Options{LooseHint: "demiurge eval --cassette-loose"})
				if err != nil {
					t.Fatal(err)
				}
				r := c.Run(t.Context(), call(t, tc.req))
				if strings.Contains(r.Error, DefaultLooseHint) || !strings.Contains(r.Error, "use a loose cassette (demiurge eval --cassette-loose)") {
					t.Errorf("with Options.LooseHint, the error names demiurge run or not the hint:\n%s", r.Error)
				}
			}
			// Loose, the warning names what differs in a few words.
			var warned *Mismatch
			c, err = Open(dir, &Options{Loose: true, Warn: func(_ *effects.Call, m *Mismatch) { warned = m }})
			if err != nil {
				t.Fatal(err)
			}
			if r := c.Run(t.Context(), call(t, tc.req)); r.Status != effects.StatusOK || warned == nil {
				t.Fatalf("loose: receipt %s %q, warned %v; want the recorded answer and a warning", r.Status, r.Error, warned)
			}
			want := "cassette " + dir + ": model call 1 differs from the recording in " + briefs[tc.name] + "; answering with the recorded answer"
			if got := warned.Warning(); got != want {
				t.Errorf("Warning() = %q; want %q", got, want)
			}
		})
	}
}

// briefs are what TestStrict's loose warnings say differs.
var briefs = map[string]string{
	"another user message":   "a user message",
	"a user message as text": "a user message",
	"another tool output":    "a tool output",
	"one more message":       "an extra user message",
	"earlier turns":          "the chat's earlier turns (2 transcript items)",
	"another parameter":      "the tool echo",
	"one more tool":          "an extra tool shout",
	"another system prompt":  "the system prompt",
	"a tool choice":          "an extra tool choice",
	"everything":             "the system prompt, a missing tool echo, a user message and 2 more parts",
}

// TestStrictUnreadable: a call whose recorded request the bundle cannot
// give (a blob is missing) fails, saying so; so does a call whose own
// request names a blob the store lacks.
func TestStrictUnreadable(t *testing.T) {
	dir := recording(t, recorded)
	c, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	delete(c.blobs, cas.Sum([]byte(recorded.tools)))
	r := c.Run(t.Context(), call(t, recorded))
	want := "cassette " + dir + ": model call 1 is not the recorded one: the recorded request cannot be read: "
	if r.Status != effects.StatusError || !strings.HasPrefix(r.Error, want) || !strings.Contains(r.Error, "export the session again") {
		t.Errorf("receipt %s %q; want an error starting %q", r.Status, r.Error, want)
	}

	c, err = Open(recording(t, recorded), nil)
	if err != nil {
		t.Fatal(err)
	}
	cl := call(t, recorded)
	cl.CAS = cas.NewMemory()
	r = c.Run(t.Context(), cl)
	if r.Status != effects.StatusError || !strings.Contains(r.Error, "its request cannot be read: llm: invalid params: instructions_ref") {
		t.Errorf("receipt %s %q; want an error saying the request cannot be read", r.Status, r.Error)
	}
}

// TestLoose: a loose cassette answers a call that differs, after telling
// Warn what differs.
func TestLoose(t *testing.T) {
	var warned []*Mismatch
	c, err := Open(recording(t, recorded), &Options{Loose: true, Warn: func(_ *effects.Call, m *Mismatch) { warned = append(warned, m) }})
	if err != nil {
		t.Fatal(err)
	}
	other := recorded
	other.messages = []string{`{"role":"user","content":"bye"}`}
	r := c.Run(t.Context(), call(t, other))
	if r.Status != effects.StatusOK || schema.FieldPath(r.Payload, "output_text") != "hello" {
		t.Fatalf("receipt %s %q %v; want the recorded answer", r.Status, r.Error, r.Payload)
	}
	if len(warned) != 1 || warned[0].Call != 1 || warned[0].Total != 3 || !strings.Contains(warned[0].Error(), `+content: "bye"`) {
		t.Fatalf("warned %v; want one mismatch of call 1, 3 parts, showing the message", warned)
	}
	if got, want := warned[0].Summary(), "transcript item 1 (user message), transcript item 2 (function_call call_1), transcript item 3 (function_call_output call_1)"; got != want {
		t.Errorf("Summary() = %q; want %q", got, want)
	}
	// The warning is one line; the diff is apart.
	dir := warned[0].Dir
	if got, want := warned[0].Warning(), "cassette "+dir+": model call 1 differs from the recording in a user message, a missing tool call and a missing tool output; answering with the recorded answer"; got != want {
		t.Errorf("Warning() = %q; want %q", got, want)
	}
	if d := warned[0].Diff(); !strings.HasPrefix(d, "3 parts of its request differ") || !strings.Contains(d, "transcript item 1 (user message):\n--- recorded\n") || !strings.Contains(d, `+content: "bye"`) {
		t.Errorf("Diff() = %q; want the diff of each part", d)
	}
	// Without Warn, it goes on all the same.
	c, err = Open(recording(t, recorded), &Options{Loose: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Run(t.Context(), call(t, other)); r.Status != effects.StatusOK {
		t.Fatalf("receipt %s %q; want the recorded answer", r.Status, r.Error)
	}
}

// TestRender: what a part looks like in a diff.
func TestRender(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b":1,"a":"x"}`, "a: \"x\"\nb: 1\n"},
		{`{"a":{"b":[1,{"c":null}]},"d":[],"e":{}}`, "a:\n  b:\n    - 1\n    -\n      c: null\nd: []\ne: {}\n"},
		{`{"args":"{\"x\":true}","t":"one\ntwo"}`, "args: (JSON)\n  x: true\nt: |\n  one\n  two\n"},
		{`[1,"two"]`, "- 1\n- \"two\"\n"},
		{`not json`, "\"not json\"\n"},
		{`{"n":12345678901234567890}`, "n: 12345678901234567890\n"},
	} {
		if got := render(decode([]byte(tc.in))); got != tc.want {
			t.Errorf("render(%s) =\n%s\nwant\n%s", tc.in, got, tc.want)
		}
	}
}

// TestOwnPrompt: the system prompt is compared up to the tools' own.
func TestOwnPrompt(t *testing.T) {
	tools := map[string]bool{"bash": true}
	for _, tc := range []struct{ in, want string }{
		{"Be brief.", "Be brief."},
		{"Be brief.\n\n# bash\n\nRun scripts.\n", "Be brief.\n\n[the tools' own prompts: not compared]\n"},
		{"# Rules\nBe brief.\n# bash\n", "# Rules\nBe brief.\n[the tools' own prompts: not compared]\n"},
		{"# bashful\n", "# bashful\n"},
	} {
		if got := ownPrompt(tc.in, tools); got != tc.want {
			t.Errorf("ownPrompt(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// TestOtherWorld: a recording played again in another world of the store
// (the demo run a second time) matches though a tool output names that
// world, when the cassette is told the world's name; the world is a
// world's name only as a whole JSON string, and anything else that
// differs still fails.
func TestOtherWorld(t *testing.T) {
	named := func(world, said string) request {
		r := recorded
		r.messages = append([]string(nil), recorded.messages...)
		r.messages[2] = `{"type":"function_call_output","call_id":"call_1","output":"{\"world\":\"` + world + `\",\"said\":\"` + said + `\"}"}`
		return r
	}
	dir := recording(t, named("main", "main"))
	if err := os.WriteFile(filepath.Join(dir, "bundle.json"), []byte(`{"format":"demiurge/bundle/v1","world":"main"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, world string
		req         request
		ok          bool
	}{
		{"the recording's world", "main", named("main", "main"), true},
		{"another world, told", "main-2", named("main-2", "main"), true},
		{"another world, not told", "", named("main-2", "main"), false},
		{"another world, told another", "w", named("main-2", "main"), false},
		{"another world and another output", "main-2", named("main-2", "main-2x"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Open(dir, &Options{World: tc.world})
			if err != nil {
				t.Fatal(err)
			}
			r := c.Run(t.Context(), call(t, tc.req))
			if got := r.Status == effects.StatusOK; got != tc.ok {
				t.Errorf("receipt %s %q; want ok %v", r.Status, r.Error, tc.ok)
			}
		})
	}
}

// TestOtherWorldShown: a diff of a call made in another world shows this
// run's tool output as it is, naming this world, not the recording's
// world it was compared as, and says that the names were compared so.
func TestOtherWorldShown(t *testing.T) {
	named := func(world, said string) request {
		r := recorded
		r.messages = append([]string(nil), recorded.messages...)
		r.messages[2] = `{"type":"function_call_output","call_id":"call_1","output":"{\"world\":\"` + world + `\",\"said\":\"` + said + `\"}"}`
		return r
	}
	dir := recording(t, named("main", "main"))
	if err := os.WriteFile(filepath.Join(dir, "bundle.json"), []byte(`{"format":"demiurge/bundle/v1","world":"main"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(dir, &Options{World: "ap1"})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Run(t.Context(), call(t, named("ap1", "other")))
	if r.Status == effects.StatusOK {
		t.Fatal("a call whose output differs was answered")
	}
	for _, want := range []string{`-  world: "main"`, `+  world: "ap1"`, `+  said: "other"`, `this run's world "ap1" is compared as the recording's "main"`} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("the error lacks %q:\n%s", want, r.Error)
		}
	}
	if strings.Contains(r.Error, `+  world: "main"`) || strings.Contains(r.Error, "\n   world: \"main\"") {
		t.Errorf("this run's output is shown with the recording's world:\n%s", r.Error)
	}
}

// TestMismatchAdvice: a program's own advice ends the error in place of
// the default one.
func TestMismatchAdvice(t *testing.T) {
	m := &Mismatch{Dir: "DIR", Call: 2, Total: 1, Parts: []PartDiff{{Part: "system prompt", Brief: "the system prompt", Diff: "--- recorded\n+++ this run\n-a\n+b\n"}}}
	def := m.Error()
	if !strings.Contains(def, "To replay this recording") || !strings.Contains(def, DefaultLooseHint) {
		t.Errorf("default advice missing:\n%s", def)
	}
	m.Advice = "Record case x again: prog --record D."
	got := m.Error()
	if !strings.HasSuffix(got, "\nRecord case x again: prog --record D.") && !strings.HasSuffix(got, " Record case x again: prog --record D.") {
		t.Errorf("the error does not end with the advice:\n%s", got)
	}
	if strings.Contains(got, "To replay this recording") || !strings.Contains(got, "system prompt:\n--- recorded") {
		t.Errorf("advice error:\n%s", got)
	}
}
