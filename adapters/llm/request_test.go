package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
)

// Blobs of the reference conversation (reference/llm-and-mcp.md §1.3–1.5).
const (
	refTools = `{"tools":[{"type":"function","name":"workspace_read","description":"Read a file from the workspace",` +
		`"parameters":{"additionalProperties":false,"properties":{"path":{"description":"workspace-relative path","type":"string"}},"required":["path"],"type":"object"},"strict":true}]}`
	refToolsJSON = `[{"strict":true,"parameters":{"additionalProperties":false,"properties":{"path":{"description":"workspace-relative path","type":"string"}},"required":["path"],"type":"object"},` +
		`"name":"workspace_read","description":"Read a file from the workspace","type":"function"}]`
	// refOutput is the output of the reference response with one call (§1.4).
	refOutput = `[{"type":"reasoning","id":"rs_001","summary":[],"encrypted_content":"gAAAA-opaque"},` +
		`{"type":"function_call","id":"fc_001","call_id":"call_abc123","name":"workspace_read","arguments":"{\"path\":\"README.md\"}","status":"completed"}]`
	refToolOutput = `{"output":"{\"content\":\"hello\"}","call_id":"call_abc123","type":"function_call_output"}`
	refSchema     = `{"additionalProperties":false,"properties":{"summary":{"type":"string"}},"required":["summary"],"type":"object"}`
)

