package cli

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
)

// TestDiskFullMidTurn fills a small tmpfs while an effect runs (the model
// answering a run, a web page fetched for a send), so that the commit of
// its receipt fails for want of space (ENOSPC) in the middle of a turn:
// run and send, the real binary, print the cause and exit 1 at once (they
// waited for --wait, ten minutes by default, and then blamed the turn's
// length). The journal stays sound, and with room on the disk again the
// next command recovers the world and goes on. It needs to mount a tmpfs
// (root, or CAP_SYS_ADMIN) and skips otherwise.
func TestDiskFullMidTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: mounts a tmpfs and runs the binary")
	}
	disk := t.TempDir()
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=8m,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs on %s (needs root or CAP_SYS_ADMIN): %v", disk, err)
	}
	t.Cleanup(func() { // before t.TempDir's removal: cleanups run last in, first out
		if err := syscall.Unmount(disk, 0); err != nil {
			t.Errorf("unmount %s: %v", disk, err)
		}
	})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "demiurge") // the test binary runs main under this name (TestMain)
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}

	// The effects fill the disk before they answer when full is set, and
	// answer with more bytes than the store's free pages hold (bbolt
	// reuses those first, and they take no new space).
	filler := filepath.Join(disk, "filler")
	var full atomic.Bool
	fillIfAsked := func() {
		if full.Load() {
			if err := fill(filler); err != nil {
				t.Errorf("fill the disk: %v", err)
			}
		}
	}
	model := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn {
		fillIfAsked()
		return llmtest.Turn{Text: strings.Repeat("All done. ", 25000)}
	})
	defer model.Close()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fillIfAsked()
		fmt.Fprint(w, strings.Repeat("fetched ", 32000))
	}))
	defer site.Close()

	storeDir := filepath.Join(disk, "store")
	demiurge := func(args ...string) (result, time.Duration) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, append([]string{"--store", storeDir}, args...)...)
		cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+model.URL, "OPENAI_API_KEY=sk-test", storeEnv+"=")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		start := time.Now()
		err := cmd.Run()
		took := time.Since(start)
		r := result{stdout: out.String(), stderr: errOut.String()}
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			r.code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("demiurge %q: %v", args, err)
		}
		return r, took
	}
	must := func(want int, args ...string) result {
		t.Helper()
		r, _ := demiurge(args...)
		if r.code != want {
			t.Fatalf("demiurge %q: exit %d; want %d\n%s%s", args, r.code, want, r.stdout, r.stderr)
		}
		return r
	}
	// fails runs args while the disk fills up under the effect: the
	// command must end at once, exit 1 on the commit's failure, and leave
	// the journal sound, with the turn's first records in it.
	fails := func(args ...string) {
		t.Helper()
		before, _ := demiurge("journal", "verify")
		full.Store(true)
		r, took := demiurge(append(args, "--wait", "2m")...)
		full.Store(false)
		t.Logf("demiurge %s on a full disk: exit %d after %v", args[0], r.code, took.Round(time.Millisecond))
		if r.code != exitFailure || !strings.Contains(r.stderr, "commit failed") || !strings.Contains(r.stderr, "no space left on device") ||
			strings.Contains(r.stderr, "--wait") {
			t.Errorf("demiurge %q on a full disk: exit %d after %v; want exit 1 on the commit's failure\n%s%s", args, r.code, took, r.stdout, r.stderr)
		}
		// A generous bound: it fails only on a wait for --wait (2 minutes).
		if took > 30*time.Second {
			t.Errorf("demiurge %q took %v to fail", args, took)
		}
		if err := os.Remove(filler); err != nil {
			t.Fatalf("the effect did not fill the disk: %v", err)
		}
		if after := must(exitOK, "journal", "verify").stdout; after == before.stdout {
			t.Errorf("demiurge %q: the journal did not get the turn's first records (the failure came too early)", args)
		}
	}

	// run: the receipt of the model's answer.
	manifest := filepath.Join("..", "examples", "demiurge")
	must(exitOK, "import", damageSession)
	fails("run", manifest, "--model", "gpt-test", "-m", "Say it again.")
	// Reopened with room on the disk: the model's call, whose receipt was
	// lost, is made again, the next message goes on, and the session
	// replays.
	if r := must(exitOK, "run", manifest, "--model", "gpt-test", "-m", "And once more."); !strings.Contains(r.stdout, "All done.") {
		t.Errorf("the run after the failed one:\n%.300s", r.stdout)
	}
	if n := len(model.Requests()); n < 3 {
		t.Errorf("the model was asked %d times; want the lost call made again", n)
	}
	must(exitOK, "replay", "--manifest", manifest, "--from-genesis")

	// send: the receipt of a fetch, in a new store (whose few free pages
	// cannot hold the page fetched).
	storeDir = filepath.Join(disk, "store2")
	fetch := filepath.Join("..", "examples", "fetch")
	start := fmt.Sprintf(`{"Start": {"url": %q, "method": "GET"}}`, site.URL+"/page")
	fails("send", "--manifest", fetch, "--schema", "fetch/Event@1", "--value", start)
	must(exitOK, "send", "--manifest", fetch, "--schema", "fetch/Event@1", "--value", start)
	must(exitOK, "replay", "--manifest", fetch, "--from-genesis")
}

// fill writes to path until the file system is full.
func fill(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, size := range []int{64 << 10, 4 << 10, 512} { // down to the last page
		buf := make([]byte, size)
		for {
			_, err := f.Write(buf)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}
