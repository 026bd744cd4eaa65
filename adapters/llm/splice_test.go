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
	segs := []*segment{{body: []byte(`{"a":1}`)}, {body: []byte(`{"b":[2,3]}`)}, {body: []byte(`{}`)}}
	for _, lead := range []bool{false, true} {
		b := &spliced{head: []byte(`{"model":"m","input":[`), lead: lead, segs: segs, tail: []byte("]}")}
		head := `{"model":"m","input":[`
		if lead {
			head += ","
		}
		want := head + `{"a":1},{"b":[2,3]},{}]}`
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
// bytes sent.
func TestChainConcurrent(t *testing.T) {
	srv := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn { return benchTurn })
	defer srv.Close()
	g := newTestGenerator(t, srv, nil)
	st := newStore()
	tools := st.put(t, `{"tools":[{"type":"function","name":"introspect_manifest","parameters":{"type":"object"}}]}`)
	first := st.put(t, "read the manifest")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for chat := range 4 {
		wg.Go(func() {
			p := Params{Provider: ProviderChat, Model: "deepseek-v4-flash", ToolsRef: &tools, MessageRefs: []cas.Ref{first}}
			for round := range 5 {
				r, err := g.Generate(context.Background(), st, p, testKey, nil)
				if err != nil {
					errs <- err
					return
				}
				fresh := newTestGenerator(t, srv, nil)
				c, err := fresh.prepare(context.Background(), st, p, testKey, nil)
				if err != nil {
					errs <- err
					return
				}
				ev, err := chunked.Get(context.Background(), st, *r.RequestRef)
				if err != nil || !bytes.Equal(ev, c.body.bytes()) {
					errs <- fmt.Errorf("chat %d round %d: the evidence is not the request a fresh Generator builds (%v)", chat, round, err)
					return
				}
				var tc ToolCall
				if err := cas.GetNode(context.Background(), st, r.ToolCallRefs[0], &tc); err != nil {
					errs <- err
					return
				}
				out := st.put(t, fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":"chat %d round %d"}`, tc.CallID, chat, round))
				p.MessageRefs = append(slices.Clone(p.MessageRefs), r.OutputRef, out)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