// buildRequest prepares p against st and returns the JSON body the SDK
// would send (the stream flag aside).
func buildRequest(t *testing.T, st *memStore, p Params, cfg Config) (string, error) {
	t.Helper()
	if cfg.BaseURL == "" {
		cfg.BaseURL = "http://127.0.0.1:1/v1"
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.prepare(t.Context(), st, p, "", nil)
	if err != nil {
		return "", err
	}
	return string(c.body.bytes()), nil
}

// sent is the body the SDK made of a request whose JSON encoding is
// want, as it went on the wire: "stream": true added last for a stream
// (option.WithJSONSet), then the transcript's member moved last.
func sent(t *testing.T, want string, stream bool) string {
	t.Helper()
	if stream {
		want = strings.TrimSuffix(want, "}") + `,"stream":true}`
	}
	for _, k := range []string{"input", "messages"} {
		if b, ok := memberLast([]byte(want), k); ok {
			return string(b)
		}
	}
	t.Fatalf("%s has no transcript", want)
	return ""
}

func TestResponsesRequestBytes(t *testing.T) {
	st := newStore()
	tools := st.put(t, refTools)
	user := st.put(t, "Summarise README.md")
	output := st.put(t, refOutput)
	toolOut := st.put(t, refToolOutput)
	tests := []struct {
		name string
		p    Params
		cfg  Config
		want string
	}{{
		// §1.3, without parallel_tool_calls and reasoning.summary, which
		// the adapter does not send.
		name: "first turn",
		p: Params{Model: "gpt-5.2", MaxTokens: 2048, MessageRefs: []cas.Ref{user}, ToolsRef: &tools,
			ToolChoice: &ToolChoice{Kind: ToolChoiceAuto}, Instructions: ptr("You are a careful agent."), ReasoningEffort: ptr("low")},
		want: `{"instructions":"You are a careful agent.","max_output_tokens":2048,"store":false,"include":["reasoning.encrypted_content"],` +
			`"input":[{"content":"Summarise README.md","role":"user"}],"model":"gpt-5.2","reasoning":{"effort":"low"},"tool_choice":"auto","tools":` + refToolsJSON + `}`,
	}, {
		// §1.5 stateless: the whole transcript, reasoning replayed verbatim.
		name: "stateless follow-up",
		p: Params{Model: "gpt-5.2", MessageRefs: []cas.Ref{user, output, toolOut}, ToolsRef: &tools,
			ToolChoice:     &ToolChoice{Kind: ToolChoiceNone},
			ResponseFormat: &TextFormat{JSONSchema: &JSONSchemaFormat{Name: "summary", SchemaJSON: refSchema, Strict: true}}},
		want: `{"store":false,"include":["reasoning.encrypted_content"],"input":[{"content":"Summarise README.md","role":"user"},` +
			strings.TrimSuffix(strings.TrimPrefix(refOutput, "["), "]") + `,` + refToolOutput + `],"model":"gpt-5.2",` +
			`"text":{"format":{"name":"summary","schema":` + refSchema + `,"strict":true,"type":"json_schema"}},"tool_choice":"none","tools":` + refToolsJSON + `}`,
	}, {
		// §1.5 stateful: only the items after the last model output.
		name: "chained follow-up",
		p: Params{Model: "gpt-5.2", MessageRefs: []cas.Ref{user, output, toolOut}, ToolsRef: &tools,
			ToolChoice: &ToolChoice{Kind: ToolChoiceTool, Name: "workspace_read"}, PreviousResponseID: ptr("resp_001")},
		want: `{"previous_response_id":"resp_001","store":true,"input":[` + refToolOutput + `],"model":"gpt-5.2",` +
			`"tool_choice":{"name":"workspace_read","type":"function"},"tools":` + refToolsJSON + `}`,
	}, {
		name: "stored, temperature",
		p:    Params{Model: "m", Temperature: ptr("0.2"), MessageRefs: []cas.Ref{user}},
		cfg:  Config{Store: true},
		want: `{"store":true,"temperature":0.2,"input":[{"content":"Summarise README.md","role":"user"}],"model":"m"}`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := buildRequest(t, st, tc.p, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if want := sent(t, tc.want, false); got != want {
				t.Errorf("request\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestToolChoiceMapping(t *testing.T) {
	st := newStore()
	tools := st.put(t, `[{"type":"function","name":"a","parameters":{"type":"object"}},{"type":"function","name":"b"}]`)
	msg := st.put(t, "hi")
	tests := []struct {
		choice        ToolChoice
		noTools       bool
		responses     string // the "tool_choice" member, or the error
		chat          string
		wantErrSubstr string
	}{
		{choice: ToolChoice{Kind: ToolChoiceAuto}, responses: `"tool_choice":"auto"`, chat: `"tool_choice":"auto"`},
		{choice: ToolChoice{Kind: ToolChoiceNone}, responses: `"tool_choice":"none"`, chat: `"tool_choice":"none"`},
		{choice: ToolChoice{Kind: ToolChoiceRequired}, responses: `"tool_choice":"required"`, chat: `"tool_choice":"required"`},
		{choice: ToolChoice{Kind: ToolChoiceTool, Name: "b"}, responses: `"tool_choice":{"name":"b","type":"function"}`,
			chat: `"tool_choice":{"function":{"name":"b"},"type":"function"}`},
		{choice: ToolChoice{Kind: ToolChoiceNone}, noTools: true, responses: `"tool_choice":"none"`, chat: `"tool_choice":"none"`},
		{choice: ToolChoice{Kind: ToolChoiceTool, Name: "c"}, wantErrSubstr: `names no function of tools_ref (functions: a, b)`},
		{choice: ToolChoice{Kind: ToolChoiceTool, Name: "a"}, noTools: true, wantErrSubstr: "needs tools: set tools_ref"},
		{choice: ToolChoice{Kind: ToolChoiceRequired}, noTools: true, wantErrSubstr: "Required needs tools"},
		{choice: ToolChoice{Kind: "auto"}, wantErrSubstr: `"auto" is not one of Auto, None, Required, Tool`},
	}
	for _, tc := range tests {
		for _, prov := range []string{ProviderResponses, ProviderChat} {
			t.Run(string(tc.choice.Kind)+tc.choice.Name+"/"+prov, func(t *testing.T) {
				p := Params{Provider: prov, Model: "m", MessageRefs: []cas.Ref{msg}, ToolChoice: &tc.choice}
				if !tc.noTools {
					p.ToolsRef = &tools
				}
				got, err := buildRequest(t, st, p, Config{})
				if tc.wantErrSubstr != "" {
					if err == nil || !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), tc.wantErrSubstr) {
						t.Fatalf("got error %v; want ErrInvalidParams containing %q", err, tc.wantErrSubstr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				want := tc.responses
				if prov == ProviderChat {
					want = tc.chat
				}
				if !strings.Contains(got, want) {
					t.Errorf("request %s\ndoes not contain %s", got, want)
				}
			})
		}
	}
}

func TestTranscriptForms(t *testing.T) {
	tests := []struct {
		name  string
		blob  string
		items []string // the items' JSON
		err   string
	}{
		{name: "raw text", blob: "Summarise README.md", items: []string{`{"content":"Summarise README.md","role":"user"}`}},
		{name: "text with markup", blob: "<b>bold</b> & \"quoted\"\n", items: []string{`{"content":"\u003cb\u003ebold\u003c/b\u003e \u0026 \"quoted\"\n","role":"user"}`}},
		{name: "JSON string is text", blob: `"hi"`, items: []string{`{"content":"\"hi\"","role":"user"}`}},
		{name: "bracketed text", blob: "[citation needed] see above", items: []string{`{"content":"[citation needed] see above","role":"user"}`}},
		{name: "number is text", blob: "42", items: []string{`{"content":"42","role":"user"}`}},
		{name: "one object", blob: ` {"role":"user","content":"hi"}` + "\n", items: []string{`{"role":"user","content":"hi"}`}},
		{name: "tool output object", blob: `{"type":"function_call_output","call_id":"call_1","output":"ok"}`,
			items: []string{`{"type":"function_call_output","call_id":"call_1","output":"ok"}`}},
		{name: "array", blob: refOutput, items: []string{
			`{"type":"reasoning","id":"rs_001","summary":[],"encrypted_content":"gAAAA-opaque"}`,
			`{"type":"function_call","id":"fc_001","call_id":"call_abc123","name":"workspace_read","arguments":"{\"path\":\"README.md\"}","status":"completed"}`}},
		{name: "empty array", blob: `[]`, items: nil},
		{name: "empty blob", blob: "", err: "is empty"},
		{name: "blank blob", blob: " \n", err: "is empty"},
		{name: "invalid UTF-8", blob: "\xff\xfe", err: "neither JSON nor UTF-8 text"},
		{name: "array of non-objects", blob: `[{"role":"user","content":"a"}, "b"]`, err: "item 1: want a JSON object"},
		{name: "no type or role", blob: `{"content":"hi"}`, err: `has neither "type" nor "role"`},
		{name: "chat tool message", blob: `{"role":"tool","tool_call_id":"call_1","content":"x"}`, err: `role "tool", the Chat Completions shape`},
		{name: "role not a string", blob: `{"role":1}`, err: "must be strings"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore()
			ref := st.put(t, tc.blob)
			// Without a cache, then twice with one: the second load comes
			// from the cache and must be the same.
			cache := &messagesCache{}
			for i, c := range []*messagesCache{nil, cache, cache} {
				items, err := loadTranscript(t.Context(), st, []cas.Ref{ref}, c)
				if tc.err != "" {
					if err == nil || !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), tc.err) {
						t.Fatalf("load %d: got error %v; want ErrInvalidParams containing %q", i, err, tc.err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, it := range items {
					got = append(got, string(it.raw))
				}
				if strings.Join(got, "\n") != strings.Join(tc.items, "\n") {
					t.Errorf("load %d: items\n got %q\nwant %q", i, got, tc.items)
				}
			}
			if _, cached := cache.get(ref); cached != (tc.err == "") {
				t.Errorf("cached %v after loading a blob that fails with %q", cached, tc.err)
			}
		})
	}
	st := newStore()
	if _, err := loadTranscript(t.Context(), st, nil, nil); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("no refs: got %v; want ErrInvalidParams", err)
	}
	missing := cas.Sum([]byte("never stored"))
	_, err := loadTranscript(t.Context(), st, []cas.Ref{missing}, nil)
	if !errors.Is(err, ErrInvalidParams) || !errors.Is(err, cas.ErrNotFound) || !strings.Contains(err.Error(), "message_refs[0]") {
		t.Errorf("missing blob: got %v; want ErrInvalidParams and cas.ErrNotFound naming message_refs[0]", err)
	}
}

func TestItemsAfterLastOutput(t *testing.T) {
	st := newStore()
	tests := []struct {
		name  string
		blobs []string
		want  string // the input items sent
		err   string
	}{
		{name: "tool outputs after calls",
			blobs: []string{"q", refOutput, refToolOutput},
			want:  `[` + refToolOutput + `]`},
		{name: "user after assistant",
			blobs: []string{"q", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]}`, "next"},
			want:  `[{"content":"next","role":"user"}]`},
		{name: "no output yet: everything",
			blobs: []string{`{"role":"system","content":"s"}`, "q"},
			want:  `[{"role":"system","content":"s"},{"content":"q","role":"user"}]`},
		{name: "nothing new", blobs: []string{"q", refOutput}, err: "no item after the last model output"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var refs []cas.Ref
			for _, b := range tc.blobs {
				refs = append(refs, st.put(t, b))
			}
			got, err := buildRequest(t, st, Params{Model: "m", MessageRefs: refs, PreviousResponseID: ptr("resp_1")}, Config{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v; want error containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got, `"input":`+tc.want+`}`) {
				t.Errorf("request %s\nwant input %s", got, tc.want)
			}
		})
	}
}

func TestToolsBlob(t *testing.T) {
	tests := []struct {
		name      string
		blob      string
		responses string // the "tools" array sent to the Responses API
		chat      string // and to Chat Completions ("" when it is an error)
		err       string
	}{
		{name: "wrapped", blob: `{"tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object","properties":{}},"strict":true}]}`,
			responses: `[{"strict":true,"parameters":{"properties":{},"type":"object"},"name":"f","description":"d","type":"function"}]`,
			chat:      `[{"function":{"name":"f","strict":true,"description":"d","parameters":{"properties":{},"type":"object"}},"type":"function"}]`},
		{name: "bare array, strict absent means false", blob: `[{"type":"function","name":"f"}]`,
			responses: `[{"strict":false,"name":"f","type":"function"}]`,
			chat:      `[{"function":{"name":"f","strict":false},"type":"function"}]`},
		{name: "nested chat shape", blob: `[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`,
			responses: `[{"strict":false,"parameters":{"type":"object"},"name":"f","type":"function"}]`,
			chat:      `[{"function":{"name":"f","strict":false,"parameters":{"type":"object"}},"type":"function"}]`},
		{name: "big numbers kept exact", blob: `[{"type":"function","name":"f","parameters":{"type":"integer","maximum":12345678901234567890}}]`,
			responses: `[{"strict":false,"parameters":{"maximum":12345678901234567890,"type":"integer"},"name":"f","type":"function"}]`,
			chat:      `[{"function":{"name":"f","strict":false,"parameters":{"maximum":12345678901234567890,"type":"integer"}},"type":"function"}]`},
		{name: "extra fields pass through to Responses", blob: `[{"type":"function","name":"f","defer_loading":true}]`,
			responses: `[{"strict":false,"name":"f","type":"function","defer_loading":true}]`,
			chat:      `[{"function":{"name":"f","strict":false},"type":"function"}]`},
		{name: "hosted tool", blob: `{"tools":[{"type":"web_search"}]}`,
			responses: `[{"type":"web_search"}]`,
			err:       `tool type "web_search" is not supported by provider openai-chat`},
		{name: "not JSON", blob: `tools: f`, err: "not JSON"},
		{name: "no tools key", blob: `{"provider":"openai-responses"}`, err: `no "tools" key`},
		{name: "tools not an array", blob: `{"tools":{}}`, err: `"tools" must be an array`},
		{name: "scalar", blob: `3`, err: "want {"},
		{name: "tool not an object", blob: `["f"]`, err: "tools[0]: want a JSON object"},
		{name: "no type", blob: `[{"name":"f"}]`, err: `tools[0]: no "type"`},
		{name: "no name", blob: `[{"type":"function","parameters":{}}]`, err: `tools[0]: function tool has no "name"`},
		{name: "nested without name", blob: `[{"type":"function","function":{"parameters":{}}}]`, err: `function tool has no "name"`},
		{name: "duplicate", blob: `[{"type":"function","name":"f"},{"type":"function","name":"f"}]`, err: `tools[1]: function "f" is defined twice`},
		{name: "parameters not an object", blob: `[{"type":"function","name":"f","parameters":[1]}]`, err: `field "parameters": want a JSON object`},
		{name: "strict not a bool", blob: `[{"type":"function","name":"f","strict":"yes"}]`, err: `field "strict"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore()
			ref := st.put(t, tc.blob)
			msg := st.put(t, "hi")
			for _, prov := range []string{ProviderResponses, ProviderChat} {
				want, wantErr := tc.responses, tc.err
				if prov == ProviderChat {
					want = tc.chat
				} else if tc.responses != "" {
					wantErr = ""
				}
				got, err := buildRequest(t, st, Params{Provider: prov, Model: "m", MessageRefs: []cas.Ref{msg}, ToolsRef: &ref}, Config{})
				if want == "" {
					if err == nil || !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), wantErr) {
						t.Fatalf("%s: got error %v; want ErrInvalidParams containing %q", prov, err, wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", prov, err)
				}
				if !strings.Contains(got, `"tools":`+want) {
					t.Errorf("%s: request %s\nwant tools %s", prov, got, want)
				}
			}
		})
	}
}

func TestParamErrors(t *testing.T) {
	st := newStore()
	msg := st.put(t, "hi")
	tests := []struct {
		name string
		p    Params
		err  string
	}{
		{"no model", Params{MessageRefs: []cas.Ref{msg}}, "model is empty"},
		{"unknown provider", Params{Provider: "bedrock", Model: "m", MessageRefs: []cas.Ref{msg}}, `provider "bedrock" is not`},
		{"no messages", Params{Model: "m"}, "message_refs is empty"},
		{"temperature not a number", Params{Model: "m", MessageRefs: []cas.Ref{msg}, Temperature: ptr("warm")}, `temperature "warm" is not a decimal`},
		{"temperature too high", Params{Model: "m", MessageRefs: []cas.Ref{msg}, Temperature: ptr("2.5")}, "between 0 and 2"},
		{"temperature negative", Params{Model: "m", MessageRefs: []cas.Ref{msg}, Temperature: ptr("-0.1")}, "between 0 and 2"},
		{"max tokens too large", Params{Model: "m", MessageRefs: []cas.Ref{msg}, MaxTokens: 1 << 63}, "max_tokens"},
		{"schema not JSON", Params{Model: "m", MessageRefs: []cas.Ref{msg},
			ResponseFormat: &TextFormat{JSONSchema: &JSONSchemaFormat{Name: "s", SchemaJSON: "{"}}}, "schema_json is not a JSON object"},
		{"schema without name", Params{Model: "m", MessageRefs: []cas.Ref{msg},
			ResponseFormat: &TextFormat{JSONSchema: &JSONSchemaFormat{SchemaJSON: "{}"}}}, "needs a name"},
		{"missing tools blob", Params{Model: "m", MessageRefs: []cas.Ref{msg}, ToolsRef: ptr(cas.Sum([]byte("none")))}, "tools_ref"},
	}
	for _, tc := range tests {
		for _, prov := range []string{ProviderResponses, ProviderChat} {
			t.Run(tc.name+"/"+prov, func(t *testing.T) {
				p := tc.p
				if p.Provider == "" {
					p.Provider = prov
				}
				_, err := buildRequest(t, st, p, Config{})
				if err == nil || !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("got %v; want ErrInvalidParams containing %q", err, tc.err)
				}
			})
		}
	}
}

