package cli

import (
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOtherUsersStore: a store that a demiurge run of another user writes
// (its directory shared, its socket for its own user alone) is said to be
// so, by approve, deny and the read commands, with what to do: not "held
// by a process that serves no reads", and not "no API key". Run as root,
// the other user is nobody.
func TestOtherUsersStore(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, to run demiurge as another user (nobody)")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	// A directory everyone reaches, with this test binary in it (nobody
	// cannot reach the go command's build directory).
	dir, err := os.MkdirTemp("", "demiurge-other-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "demiurge")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := copyFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "examples", "demiurge")
	if err := copyAIR(filepath.Join("..", "examples", "demiurge"), manifest); err != nil {
		t.Fatal(err)
	}
	if err := filepath.Walk(filepath.Join(dir, "examples"), func(p string, _ os.FileInfo, _ error) error { return os.Chmod(p, 0o755) }); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "store")

	// root's run holds the store, waiting for its next line.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	env := []string{"OPENAI_API_KEY=", "OPENAI_BASE_URL=", storeEnv + "="}
	p := startDemiurge(t, "run", pr, env, "--store", store, "run", manifest, "--llm", "cassette:"+filepath.Join("..", "testdata", "sessions", "demo"))
	sock := filepath.Join(store, "demiurge.sock")
	waitForFile(t, sock)
	// Shared as a team might share it: the directory and the file open to
	// all; the socket stays its user's.
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{{store, 0o777}, {filepath.Join(store, "demiurge.db"), 0o666}} {
		if err := os.Chmod(f.path, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	asNobody := func(args ...string) (string, int) {
		cmd := exec.Command(bin, append([]string{"--store", store}, args...)...)
		cmd.Args[0] = "demiurge"
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	want := "store: written by a process of another user: a process of user root (uid 0) writes store " + store +
		", and its socket answers only that user: run this command as root, answer at that process's terminal, or wait until it has stopped"
	for _, args := range [][]string{
		{"approve", manifest},
		{"approve", manifest, "call_1"},
		{"deny", manifest, "call_1"},
		{"trace"},
	} {
		out, code := asNobody(args...)
		if code != exitFailure || !strings.Contains(out, want) || strings.Contains(out, "API key") || strings.Contains(out, "serves no reads") {
			t.Errorf("%s as nobody: exit %d\n%s\nwant exit 1 and %q", args, code, out, want)
		}
	}
	// The socket open to all, the writer is asked who it is.
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	out, code := asNobody("approve", manifest, "call_1")
	if code != exitFailure || !strings.Contains(out, "store: written by a process of another user: process "+strconv.Itoa(p.cmd.Process.Pid)+" of user root (uid 0) writes store") {
		t.Errorf("approve as nobody, through an open socket: exit %d\n%s", code, out)
	}
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// waitForFile waits (up to 20 s) until path exists.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 20 s", path)
		}
	}
}
