package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/chunked"
	"github.com/demiurge-dev/demiurge/cas/reflist"
	"github.com/demiurge-dev/demiurge/internal/realwire"
)

// errGrabbed stops a request once its body is grabbed.
var errGrabbed = errors.New("grabbed")

// sdkBody is the body the SDK sends for the whole request built the way
// it was before requests were spliced: every item put in the SDK's
// params, the params encoded by the SDK, "stream": true set by
// option.WithJSONSet, the transcript's member moved last.
func sdkBody(t *testing.T, g *Generator, c *call, p Params, items []item, tools []tool) []byte {
	t.Helper()
	var body []byte
	grab := option.WithMiddleware(func(req *http.Request, _ option.MiddlewareNext) (*http.Response, error) {
		rc, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		body, err = io.ReadAll(rc)
		if err != nil {
			return nil, err
		}
		return nil, errGrabbed
	})
	opts := []option.RequestOption{grab, option.WithMaxRetries(0)}
	if c.onDelta != nil {
		opts = append(opts, option.WithJSONSet("stream", true))
	}
	items = shrinkItems(items, g.cfg.MaxItemBytes)
	member := "input"
	if c.provider == ProviderChat {
		member = "messages"
		cp, err := buildChatParams(p, tools, c.onDelta != nil, c.model)
		if err != nil {
			t.Fatal(err)
		}
		if p.Instructions != nil {
			cp.Messages = append(cp.Messages, openai.SystemMessage(*p.Instructions))
		}
		msgs, err := chatMessages(items, c.model.ReasoningEcho, c.model.ReasoningRefused)
		if err != nil {
			t.Fatal(err)
		}
		cp.Messages = append(cp.Messages, msgs...)
		_, err = g.chat.New(context.Background(), cp, opts...)
		if !errors.Is(err, errGrabbed) {
			t.Fatal(err)
		}
	} else {
		rp, err := buildResponsesParams(p, items, tools, g.cfg.Store, c.model)
		if err != nil {
			t.Fatal(err)
		}
		store, send := g.cfg.Store, items
		if p.PreviousResponseID != nil && *p.PreviousResponseID != "" {
			store, send = true, itemsAfterLastOutput(items)
		}
		var list responses.ResponseInputParam
		for _, it := range send {
			if keepReasoning(it, store, c.model) {
				list = append(list, param.Override[responses.ResponseInputItemUnionParam](responsesItem(it)))
			}
		}
		rp.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: list}
		_, err = g.responses.New(context.Background(), rp, opts...)
		if !errors.Is(err, errGrabbed) {
			t.Fatal(err)
		}
	}
	moved, ok := memberLast(body, member)
	if !ok {
		t.Fatalf("the SDK's body has no %s: %s", member, body)
	}
	return moved
}