func TestChatRequestBytes(t *testing.T) {
	st := newStore()
	tools := st.put(t, `[{"type":"function","name":"workspace_read","description":"Read a file","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"strict":true}]`)
	user := st.put(t, "Summarise README.md")
	// §1.8 (without parallel_tool_calls, which the adapter does not send).
	got, err := buildRequest(t, st, Params{Provider: ProviderChat, Model: "qwen2.5:0.5b", MessageRefs: []cas.Ref{user}, ToolsRef: &tools,
		ToolChoice: &ToolChoice{Kind: ToolChoiceAuto}, Instructions: ptr("You are a careful agent.")}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[{"content":"You are a careful agent.","role":"system"},{"content":"Summarise README.md","role":"user"}],"model":"qwen2.5:0.5b",` +
		`"tool_choice":"auto","tools":[{"function":{"name":"workspace_read","strict":true,"description":"Read a file",` +
		`"parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},"type":"function"}]}`
	if want = sent(t, want, false); got != want {
		t.Errorf("request\n got %s\nwant %s", got, want)
	}
}

func TestChatTranscriptConversion(t *testing.T) {
	st := newStore()
	blobs := []string{
		`{"role":"developer","content":"Use tools."}`,
		`{"role":"user","content":[{"type":"input_text","text":"What is in"},{"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"low"},{"type":"input_file","file_id":"file-1"}]}`,
		// A model turn: reasoning (dropped), text, two parallel calls.
		`[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"x"},` +
			`{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Looking.","annotations":[]}]},` +
			`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"read","arguments":"{\"path\":\"a\"}"},` +
			`{"type":"function_call","id":"fc_2","call_id":"call_2","name":"read","arguments":"{\"path\":"}]`,
		`{"type":"function_call_output","call_id":"call_1","output":"A"}`,
		`{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"error:"},{"type":"input_text","text":"bad JSON"}]}`,
		// Calls with no message before them get their own assistant message.
		`{"type":"function_call","call_id":"call_3","name":"ls","arguments":"{}"}`,
		`{"type":"function_call_output","call_id":"call_3","output":"."}`,
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done"},{"type":"refusal","refusal":" but no."}]}`,
		`{"role":"system","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]}`,
	}
	var refs []cas.Ref
	for _, b := range blobs {
		refs = append(refs, st.put(t, b))
	}
	got, err := buildRequest(t, st, Params{Provider: ProviderChat, Model: "m", MessageRefs: refs}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[` +
		`{"content":"Use tools.","role":"system"},` +
		`{"content":[{"text":"What is in","type":"text"},{"image_url":{"url":"data:image/png;base64,AAAA","detail":"low"},"type":"image_url"},{"file":{"file_id":"file-1"},"type":"file"}],"role":"user"},` +
		`{"content":"Looking.","tool_calls":[{"id":"call_1","function":{"arguments":"{\"path\":\"a\"}","name":"read"},"type":"function"},{"id":"call_2","function":{"arguments":"{\"path\":","name":"read"},"type":"function"}],"role":"assistant"},` +
		`{"content":"A","tool_call_id":"call_1","role":"tool"},` +
		`{"content":"error:\nbad JSON","tool_call_id":"call_2","role":"tool"},` +
		`{"tool_calls":[{"id":"call_3","function":{"arguments":"{}","name":"ls"},"type":"function"}],"role":"assistant"},` +
		`{"content":".","tool_call_id":"call_3","role":"tool"},` +
		`{"content":"Done but no.","role":"assistant"},` +
		`{"content":"a\nb","role":"system"}` +
		`],"model":"m"}`
	if want = sent(t, want, false); got != want {
		t.Errorf("request\n got %s\nwant %s", got, want)
	}

	bad := []struct{ blob, err string }{
		{`{"type":"item_reference","id":"msg_1"}`, `item type "item_reference" cannot be sent to provider openai-chat`},
		{`{"role":"user","content":[{"type":"input_audio"}]}`, `part type "input_audio" cannot be sent`},
		{`{"role":"user","content":[{"type":"input_image","file_id":"f"}]}`, "needs image_url"},
		{`{"role":"system","content":[{"type":"input_image","image_url":"x"}]}`, "takes only text"},
		{`{"role":"critic","content":"x"}`, `role "critic" is not`},
		{`{"type":"function_call","name":"f"}`, "needs call_id and name"},
		{`{"type":"function_call_output","output":"x"}`, "needs call_id"},
		{`{"role":"user","content":7}`, "content must be text or a list of parts"},
	}
	for _, tc := range bad {
		ref := st.put(t, tc.blob)
		_, err := buildRequest(t, st, Params{Provider: ProviderChat, Model: "m", MessageRefs: []cas.Ref{ref}}, Config{})
		if err == nil || !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: got %v; want ErrInvalidParams containing %q", tc.blob, err, tc.err)
		}
	}
}

func TestChatRequestOptions(t *testing.T) {
	st := newStore()
	msg := st.put(t, "hi")
	g, err := New(Config{BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	p := Params{Provider: ProviderChat, Model: "m", MessageRefs: []cas.Ref{msg}, MaxTokens: 100, Temperature: ptr("0.5"),
		ReasoningEffort: ptr("low"), PreviousResponseID: ptr("resp_ignored"),
		ResponseFormat: &TextFormat{JSONSchema: &JSONSchemaFormat{Name: "s", SchemaJSON: `{"type":"object"}`, Strict: true}}}
	c, err := g.prepare(t.Context(), st, p, "", func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	b := c.body.bytes()
	want := sent(t, `{"messages":[{"content":"hi","role":"user"}],"model":"m","max_tokens":100,"temperature":0.5,"reasoning_effort":"low",`+
		`"stream_options":{"include_usage":true},"response_format":{"json_schema":{"name":"s","strict":true,"schema":{"type":"object"}},"type":"json_schema"}}`, true)
	if string(b) != want {
		t.Errorf("request\n got %s\nwant %s", b, want)
	}
}

func TestNewConfig(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/env/v1/")
	g, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if g.cfg.BaseURL != "http://127.0.0.1:9/env/v1" || g.cfg.Provider != ProviderResponses || g.cfg.MaxAttempts != DefaultMaxAttempts || g.cfg.Timeout != DefaultTimeout {
		t.Errorf("defaults: %+v", g.cfg)
	}
	t.Setenv("OPENAI_BASE_URL", "")
	g, err = New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if g.cfg.BaseURL != DefaultBaseURL {
		t.Errorf("base URL %q; want %q", g.cfg.BaseURL, DefaultBaseURL)
	}
	for _, bad := range []Config{{Provider: "x"}, {BaseURL: "api.openai.com"}, {BaseURL: "ftp://x/v1"}, {MaxAttempts: -1}, {Timeout: -1}} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v) succeeded", bad)
		}
	}
}

// TestToolsMarshaledOnce: a function tool is marshaled once, when its
// blob is parsed; the request made with that JSON is byte for byte the one
// made by marshaling the tool with the request (what was recorded before).
func TestToolsMarshaledOnce(t *testing.T) {
	blob := `{"tools":[
		{"type":"function","name":"a_tool","description":"Reads <b>bold</b> & \"quoted\" text, ünïcode, \u2028.",
		 "parameters":{"type":"object","properties":{"z":{"type":"string","enum":["<",">","&"]},"a":{"type":"integer","minimum":1}},"required":["z"],"additionalProperties":false},
		 "strict":true,"x_extra":{"k":[1,2.5,"s"]}},
		{"type":"function","name":"bare","parameters":{}},
		{"type":"web_search_preview"}]}`
	tools, err := parseTools([]byte(blob))
	if err != nil {
		t.Fatal(err)
	}
	structured := slices.Clone(tools)
	for i, tl := range tools {
		if tl.typ == "function" && tl.resp == nil {
			t.Fatalf("tool %d (%s) was not marshaled when parsed", i, tl.name)
		}
		structured[i].resp = nil
	}
	items, err := parseMessageBlob(cas.Sum([]byte("m")), []byte(`hello`))
	if err != nil {
		t.Fatal(err)
	}
	p := Params{Model: "m"}
	once, err := buildResponsesParams(p, items, tools, false, Model{})
	if err != nil {
		t.Fatal(err)
	}
	each, err := buildResponsesParams(p, items, structured, false, Model{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := json.Marshal(once)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(each)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("requests differ:\nonce %s\neach %s", a, b)
	}
	if !bytes.Contains(a, []byte(`"x_extra"`)) || !bytes.Contains(a, []byte(`"a_tool"`)) {
		t.Errorf("the request lacks the tools: %s", a)
	}
}
