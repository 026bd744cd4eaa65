package demiurge_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
)

// TestLongCallsKeepPreviewsInState: the chat's state is written at every
// step, so a call's long arguments and output are kept there as previews;
// the entries' refs name the whole, which the model got.
func TestLongCallsKeepPreviewsInState(t *testing.T) {
	path := strings.Repeat("é", 3000) // 6000 bytes, two per rune: cuts must respect UTF-8
	args, _ := json.Marshal(map[string]string{"path": path})
	cw := newChatWorld(t, llmtest.Script{Turns: []llmtest.Turn{
		{Calls: []llmtest.Call{{Name: "workspace_read", Arguments: string(args)}}},
		{Text: "read it"},
	}})
	ctx := t.Context()
	msg, _ := cw.st.CAS().Put(ctx, []byte(`{"role":"user","content":"read"}`))
	js := fmt.Sprintf(`{"User": {"chat_id": "c1", "request_id": 1, "text": "read", "message_ref": %q, "settings": {"provider": "openai-responses",
		"model": "gpt-test", "max_tokens": 1000, "tools_ref": %q, "max_rounds": 4, "max_repeats": 3, "output_limit": 100000}}}`,
		msg, cw.state(t).Settings.ToolsRef)
	if _, err := cw.w.SendJSON(ctx, "demiurge/ChatEvent@3", []byte(js)); err != nil {
		t.Fatal(err)
	}
	if err := cw.w.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	st := cw.state(t)
	var call, out *demiurge.Entry
	for i := range st.Entries {
		switch st.Entries[i].Kind {
		case demiurge.EntryToolCall:
			call = &st.Entries[i]
		case demiurge.EntryToolOutput:
			out = &st.Entries[i]
		}
	}
	if call == nil || out == nil {
		t.Fatalf("no call or output entry:\n%s", entries(st))
	}
	wantOut := "contents of " + path
	for _, e := range []*demiurge.Entry{call, out} {
		if len(e.Text) > demiurge.EntryTextLimit+40 || !strings.HasSuffix(e.Text, " bytes in all]") {
			t.Errorf("%s entry keeps %d bytes: %.80q…", e.Kind, len(e.Text), e.Text)
		}
		if !utf8.ValidString(e.Text) {
			t.Errorf("%s preview is not valid UTF-8", e.Kind)
		}
	}
	tc, err := demiurge.ToolCallOf(ctx, cw.st.CAS(), *call)
	if err != nil || tc.ArgumentsJSON != string(args) || tc.Name != "workspace_read" {
		t.Errorf("ToolCallOf = %s %.60q…, %v; want the whole arguments", tc.Name, tc.ArgumentsJSON, err)
	}
	got, err := demiurge.ToolOutputOf(ctx, cw.st.CAS(), *out)
	if err != nil || got != wantOut {
		t.Errorf("ToolOutputOf = %d bytes, %v; want the whole output (%d bytes)", len(got), err, len(wantOut))
	}
	// The model got the whole output.
	reqs := cw.srv.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, path) {
		t.Errorf("the model's second request lacks the whole output")
	}
	checkReplay(t, cw)
}
