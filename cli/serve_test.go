package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startServe starts demiurge serve and waits until it answers.
func startServe(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	p := startDemiurge(t, name, nil, env, args...)
	addr := ""
	for i, a := range args {
		if a == "--addr" {
			addr = args[i+1]
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited: %s", name, p.stderr())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer after 20 s: %s", name, p.stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sseEvent is an event of a stream, as a client reads it.
type sseEvent struct{ id, event, data string }

// readEvents reads a stream's events, calling fn with each until it
// returns false.
func readEvents(r io.Reader, fn func(sseEvent) bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.event != "" && !fn(ev) {
				return
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			ev.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// sse opens an event stream.
func sse(t *testing.T, ctx context.Context, method, url, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return resp
}

// TestServeKilledMidTurn: a server killed (kill -9) while a turn's model
// call is in flight, restarted on its store, resumes the turn (the call
// is sent again as the world reopens) and the stream: the client comes
// back with Last-Event-ID and gets the rest of the turn, every event once;
// demiurge replay verifies the world afterwards.
func TestServeKilledMidTurn(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	defer close(hold)
	model := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Text: "Looking.", Calls: []llmtest.Call{{Name: "bash", Arguments: `{"commands": "echo hi > a.txt; cat a.txt"}`, CallID: "call_1"}}},
		{Text: "never sent: the server dies first", Hold: hold},
		{Text: "a.txt says hi."},
	}})
	t.Cleanup(model.Close)
	dir := filepath.Join(t.TempDir(), "store")
	addr := freeAddr(t)
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + model.URL, storeEnv + "="}
	manifest := filepath.Join("..", "examples", "demiurge")
	args := []string{"--store", dir, "serve", manifest, "--addr", addr, "--model", "gpt-test"}
	first := startServe(t, "serve", env, args...)

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	base := "http://" + addr + "/v1/worlds/main/chats/c"
	resp := sse(t, ctx, "POST", base+"/messages", `{"text": "write a.txt"}`)
	var before []sseEvent
	readEvents(resp.Body, func(e sseEvent) bool {
		before = append(before, e)
		return e.event != "tool_call_finished"
	})
	for len(model.Requests()) < 2 { // the second model call is in flight
		time.Sleep(10 * time.Millisecond)
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.wait()
	resp.Body.Close()

	second := startServe(t, "serve again", env, args...)
	last := before[len(before)-1].id
	var after []sseEvent
	readEvents(sse(t, ctx, "GET", base+"/turns/1/events", "", "Last-Event-ID", last).Body, func(e sseEvent) bool {
		after = append(after, e)
		return true
	})
	if len(after) == 0 || after[len(after)-1].event != "turn_end" || !strings.Contains(after[len(after)-1].data, `"outcome":"answer"`) {
		t.Fatalf("the resumed stream: %v", after)
	}
	// Every event once: what the client saw, across the kill, is the
	// turn as its journal holds it.
	var whole []sseEvent
	readEvents(sse(t, ctx, "GET", base+"/turns/1/events", "").Body, func(e sseEvent) bool {
		whole = append(whole, e)
		return true
	})
	got := journaledIDs(append(before, after...))
	if want := journaledIDs(whole); got != want {
		t.Errorf("the client saw\n%s\nthe turn is\n%s", got, want)
	}
	t.Logf("before the kill:\n%s\nafter:\n%s", journaledIDs(before), journaledIDs(after))
	if !strings.Contains(got, "message") || !strings.Contains(whole[len(whole)-2].data, "a.txt says hi.") {
		t.Errorf("the turn: %v", whole)
	}
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := second.wait(); code != exitOK {
		t.Errorf("serve after SIGTERM: exit %d\n%s", code, second.stderr())
	}
	r := mustRun(t, exitOK, "", "--store", dir, "replay")
	if !strings.Contains(r.stdout, "ok") {
		t.Errorf("replay: %s", r.stdout)
	}
}

// journaledIDs are the ids and names of the journaled events of evs.
func journaledIDs(evs []sseEvent) string {
	var s []string
	for _, e := range evs {
		if e.event != "text_delta" {
			s = append(s, e.id+" "+e.event)
		}
	}
	return strings.Join(s, "\n")
}

// TestServeGracefulHandover: SIGTERM while a turn runs longer than the
// grace period ends the server: the client's stream gets an error event
// saying to come back (retry), the server exits 0, and the next server
// finishes the turn; the client resumes it there.
func TestServeGracefulHandover(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	defer close(hold)
	model := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Text: "slow", Hold: hold},
		{Text: "done after the handover"},
	}})
	t.Cleanup(model.Close)
	dir := filepath.Join(t.TempDir(), "store")
	addr := freeAddr(t)
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + model.URL, storeEnv + "="}
	args := []string{"--store", dir, "serve", filepath.Join("..", "examples", "demiurge"), "--addr", addr, "--model", "gpt-test", "--grace", "500ms"}
	first := startServe(t, "serve", env, args...)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	base := "http://" + addr + "/v1/worlds/main/chats/c"
	resp := sse(t, ctx, "POST", base+"/messages", `{"text": "go"}`)
	for len(model.Requests()) < 1 {
		time.Sleep(10 * time.Millisecond)
	}
	var evs []sseEvent
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = first.cmd.Process.Signal(syscall.SIGTERM)
	}()
	readEvents(resp.Body, func(e sseEvent) bool { evs = append(evs, e); return true })
	if code := first.wait(); code != exitOK {
		t.Errorf("serve after SIGTERM: exit %d\n%s", code, first.stderr())
	}
	if len(evs) == 0 || evs[len(evs)-1].event != "error" || !strings.Contains(evs[len(evs)-1].data, "shutting_down") {
		t.Fatalf("the stream at the handover: %v", evs)
	}
	if !strings.Contains(first.stderr(), "handed over") {
		t.Errorf("the log does not say the turn was handed over:\n%s", first.stderr())
	}
	second := startServe(t, "serve again", env, args...)
	defer func() { _ = second.cmd.Process.Signal(syscall.SIGTERM); second.wait() }()
	last := ""
	for _, e := range evs {
		if e.id != "" {
			last = e.id
		}
	}
	var after []sseEvent
	readEvents(sse(t, ctx, "GET", base+"/turns/1/events", "", "Last-Event-ID", last).Body, func(e sseEvent) bool {
		after = append(after, e)
		return true
	})
	if len(after) == 0 || !strings.Contains(after[len(after)-1].data, `"outcome":"answer"`) {
		t.Fatalf("after the handover: %v", after)
	}
	var msg struct{ Text string }
	for _, e := range after {
		if e.event == "message" {
			_ = json.Unmarshal([]byte(e.data), &msg)
		}
	}
	if msg.Text != "done after the handover" {
		t.Errorf("the answer after the handover: %q (%s)", msg.Text, fmt.Sprint(after))
	}
}

