package mcp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/tools/mcp"
)

// Interop tests run MCP servers nobody on the team wrote, pinned in
// testdata/npm/package-lock.json: .ci/run installs them with npm ci.

// npmBin returns the path of an installed npm server's executable, or
// skips the test saying what is missing.
func npmBin(t testing.TB, name string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("interop: node is not on PATH; install Node.js (20 or later) to run the MCP interop tests")
	}
	bin, err := filepath.Abs(filepath.Join("testdata", "npm", "node_modules", ".bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("interop: %s is not installed; run `npm ci` in tools/mcp/testdata/npm (.ci/run does)", name)
	}
	return bin
}

// everything is @modelcontextprotocol/server-everything over stdio.
func everything(t testing.TB) mcp.Server {
	return mcp.Server{Name: "everything", Command: npmBin(t, "mcp-server-everything"), Args: []string{"stdio"}}
}

// filesystem is @modelcontextprotocol/server-filesystem with root as its
// only allowed directory.
func filesystem(t testing.TB, root string) mcp.Server {
	return mcp.Server{Name: "fs", Command: npmBin(t, "mcp-server-filesystem"), Args: []string{root}}
}

func TestInteropEverything(t *testing.T) {
	srv := everything(t)
	srv.Env = map[string]string{"DEMO_TOKEN": "tok-4242-secret"}
	srv.Secrets = []string{"tok-4242-secret"}
	set := connect(t, nil, srv)
	si := set.Servers()[0]
	if si.Status != mcp.StatusConnected {
		t.Fatalf("server: %+v", si)
	}
	t.Logf("%s %s %s, protocol %s, connect %s, list %s: %v", si.Name, si.ServerName, si.ServerVersion, si.Protocol, si.Connect, si.List, si.Tools)
	for _, want := range []string{"everything_echo", "everything_get-sum", "everything_get-env", "everything_get-structured-content"} {
		if _, ok := set.Tool(want); !ok {
			t.Errorf("no tool %s; tools %v", want, toolNames(set))
		}
	}
	for _, tc := range []struct {
		name, tool, args string
		out, errText     string // substrings
		code             int
		category         string
	}{
		{"echo", "everything_echo", `{"message": "hi"}`, "Echo: hi", "", 0, ""},
		{"sum", "everything_get-sum", `{"a": 2, "b": 3}`, "The sum of 2 and 3 is 5.", "", 0, ""},
		{"a secret in the environment comes back redacted", "everything_get-env", `{}`, `"DEMO_TOKEN": "[secret]"`, "", 0, ""},
		{"bad arguments", "everything_get-sum", `{"a": "two", "b": 3}`, "", "everything_get-sum: the arguments do not fit the input schema: at /a: got string, want number", 2, mcp.ErrorInvalidArguments},
		{"missing arguments", "everything_echo", `{}`, "", "missing property 'message'", 2, mcp.ErrorInvalidArguments},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errText, code, cat := call(t, set, tc.tool, tc.args)
			if !strings.Contains(out, tc.out) || !strings.Contains(errText, tc.errText) || code != tc.code || cat != tc.category {
				t.Errorf("got %q %q, exit %d, %q; want %q %q, exit %d, %q", out, errText, code, cat, tc.out, tc.errText, tc.code, tc.category)
			}
			if strings.Contains(out+errText, "tok-4242-secret") {
				t.Errorf("the secret leaked: %q %q", out, errText)
			}
		})
	}
	t.Run("structured content", func(t *testing.T) {
		out, errText, code, _ := call(t, set, "everything_get-structured-content", `{"location": "New York"}`)
		if code != 0 || !strings.Contains(out, `"temperature"`) {
			t.Errorf("got %q %q, exit %d", out, errText, code)
		}
	})
	t.Run("unknown tool", func(t *testing.T) {
		r := set.Adapter().Run(t.Context(), effectsCall{params: mcp.Params("everything", "no-such-tool", `{}`)}.call())
		v := receiptFields(t, r.Payload)
		if v["exit_code"] != int64(127) || v["error"] != mcp.ErrorUnknownTool || !strings.Contains(v["stderr"].(string), `has no tool "no-such-tool" (its tools: `) {
			t.Errorf("receipt %v", v)
		}
	})
}

func TestInteropFilesystemStaysInItsRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "inside.txt"), "hello from inside\n")
	write(filepath.Join(base, "outside.txt"), "secret from outside\n")
	if err := os.Symlink(filepath.Join(base, "outside.txt"), filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	set := connect(t, nil, filesystem(t, root))
	if _, ok := set.Tool("fs_read_text_file"); !ok {
		t.Fatalf("no fs_read_text_file; tools %v", toolNames(set))
	}
	read := func(path string) (string, string, int, string) {
		return call(t, set, "fs_read_text_file", `{"path": `+quote(path)+`}`)
	}
	if out, errText, code, _ := read(filepath.Join(root, "inside.txt")); code != 0 || !strings.Contains(out, "hello from inside") {
		t.Errorf("read inside: %q %q, exit %d", out, errText, code)
	}
	for _, path := range []string{
		filepath.Join(base, "outside.txt"),
		filepath.Join(root, "..", "outside.txt"),
		filepath.Join(root, "link.txt"),
		"/etc/passwd",
	} {
		out, errText, code, cat := read(path)
		if code != 1 || cat != mcp.ErrorTool || !strings.Contains(errText, "Access denied") || strings.Contains(out+errText, "secret from outside") {
			t.Errorf("read %s: %q %q, exit %d, %q; want it refused", path, out, errText, code, cat)
		}
	}
	if _, errText, code, _ := call(t, set, "fs_write_file", `{"path": `+quote(filepath.Join(base, "escaped.txt"))+`, "content": "x"}`); code != 1 || !strings.Contains(errText, "Access denied") {
		t.Errorf("write outside: %q, exit %d", errText, code)
	}
	if _, err := os.Stat(filepath.Join(base, "escaped.txt")); err == nil {
		t.Error("the server wrote outside its root")
	}
	if out, errText, code, _ := call(t, set, "fs_write_file", `{"path": `+quote(filepath.Join(root, "new.txt"))+`, "content": "written"}`); code != 0 {
		t.Errorf("write inside: %q %q", out, errText)
	}
	if b, err := os.ReadFile(filepath.Join(root, "new.txt")); err != nil || string(b) != "written" {
		t.Errorf("new.txt: %q %v", b, err)
	}
	// The server answers list_directory with the listing as text and as
	// structuredContent {"content": the listing}: the result holds it
	// once.
	if out, errText, code, _ := call(t, set, "fs_list_directory", `{"path": `+quote(root)+`}`); code != 0 ||
		strings.Count(out, "inside.txt") != 1 || strings.Contains(out, `{"content"`) {
		t.Errorf("list_directory: %q %q, exit %d; want the listing once, as text", out, errText, code)
	}
}

func quote(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}
