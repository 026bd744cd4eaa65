package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestMain runs the test binary as demiurge-sh when the tests start it so.
func TestMain(m *testing.M) {
	if os.Getenv("DEMIURGE_SH_TEST_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// TestSignalStopsScript: SIGTERM and Ctrl-C stop a running script (a
// 30 s sleep would otherwise end with status 0), and demiurge-sh exits as a shell reports them (143, 130), saying
// what stopped it.
func TestSignalStopsScript(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		sig    syscall.Signal
		code   int
		stderr string
	}{
		{syscall.SIGTERM, 143, "demiurge-sh: the script was stopped by SIGTERM\n"},
		{syscall.SIGINT, 130, "demiurge-sh: the script was stopped by Ctrl-C (SIGINT)\n"},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			cmd := exec.Command(self, "-c", "echo started; sleep 30; echo after")
			cmd.Env = append(os.Environ(), "DEMIURGE_SH_TEST_MAIN=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err == nil {
				err = cmd.Start()
			}
			if err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(out)
			if !lines.Scan() || lines.Text() != "started" {
				t.Fatalf("first line %q; want started", lines.Text())
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			rest := ""
			for lines.Scan() {
				rest += lines.Text() + "\n"
			}
			err = cmd.Wait()
			var xe *exec.ExitError
			if !errors.As(err, &xe) || xe.ExitCode() != tc.code {
				t.Fatalf("exit: %v; want status %d (stderr %q)", err, tc.code, stderr.String())
			}
			// The sandbox says the run was cancelled, then demiurge-sh why.
			if rest != "" || stderr.String() != "bash: execution cancelled\n"+tc.stderr {
				t.Errorf("stdout after the signal %q, stderr %q; want none and %q", rest, stderr.String(), tc.stderr)
			}
		})
	}
}