// TestServeHoldsTheStore: beside a running demiurge serve, which holds
// the store, a command that writes it (run, fork) fails saying that
// serve holds it, its pid, and what to do (stop it, another store, or
// ask it over HTTP); approve lists nothing to approve in chat main as a
// failure that names the chat where a call waits, and its decision on
// that call is handed to the server, which journals it and goes on with
// the turn.
func TestServeHoldsTheStore(t *testing.T) {
	t.Parallel()
	model := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{
		{Text: "Writing.", Calls: []llmtest.Call{{Name: "workspace_write", Arguments: `{"path": "a.md", "content": "hi"}`, CallID: "call_w"}}},
		{Text: "Wrote a.md."},
	}})
	t.Cleanup(model.Close)
	dir := filepath.Join(t.TempDir(), "store")
	addr := freeAddr(t)
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + model.URL, storeEnv + "="}
	manifest := filepath.Join("..", "examples", "demiurge")
	p := startServe(t, "serve", env, "--store", dir, "serve", manifest, "--addr", addr, "--model", "gpt-test", "--require-approval", "workspace_write")
	defer func() { _ = p.cmd.Process.Signal(syscall.SIGTERM); p.wait() }()
	base := "http://" + addr + "/v1/worlds/ap9/chats/c"
	resp, err := http.Post(base+"/messages", "application/json", strings.NewReader(`{"text": "write a.md"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"outcome":"awaiting_approval"`) {
		t.Fatalf("the message: %d %s", resp.StatusCode, b)
	}

	modelEnv := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": model.URL}
	held := regexp.MustCompile(`^demiurge: open store ` + regexp.QuoteMeta(dir) + `: locked: ` + regexp.QuoteMeta(filepath.Join(dir, "demiurge.db")) +
		` is held by demiurge serve \(pid [0-9]+\); waited 1s for it: stop it \(or let it finish\), or give this command another store \(--store DIR\); ` +
		`or ask that server over HTTP \(docs/api.md\): a message is POST /v1/worlds/WORLD/chats/CHAT/messages, an approval POST …/approvals/CALL\n$`)
	for _, args := range [][]string{
		{"run", manifest, "--model", "gpt-test", "-m", "hi"},
		{"fork", "--from", "ap9", "--at", "1", "--world", "f"},
	} {
		r := run(t, modelEnv, "", append([]string{"--store", dir}, args...)...)
		if r.code != exitFailure || !held.MatchString(r.stderr) {
			t.Errorf("%s beside serve: exit %d\n%s", args[0], r.code, r.stderr)
		}
	}

	// approve: nothing waits in chat main (the default): a failure that
	// says where a call waits.
	r := run(t, modelEnv, "", "--store", dir, "approve", manifest, "--world", "ap9")
	if want := "demiurge: approve: no call of chat main of world ap9 waits for approval; chat c has 1 call that waits (demiurge approve " + manifest + " --world ap9 --chat c lists it)\n"; r.code != exitFailure || r.stderr != want {
		t.Errorf("approve without --chat: exit %d\n%s\nwant\n%s", r.code, r.stderr, want)
	}
	r = run(t, modelEnv, "", "--store", dir, "approve", manifest, "call_w", "--world", "ap9", "--chat", "c")
	if r.code != exitOK || !regexp.MustCompile(`^approved call call_w \(workspace_write\) of chat c in world ap9: process [0-9]+, which runs the world, journaled it at record [0-9]+ and goes on with the turn\n$`).MatchString(r.stdout) {
		t.Fatalf("approve beside serve: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var last sseEvent
	readEvents(sse(t, ctx, "GET", base+"/turns/1/events", "").Body, func(e sseEvent) bool { last = e; return true })
	if last.event != "turn_end" || !strings.Contains(last.data, `"outcome":"answer"`) {
		t.Errorf("the turn after the decision ends with %+v", last)
	}
}
