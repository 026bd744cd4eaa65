package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// TestRunOversizedMessage: run refuses a message over the limit, saying
// it, before anything is journaled; on a pipe the lines after it go on,
// and -m exits 1. The chat stays usable.
func TestRunOversizedMessage(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Script{Turns: []llmtest.Turn{{Text: "one"}, {Text: "two"}, {Text: "three"}}})
	defer srv.Close()
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL}
	dir := t.TempDir()
	run1 := func(stdin string, extra ...string) result {
		args := append([]string{"--store", dir, "run", filepath.Join("..", "examples", "demiurge"), "--model", "gpt-4o"}, extra...)
		return run(t, env, stdin, args...)
	}
	big := strings.Repeat("x", 2<<20)
	const says = "message not sent: too large: it is 2.0 MiB (2097180 bytes as sent), and a model call is sent at most 64 KiB (65536 bytes) of one message"
	r := run1("hello\n" + big + "\nstill there?\n")
	if r.code != exitOK || !strings.Contains(r.stderr, says) || !strings.Contains(r.stdout, "one") || !strings.Contains(r.stdout, "two") {
		t.Errorf("on a pipe: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if r := run1("", "-m", big); r.code != exitFailure || !strings.Contains(r.stderr, says) {
		t.Errorf("-m: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if r := run1("", "-m", "and now?"); r.code != exitOK || !strings.Contains(r.stdout, "three") {
		t.Errorf("the next -m: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if reqs := srv.Requests(); len(reqs) != 3 {
		t.Errorf("the model was called %d times; want 3 (the big message never sent)", len(reqs))
	}
}
