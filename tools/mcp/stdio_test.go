package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/mcp"
)

// stdioServer runs this test binary as a stdio MCP server (see TestMain).
func stdioServer(t testing.TB, name string, env map[string]string) mcp.Server {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{stdioServerEnv: "1"}
	for k, v := range env {
		e[k] = v
	}
	return mcp.Server{Name: name, Command: exe, Args: []string{"-test.run=^$"}, Env: e}
}

func TestStdio(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-host-secret")
	dir := t.TempDir()
	srv := stdioServer(t, "local", map[string]string{"TOKEN": "tok-123456", "MODE": "plain"})
	srv.Secrets = []string{"tok-123456"}
	srv.Dir = dir
	set := connect(t, nil, srv)
	for _, tc := range []struct {
		name, tool, args, out, errText string
	}{
		{"a call", "local_echo", `{"text": "over stdio"}`, "echo: over stdio", ""},
		{"its own environment", "local_env", `{"name": "MODE"}`, "MODE=plain", ""},
		{"a secret comes back redacted", "local_env", `{"name": "TOKEN"}`, "TOKEN=[secret]", ""},
		{"the host's PATH is inherited", "local_env", `{"name": "PATH"}`, "PATH=" + os.Getenv("PATH"), ""},
		{"the host's API key is not", "local_env", `{"name": "OPENAI_API_KEY"}`, "", "local_env: OPENAI_API_KEY is not set"},
		{"it runs in Dir", "local_pwd", `{}`, dir, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errText, _, _ := call(t, set, tc.tool, tc.args)
			if out != tc.out || errText != tc.errText {
				t.Errorf("got %q %q; want %q %q", out, errText, tc.out, tc.errText)
			}
		})
	}
	t.Run("a crash restarts the server once, then its calls fail", func(t *testing.T) {
		_, errText, code, cat := call(t, set, "local_crash", `{}`)
		if code != 1 || cat != mcp.ErrorUnavailable || !strings.Contains(errText, "died during the call") || !strings.Contains(errText, "it will be restarted for the next call") {
			t.Errorf("crash: %q, exit %d, %q", errText, code, cat)
		}
		if out, errText, _, _ := call(t, set, "local_echo", `{"text": "again"}`); out != "echo: again" {
			t.Errorf("after the restart: %q %q", out, errText)
		}
		_, errText, _, _ = call(t, set, "local_crash", `{}`)
		if !strings.Contains(errText, "it was restarted once already, so its tools are now unavailable") {
			t.Errorf("second crash: %q", errText)
		}
		_, errText, code, cat = call(t, set, "local_echo", `{"text": "no more"}`)
		if code != 1 || cat != mcp.ErrorUnavailable || !strings.Contains(errText, "died again after its restart: exit status 3") {
			t.Errorf("after the second crash: %q, exit %d, %q", errText, code, cat)
		}
		// The server's stderr ends the message, its secret redacted.
		if !strings.Contains(errText, "crashing with token [secret]") || strings.Contains(errText, "tok-123456") {
			t.Errorf("stderr in the message: %q", errText)
		}
		si := set.Servers()[0]
		if si.Status != mcp.StatusDown || si.Restarts != 1 || si.Kind != "stdio" {
			t.Errorf("server %+v", si)
		}
	})
}

func TestStdioServerThatExitsAtOnce(t *testing.T) {
	srv := mcp.Server{Name: "false", Command: "false"}
	set := connect(t, nil, srv)
	si := set.Servers()[0]
	if si.Status != mcp.StatusFailed || si.Err == nil || !strings.Contains(si.Err.Error(), "MCP server false (false): start:") {
		t.Errorf("server %+v", si)
	}
}

func TestStreamableHTTP(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return testServer() }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	srv := mcp.Server{Name: "web", URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer s3cret"}, Secrets: []string{"s3cret"}}
	set := connect(t, nil, srv)
	if out, errText, code, _ := call(t, set, "web_echo", `{"text": "over http with s3cret"}`); code != 0 || out != "echo: over http with [secret]" {
		t.Errorf("call: %q %q", out, errText)
	}
	mu.Lock()
	for _, a := range auth {
		if a != "Bearer s3cret" {
			t.Errorf("a request had Authorization %q", a)
		}
	}
	mu.Unlock()
	if si := set.Servers()[0]; si.Kind != "http" || si.Target != ts.URL || si.Status != mcp.StatusConnected {
		t.Errorf("server %+v", si)
	}

	// Without the header the server refuses, and the tool set says so
	// without showing any header.
	srv.Name, srv.Headers = "anon", nil
	anon := connect(t, nil, srv)
	if si := anon.Servers()[0]; si.Status != mcp.StatusFailed || !strings.Contains(si.Err.Error(), "Unauthorized") {
		t.Errorf("anonymous: %+v", si)
	}
}

func TestStreamableHTTPServerRestart(t *testing.T) {
	// The server restarts and forgets its sessions: the call that finds
	// out fails saying so, the next one reconnects.
	var restarted atomic.Bool
	before := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return testServer() }, nil)
	after := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return testServer() }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if restarted.Load() {
			after.ServeHTTP(w, r)
			return
		}
		before.ServeHTTP(w, r)
	}))
	defer ts.Close()
	set := connect(t, nil, mcp.Server{Name: "web", URL: ts.URL})
	if out, _, _, _ := call(t, set, "web_echo", `{"text": "1"}`); out != "echo: 1" {
		t.Fatalf("first call: %q", out)
	}
	restarted.Store(true)
	_, errText, code, cat := call(t, set, "web_echo", `{"text": "2"}`)
	if code != 1 || cat != mcp.ErrorUnavailable || !strings.Contains(errText, "died during the call") || !strings.Contains(errText, "session not found") {
		t.Errorf("call after the restart: %q, exit %d, %q", errText, code, cat)
	}
	if out, errText, _, _ := call(t, set, "web_echo", `{"text": "3"}`); out != "echo: 3" {
		t.Errorf("next call: %q %q; want a new session", out, errText)
	}
	if si := set.Servers()[0]; si.Status != mcp.StatusConnected || si.Restarts != 1 {
		t.Errorf("server %+v", si)
	}
}

func TestCloseDuringCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, _ := memServer("demo")
		set, err := mcp.Connect(t.Context(), []mcp.Server{srv}, nil)
		if err != nil {
			t.Fatal(err)
		}
		tool, _ := set.Tool("demo_wait")
		done := make(chan tools.Response)
		go func() { done <- tool.Run(context.Background(), toolsRequest(`{}`), nil) }()
		synctest.Wait() // the call waits on the server
		if err := set.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		r := <-done
		if r.ExitCode != 1 || r.Error != mcp.ErrorUnavailable || !strings.Contains(r.Stderr, "MCP server demo was closed during the call") {
			t.Errorf("a call cut by Close: %+v", r)
		}
		if r := tool.Run(t.Context(), toolsRequest(`{}`), nil); r.Error != mcp.ErrorUnavailable || !strings.Contains(r.Stderr, "MCP server demo is closed") {
			t.Errorf("a call after Close: %+v", r)
		}
	})
}
