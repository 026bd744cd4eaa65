package serve

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// RequireNodeEnv, set to 1 (CI does), makes TestNodeOpenAI fail instead
// of skipping when node or the openai package is not installed.
const RequireNodeEnv = "DEMIURGE_REQUIRE_NODE"

// TestNodeOpenAI: the official openai npm package (pinned in
// testdata/npm/package-lock.json; .ci/run installs it with npm ci) holds
// two-message conversations against the server, with a token: through
// the Responses API, not streamed and streamed, and through Chat
// Completions, not streamed and streamed; the agent's bash calls run in
// the sandbox; a client-side tool is refused in OpenAI's error shape,
// which the package reads; a streamed response retrieved again with
// stream and starting_after gives the events after that number, as the
// whole stream has them; the world replays afterwards.
func TestNodeOpenAI(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "npm")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json"))
	}
	if err != nil {
		if os.Getenv(RequireNodeEnv) == "1" {
			t.Fatalf("node and the openai package are required (%s=1): %v; run npm ci in serve/testdata/npm", RequireNodeEnv, err)
		}
		t.Skipf("node or the openai package is not installed (%v): run npm ci in serve/testdata/npm (.ci/run does)", err)
	}
	var turns []llmtest.Turn
	for range 4 { // two Responses conversations, two Chat Completions ones
		turns = append(turns, conversationTurns()...)
	}
	file := filepath.Join(t.TempDir(), "tokens.json")
	token, _, err := CreateToken(file, "node", []string{"main"})
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := OpenTokenFile(file)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, turns, func(o *Options) { o.Tokens = tokens })
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", e.url+"/v1", token)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client.mjs: %v\n%s", err, stderr.String())
	}
	type call struct{ Name, Server, Output, Status string }
	type turn struct {
		ID, Status, Text, Conversation, Deltas, OutputText string
		Calls                                              []call
		Usage                                              int
		Events                                             []string
	}
	var got struct {
		Models          []string
		Responses       []turn
		ResponsesStream []turn
		Chat            []struct {
			Answer string
			Usage  int
		}
		ChatStream []struct {
			Answer string
			Usage  int
		}
		Refused struct {
			Status               int
			Code, Param, Message string
		}
		Resumed struct {
			Whole, Rest []struct {
				Seq  int
				Type string
			}
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the client's output: %v\n%s", err, out)
	}
	if strings.Join(got.Models, ",") != "demiurge" {
		t.Errorf("models: %v", got.Models)
	}
	for name, ts := range map[string][]turn{"responses": got.Responses, "responses streamed": got.ResponsesStream} {
		if len(ts) != 2 {
			t.Fatalf("%s: %d turns", name, len(ts))
		}
		want := []struct{ text, output string }{
			{"I'll write it.\n\nnotes.txt says hello.", "hello\n"},
			{"notes.txt has 2 lines now.", "2\n"},
		}
		for i, tr := range ts {
			if tr.Status != "completed" || tr.Text != want[i].text || tr.Usage == 0 {
				t.Errorf("%s, turn %d: %+v", name, i+1, tr)
			}
			if len(tr.Calls) != 1 || tr.Calls[0].Name != "bash" || tr.Calls[0].Server != "demiurge" || !strings.HasPrefix(tr.Calls[0].Output, want[i].output) {
				t.Errorf("%s, turn %d: calls %+v", name, i+1, tr.Calls)
			}
		}
		if ts[0].Conversation == "" || ts[0].Conversation != ts[1].Conversation {
			t.Errorf("%s: conversations %q and %q; want one", name, ts[0].Conversation, ts[1].Conversation)
		}
	}
	// The package's output_text joins the messages' texts with nothing.
	if got.Responses[0].OutputText != strings.ReplaceAll(got.Responses[0].Text, "\n\n", "") {
		t.Errorf("the package's output_text %q; the messages' %q", got.Responses[0].OutputText, got.Responses[0].Text)
	}
	if s := got.ResponsesStream[0]; strings.ReplaceAll(s.Deltas, "\n", "") != strings.ReplaceAll(s.Text, "\n", "") ||
		!strings.Contains(strings.Join(s.Events, " "), "response.mcp_call.completed") {
		t.Errorf("streamed: deltas %q, text %q, events %v", s.Deltas, s.Text, s.Events)
	}
	for name, as := range map[string][]struct {
		Answer string
		Usage  int
	}{"chat": got.Chat, "chat streamed": got.ChatStream} {
		if len(as) != 2 || as[0].Answer != "I'll write it.\n\nnotes.txt says hello." || as[1].Answer != "notes.txt has 2 lines now." || as[1].Usage == 0 {
			t.Errorf("%s: %+v", name, as)
		}
	}
	if r := got.Resumed; len(r.Whole) < 5 || r.Whole[len(r.Whole)-1].Type != "response.completed" || !reflect.DeepEqual(r.Rest, r.Whole[4:]) {
		t.Errorf("the response streamed again: %+v\nafter event 3: %+v", r.Whole, r.Rest)
	}
	if r := got.Refused; r.Status != 400 || r.Code != "unsupported_parameter" || r.Param != "tools" {
		t.Errorf("a client-side tool: %+v", r)
	}
	if e.model.Remaining() != 0 {
		t.Errorf("%d model answers unused", e.model.Remaining())
	}
	e.replays("main")
}