// TestSpliceMatchesSDK checks that a spliced request is, byte for byte,
// the body the SDK made of the whole request: for every request of the
// real recordings (their transcripts as demiurge keeps them), streamed and
// not, on both APIs, with and without a system prompt, and for the
// follow-ups of every dialect.
func TestSpliceMatchesSDK(t *testing.T) {
	recs, _, err := realwire.LoadCorpus(filepath.Join("testdata", "realwire"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	check := func(t *testing.T, g *Generator, st *memStore, p Params) {
		t.Helper()
		for _, stream := range []bool{false, true} {
			var onDelta func(string)
			if stream {
				onDelta = func(string) {}
			}
			c, err := g.prepare(t.Context(), st, p, "", onDelta)
			if err != nil {
				continue // a request the adapter refuses is no matter here
			}
			items, err := loadTranscript(t.Context(), st, p.MessageRefs, nil)
			if err != nil {
				t.Fatal(err)
			}
			var tools []tool
			if p.ToolsRef != nil {
				if tools, err = loadTools(t.Context(), st, *p.ToolsRef); err != nil {
					t.Fatal(err)
				}
			}
			want := sdkBody(t, g, c, p, items, tools)
			if sent := c.body.bytes(); string(sent) != string(want) {
				t.Errorf("%s %s, stream %v:\nspliced %s\n    SDK %s", p.Provider, p.Model, stream, sent, want)
			}
			n++
		}
	}
	for _, rec := range recs {
		t.Run(rec.Name, func(t *testing.T) {
			for _, it := range rec.Interactions {
				if it.Request == nil {
					continue
				}
				turn, err := it.Request.Turn(rec.API)
				if err != nil {
					t.Fatal(err)
				}
				st := newStore()
				p := Params{Provider: ProviderResponses, Model: turn.Model, MaxTokens: turn.MaxTokens, Instructions: turn.Instructions,
					Temperature: turn.Temperature, ReasoningEffort: turn.ReasoningEffort}
				if rec.API == "chat" {
					p.Provider = ProviderChat
				}
				for _, item := range turn.Items {
					p.MessageRefs = append(p.MessageRefs, st.put(t, string(item)))
				}
				if turn.Tools != nil {
					ref := st.put(t, string(turn.Tools))
					p.ToolsRef = &ref
				}
				for _, server := range []string{"", rec.Vendor} {
					g, err := New(Config{BaseURL: "http://127.0.0.1:9/v1", Server: server, MaxItemBytes: 2048})
					if err != nil {
						t.Fatal(err)
					}
					check(t, g, st, p)
					if p.Instructions == nil {
						q := p
						q.Instructions = ptr("Be <brief> & exact.")
						check(t, g, st, q)
					}
				}
			}
		})
	}
	// The dialects' follow-ups: a transcript with every reasoning field.
	for _, d := range dialects {
		st := newStore()
		out, err := parseChatBody([]byte(d.answer))
		if err != nil {
			t.Fatal(err)
		}
		tools := st.put(t, `[{"type":"function","name":"f","parameters":{"type":"object","properties":{}}}]`)
		refs := []cas.Ref{st.put(t, "call f"), st.put(t, string(out.output))}
		for _, tc := range out.calls {
			refs = append(refs, st.put(t, `{"type":"function_call_output","call_id":"`+tc.CallID+`","output":"42"}`))
		}
		for _, prov := range []string{ProviderChat, ProviderResponses} {
			g, err := New(Config{BaseURL: "http://127.0.0.1:9/v1", Server: d.server})
			if err != nil {
				t.Fatal(err)
			}
			check(t, g, st, Params{Provider: prov, Model: d.model, ToolsRef: &tools, MessageRefs: refs})
		}
	}
	if n < 100 {
		t.Errorf("%d requests compared; want at least 100", n)
	}
	t.Logf("%d requests compared", n)
}

// TestSplicedReader reads a spliced body every way it is read: whole, in
// small reads, by WriteTo, and from every offset.
func TestSplicedReader(t *testing.T) {
	for _, joined := range []string{`{"a":1},{"b":[2,3]},{}`, ""} {
		b := &spliced{head: []byte(`{"model":"m","input":[`), joined: []byte(joined), tail: []byte("]}")}
		want := `{"model":"m","input":[` + joined + `]}`
		if got := string(b.bytes()); got != want || b.Len() != len(want) {
			t.Fatalf("bytes %s (len %d); want %s", got, b.Len(), want)
		}
		var small bytes.Buffer
		r := b.reader()
		buf := make([]byte, 3)
		for {
			n, err := r.Read(buf)
			small.Write(buf[:n])
			if err == io.EOF {
				break
			}
		}
		var whole bytes.Buffer
		if _, err := io.Copy(&whole, b.reader()); err != nil {
			t.Fatal(err)
		}
		if small.String() != want || whole.String() != want {
			t.Errorf("read %q, WriteTo %q; want %q", small.String(), whole.String(), want)
		}
		for off := range len(want) + 1 {
			if got := string(b.From(off)); got != want[off:] {
				t.Errorf("From(%d) = %q; want %q", off, got, want[off:])
			}
		}
	}
}

// TestChainReuse runs a growing chat through one Generator, which builds
// each request on the last, and checks each against what a fresh
// Generator builds, and its evidence against the bytes sent.
func TestChainReuse(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn { return benchTurn })
			defer srv.Close()
			g := newTestGenerator(t, srv, nil)
			st := newStore()
			tools := st.put(t, `{"tools":[{"type":"function","name":"introspect_manifest","parameters":{"type":"object"}}]}`)
			p := Params{Provider: m.provider, Model: "deepseek-v4-flash", ToolsRef: &tools, Instructions: ptr("Be brief."),
				MessageRefs: []cas.Ref{st.put(t, "read the manifest")}}
			var onDelta func(string)
			if m.stream {
				onDelta = func(string) {}
			}
			for round := range 6 {
				r, err := g.Generate(t.Context(), st, p, testKey, onDelta)
				if err != nil {
					t.Fatal(err)
				}
				sent := srv.Requests()[round].Body
				fresh := newTestGenerator(t, srv, nil)
				c, err := fresh.prepare(t.Context(), st, p, testKey, onDelta)
				if err != nil {
					t.Fatal(err)
				}
				if want := c.body.bytes(); !bytes.Equal(sent, want) {
					t.Fatalf("round %d: sent\n%s\nfresh\n%s", round, sent, want)
				}
				ev, err := chunked.Get(t.Context(), st, *r.RequestRef)
				if err != nil || !bytes.Equal(ev, sent) {
					t.Fatalf("round %d: evidence %d bytes (%v); sent %d", round, len(ev), err, len(sent))
				}
				var tc ToolCall
				if err := cas.GetNode(t.Context(), st, r.ToolCallRefs[0], &tc); err != nil {
					t.Fatal(err)
				}
				out := st.put(t, fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":"the manifest, round %d"}`, tc.CallID, round))
				p.MessageRefs = append(slices.Clone(p.MessageRefs), r.OutputRef, out)
			}
		})
	}
}

