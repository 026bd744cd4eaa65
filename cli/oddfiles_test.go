//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUserNamedOddFiles: every file a command reads because a user named
// it (a cassette, a token file, an eval suite or report, a script, a file
// to put, a directory to import) is refused at once when it is a FIFO or
// a symlink to /dev/zero, with a message naming it: no command blocks on
// a FIFO or reads /dev/zero until memory runs out.
func TestUserNamedOddFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	// A cassette whose journal is the FIFO, one whose journal is /dev/zero.
	fifoCassette, zeroCassette := filepath.Join(dir, "fc"), filepath.Join(dir, "zc")
	for c, target := range map[string]string{fifoCassette: fifo, zeroCassette: "/dev/zero"} {
		if err := os.Mkdir(c, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(c, "journal.cbor")); err != nil {
			t.Fatal(err)
		}
	}
	// A suite whose file is the FIFO.
	suite := filepath.Join(dir, "suite")
	if err := os.Mkdir(suite, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fifo, filepath.Join(suite, "suite.yaml")); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "store")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"cassette journal FIFO", []string{"run", "../examples/demiurge", "--llm", "cassette:" + fifoCassette, "-m", "hi"}, "journal.cbor is not a regular file (a FIFO"},
		{"cassette journal /dev/zero", []string{"run", "../examples/demiurge", "--llm", "cassette:" + zeroCassette, "-m", "hi"}, "journal.cbor is not a regular file (a character device)"},
		{"token file FIFO", []string{"serve", "token", "list", "--token-file", fifo}, "fifo is not a regular file (a FIFO"},
		{"token file /dev/zero", []string{"serve", "token", "list", "--token-file", zero}, "zero is not a regular file (a character device)"},
		{"eval suite FIFO", []string{"eval", suite, "--llm", "cassette:" + fifoCassette, "--no-progress"}, "suite.yaml is not a regular file (a FIFO"},
		{"eval suite path FIFO", []string{"eval", fifo, "--no-progress"}, "fifo is neither a suite's directory nor a case file"},
		{"eval report FIFO", []string{"eval", "compare", fifo, zero}, "fifo is not a regular file (a FIFO"},
		{"sh script FIFO", []string{"sh", fifo}, "fifo is not a regular file (a FIFO"},
		{"sh script /dev/zero", []string{"sh", zero}, "zero is not a regular file (a character device)"},
		{"cas put FIFO", []string{"cas", "put", fifo}, "fifo is not a regular file (a FIFO"},
		{"cas put /dev/zero", []string{"cas", "put", zero}, "zero is not a regular file (a character device)"},
		{"workspace import FIFO", []string{"workspace", "import", "--manifest", wsManifest, fifo}, "fifo is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan result, 1)
			go func() { done <- run(t, nil, "", append([]string{"--store", store}, tc.args...)...) }()
			var r result
			select {
			case r = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("demiurge %q blocked", tc.args)
			}
			if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("demiurge %q: exit %d, stderr:\n%s\nwant a failure saying %q", tc.args, r.code, r.stderr, tc.want)
			}
		})
	}
}
