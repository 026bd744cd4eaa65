package bash

import (
	"context"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/tools"
)

// TestBuiltinSIGPIPE: a writer whose reader went away ends as by SIGPIPE,
// 141 in PIPESTATUS, as in bash, be it a utility, a builtin in a loop, a
// function or a subshell; and before the command limit.
func TestBuiltinSIGPIPE(t *testing.T) {
	r := newOilsRunner(t)
	scripts := []string{
		`yes | head -1; echo "${PIPESTATUS[@]}"`,
		`while :; do echo x; done | head -1; echo "${PIPESTATUS[@]}"`,
		`while :; do printf '%s\n' y; done | head -2; echo "${PIPESTATUS[@]}"`,
		`(while :; do echo z; done) | head -1; echo "${PIPESTATUS[@]}"`,
		`f() { while :; do echo f; done; }; f | head -1; echo "${PIPESTATUS[@]}"`,
		`for ((i=0;;i++)); do echo $i; done | head -3; echo "${PIPESTATUS[@]}"`,
		`set -o pipefail; while :; do echo x; done | head -1; echo "status=$?"`,
	}
	for _, s := range scripts {
		want, got := r.inBash(s), r.inSandbox(s)
		if want.stdout != got.stdout || want.status != got.status {
			t.Errorf("%s\nsandbox: %q status %d (stderr %q)\nbash:    %q status %d", s, got.stdout, got.status, got.stderr, want.stdout, want.status)
		}
	}
}

// TestCancelEndsLoop: a script busy in a loop of builtins ends soon after
// its context is cancelled (the issue asks for 100 ms; the bound here is
// generous for a loaded machine, the log shows the figure).
func TestCancelEndsLoop(t *testing.T) {
	st := NewBuilder("x").Limits(Limits{Timeout: time.Minute, MaxLoopIterations: 1 << 40, MaxTotalLoopIterations: 1 << 40, MaxCommands: 1 << 40}).MustBuild()
	for _, script := range []string{`while :; do :; done`, `while :; do echo x; done | cat > /dev/null`, `f() { f; }; while :; do x=$((x+1)); done`} {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		resp := st.Run(ctx, tools.Request{Commands: script}, nil)
		if d := time.Since(start) - 50*time.Millisecond; d > 2*time.Second || resp.ExitCode != 130 {
			t.Errorf("%s: ended %v after the cancel, %+v", script, d, resp)
		}
		t.Logf("%s: ended %v after the cancel", script, time.Since(start)-50*time.Millisecond)
	}
}

// TestPipeIntoHeadWithinLimits: a loop writing short lines into `| head -1`
// ends by EPIPE before the script's default command limit, however late
// head gets to read: its writer waits for the reader once the pipe's
// buffer is full. With a 64 KiB buffer the loop passed 10,000 commands
// before head started in about 1 run in 3 on a loaded machine.
func TestPipeIntoHeadWithinLimits(t *testing.T) {
	st := NewBuilder("x").MustBuild() // the default limits
	for _, script := range []string{
		`while :; do echo x; done | head -1`,
		`while true; do printf 'x\n'; done | head -n 1`,
		`for ((;;)); do echo x; done | head -1`,
		`while :; do echo x; done | { sleep 0.05; head -1; }`, // a reader that starts late
	} {
		for range 5 {
			resp := st.Run(t.Context(), tools.Request{Commands: script}, nil)
			if resp.ExitCode != 0 || resp.Stdout != "x\n" {
				t.Fatalf("%s: exit %d, stdout %q, stderr %q", script, resp.ExitCode, resp.Stdout, resp.Stderr)
			}
		}
	}
}