// TestChainConcurrent runs chats that begin with the same message blob
// at once through one Generator (their transcripts share a chain key):
// each request is what a fresh Generator builds, and its evidence the
// bytes sent. The chats name their messages as lists of refs, and as
// reflists that share their first chunks (forks of one chat).
// The native providers keep a session per transcript that forks share
// until one moves it on: a chat whose session another moved on between
// choosing and locking it must start it over, not extend another chat's.
func TestChainConcurrent(t *testing.T) {
	for _, provider := range []string{ProviderChat, ProviderAnthropic, ProviderGemini} {
		for _, reflists := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reflists=%v", provider, reflists), func(t *testing.T) { testChainConcurrent(t, provider, reflists) })
		}
	}
}

func testChainConcurrent(t *testing.T, provider string, reflists bool) {
	srv := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn { return benchTurn })
	defer srv.Close()
	model := "deepseek-v4-flash"
	edit := func(c *Config) {}
	switch provider {
	case ProviderAnthropic:
		model = "claude-sonnet-4-5"
	case ProviderGemini:
		model = "gemini-3.5-flash"
	}
	if isNative(provider) {
		edit = func(c *Config) { c.Provider, c.BaseURL = provider, srv.Root }
	}
	g := newTestGenerator(t, srv, edit)
	st := newStore()
	tools := st.put(t, `{"tools":[{"type":"function","name":"introspect_manifest","parameters":{"type":"object"}}]}`)
	first := st.put(t, "read the manifest")
	// The reflists' common start: the first message, and more than a
	// chunk of others.
	var common reflist.List
	if reflists {
		refs := []cas.Ref{first}
		for i := range reflist.ChunkSize + 2 {
			refs = append(refs, st.put(t, fmt.Sprintf(`{"role":"user","content":"and %d"}`, i)))
		}
		l, nodes, err := common.Append(refs...)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			st.put(t, string(n))
		}
		common = l
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for chat := range 4 {
		wg.Go(func() {
			p := Params{Provider: provider, Model: model, MaxTokens: 1024, ToolsRef: &tools, MessageRefs: []cas.Ref{first}}
			list := common
			if reflists {
				p.MessageRefs, p.Transcript = nil, &Transcript{Refs: list}
			}
			for round := range 5 {
				r, err := g.Generate(context.Background(), st, p, testKey, nil)
				if err != nil {
					errs <- err
					return
				}
				fresh := newTestGenerator(t, srv, edit)
				c, err := fresh.prepare(context.Background(), st, p, testKey, nil)
				if err != nil {
					errs <- err
					return
				}
				var want []byte
				if c.native != nil {
					want = c.native.bytes()
					c.releaseSession()
				} else {
					want = c.body.bytes()
				}
				ev, err := chunked.Get(context.Background(), st, *r.RequestRef)
				if err != nil || !bytes.Equal(ev, want) {
					errs <- fmt.Errorf("chat %d round %d: the evidence is not the request a fresh Generator builds (%v)", chat, round, err)
					return
				}
				var tc ToolCall
				if err := cas.GetNode(context.Background(), st, r.ToolCallRefs[0], &tc); err != nil {
					errs <- err
					return
				}
				out := st.put(t, fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":"chat %d round %d"}`, tc.CallID, chat, round))
				if !reflists {
					p.MessageRefs = append(slices.Clone(p.MessageRefs), r.OutputRef, out)
					continue
				}
				l, nodes, err := list.Append(r.OutputRef, out)
				if err != nil {
					errs <- err
					return
				}
				for _, n := range nodes {
					if _, err := st.Put(context.Background(), n); err != nil {
						errs <- err
						return
					}
				}
				list = l
				p.Transcript = &Transcript{Refs: list}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestChainTranscript grows chats named as reflists (Params.Transcript, as
// the chat names them) through one Generator, which reads each call's refs
// from the last call's and builds its request on the last: each request
// is the one a fresh Generator builds, and its evidence the bytes sent.
// Along the way a chat forks (a second list shares the first's chunks,
// then goes its own way), compacts (a summary as prefix, the transcript
// sent from a later item), sends a compaction's request (a view to an
// item, with a suffix), and a tool's output holds the API key (redacted
// in the evidence, and in every later request's).
func TestChainTranscript(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			srv := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn { return benchTurn })
			defer srv.Close()
			g := newTestGenerator(t, srv, nil)
			st := newStore()
			tools := st.put(t, `{"tools":[{"type":"function","name":"introspect_manifest","parameters":{"type":"object"}}]}`)
			base := Params{Provider: m.provider, Model: "deepseek-v4-flash", ToolsRef: &tools, Instructions: ptr("Be brief.")}
			var onDelta func(string)
			if m.stream {
				onDelta = func(string) {}
			}
			type chat struct {
				list reflist.List
				tr   Transcript
			}
			appendRefs := func(c *chat, refs ...cas.Ref) {
				l, nodes, err := c.list.Append(refs...)
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range nodes {
					st.put(t, string(n))
				}
				c.list = l
				c.tr.Refs = l
			}
			// call makes a call of c and checks it; it returns the
			// receipt's output and the tool's, to append.
			calls := 0
			call := func(c *chat, output string) (cas.Ref, cas.Ref) {
				t.Helper()
				p := base
				tr := c.tr
				p.Transcript = &tr
				r, err := g.Generate(t.Context(), st, p, testKey, onDelta)
				if err != nil {
					t.Fatal(err)
				}
				sent := srv.Requests()[calls].Body
				calls++
				fresh := newTestGenerator(t, srv, nil)
				fc, err := fresh.prepare(t.Context(), st, p, testKey, onDelta)
				if err != nil {
					t.Fatal(err)
				}
				if want := fc.body.bytes(); !bytes.Equal(sent, want) {
					t.Fatalf("call %d: sent\n%s\nfresh\n%s", calls, sent, want)
				}
				ev, err := chunked.Get(t.Context(), st, *r.RequestRef)
				if err != nil || !bytes.Equal(ev, redactBytes(sent, testKey)) {
					t.Fatalf("call %d: evidence %d bytes (%v); sent %d", calls, len(ev), err, len(sent))
				}
				if bytes.Contains(ev, []byte(testKey)) {
					t.Fatalf("call %d: the evidence holds the key", calls)
				}
				var tc ToolCall
				if err := cas.GetNode(t.Context(), st, r.ToolCallRefs[0], &tc); err != nil {
					t.Fatal(err)
				}
				return r.OutputRef, st.put(t, fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":%q}`, tc.CallID, output))
			}
			a := &chat{}
			appendRefs(a, st.put(t, `{"role":"user","content":"read the manifest"}`))
			for round := range 12 {
				out, res := call(a, fmt.Sprintf("the manifest, round %d", round))
				appendRefs(a, out, res)
			}
			// A fork: b shares a's chunks, then goes its own way; a goes on.
			b := &chat{list: a.list, tr: a.tr}
			for round := range 3 {
				out, res := call(b, fmt.Sprintf("the fork's manifest, round %d", round))
				appendRefs(b, out, res)
				out, res = call(a, fmt.Sprintf("the manifest, round %d again", round))
				appendRefs(a, out, res)
			}
			// A tool's output that holds the key.
			out, res := call(a, "the key is "+testKey)
			appendRefs(a, out, res)
			for round := range 3 {
				out, res := call(a, fmt.Sprintf("after the key, round %d", round))
				appendRefs(a, out, res)
			}
			// A compaction's request: the transcript to item 9, and an
			// instruction after it.
			to := uint64(9)
			cmp := &chat{list: a.list, tr: Transcript{Refs: a.list, To: &to, Suffix: []cas.Ref{st.put(t, `{"role":"user","content":"summarize"}`)}}}
			call(cmp, "unused")
			// Compacted: a summary, then the items from 9 on.
			a.tr.From, a.tr.Prefix = 9, []cas.Ref{st.put(t, `{"role":"user","content":"the summary"}`)}
			for round := range 4 {
				out, res := call(a, fmt.Sprintf("after the summary, round %d", round))
				appendRefs(a, out, res)
			}
		})
	}
}
