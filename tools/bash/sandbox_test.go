package bash

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/demiurge-dev/demiurge/tools"
)

// TestEscapes runs scripts that try to reach the host; each must fail
// with a clear message and leave no trace outside the sandbox.
func TestEscapes(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("host-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SCRIPTED_HOST_SECRET", "host-env-secret")
	st := shopTool(t, nil)
	hostCwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, script string
		stdoutNot    []string // must not appear in stdout or stderr
		stderrHas    string
		exit         int // -1: any
	}{
		{"redirect out", "echo pwn > " + marker, nil, "No such file or directory", 1},
		{"append", "echo pwn >> " + marker, nil, "No such file or directory", 1},
		{"redirect in", "cat < " + secret, []string{"host-secret"}, "No such file or directory", 1},
		{"cmd subst file", "x=$(<" + secret + "); echo \"$x\"", []string{"host-secret"}, "No such file or directory", 0},
		{"file operand", "cat " + secret, []string{"host-secret"}, "No such file or directory", 1},
		{"grep file", "grep host " + secret, []string{"host-secret"}, "No such file or directory", 2},
		{"jq file", "jq . " + secret, []string{"host-secret"}, "No such file or directory", 2},
		{"host root", "ls /; cat /etc/passwd; ls /home /root /proc", []string{"root:", "bin"}, "No such file or directory", 2},
		{"dotdot", "cd ../../..; pwd; ls; cat ../../etc/passwd", []string{"root:"}, "No such file or directory", 1},
		{"write outside", "echo x > /etc/x; mkdir /opt; touch /x", nil, "Read-only file system", 1},
		{"symlink", "ln -s /etc/passwd p; cat p", []string{"root:"}, "links are not supported", 1},
		{"glob", "echo " + dir + "/*", []string{"secret " + dir, "/secret"}, "", 0},
		{"glob root", "echo /e*; echo /*", []string{"/etc"}, "", 0},
		{"test -e", "[ -e " + secret + " ] && echo yes; test -f /etc/passwd && echo yes; [[ -d /etc ]] && echo yes; echo done", []string{"yes"}, "", 0},
		{"test -r", "[ -r " + secret + " ] && echo yes; echo done", []string{"yes"}, "", 0},
		{"cd", "cd " + dir + " 2>/dev/null; pwd", []string{dir}, "", 0},
		{"pwd -P", "pwd -P; pwd", []string{dir, hostCwd}, "", 0},
		{"type", "type -P ls bash go python3; command -v gcc; which go", []string{"/usr/local/go", "python3", "/root", "gcc"}, "", -1},
		{"exec", "exec /bin/sh -c 'echo pwn > " + marker + "'", nil, "No such file or directory", 1},
		{"absolute program", "/bin/sh -c 'echo pwn > " + marker + "'; /usr/bin/env; /usr/bin/python3 -c 1", []string{"host-env-secret", "SCRIPTED_HOST"}, "/usr/bin/python3: No such file or directory", 127},
		{"program via PATH", "PATH=/usr/bin:/bin; python3 -c 'print(1)'; perl -e 'print 1'", []string{"Python", "1\n"}, "command not found", 127},
		{"eval", "eval 'echo pwn > " + marker + "'", nil, "No such file or directory", 1},
		{"eval loop", "eval 'while :; do :; done'", nil, "resource limit exceeded: maximum command count exceeded", 1},
		{"source", "source " + secret + "; . " + secret, []string{"host-secret"}, "No such file or directory", 1},
		{"builtin", "builtin cd /; builtin pwd; builtin type ls; builtin cd /etc", nil, "cd: /etc: No such file or directory", 1},
		{"trap", "trap 'echo pwn > " + marker + "' EXIT", nil, "No such file or directory", 0},
		{"trap loop", "trap 'while :; do :; done' EXIT", nil, "resource limit exceeded: maximum command count exceeded", 1},
		{"host env", "echo \"$SCRIPTED_HOST_SECRET\"; printenv; env; declare -p | grep -c SCRIPTED; jq -n env", []string{"host-env-secret", "SCRIPTED_HOST"}, "", -1},
		{"process substitution", "cat <(cat " + secret + ")", []string{"host-secret"}, "No such file or directory", 0},
		{"process substitution out", "echo x > >(cat " + secret + ")", []string{"host-secret"}, "No such file or directory", 0},
		{"background", "echo pwn > " + marker + " &", nil, "No such file or directory", 0},
		{"coproc", "coproc cat", nil, "not supported", 2},
		{"dev fd of a host file", "cat /dev/fd/7 < " + secret, []string{"host-secret"}, "No such file or directory", 1},
		{"tmpdir fifo shortcut", "echo pwn > /dev/null/sandbox-tmp/sh-interp-1; echo rc=$?", nil, "Not a directory", 0},
		// ~root is the sandbox's own user table (root -> /root), not the
		// host's /etc/passwd: a host user such as nobody is not expanded
		{"tilde user", "echo ~root ~nobody ~daemon ~www-data", []string{"/nonexistent", "/var", "/usr/sbin"}, "", 0},
		{"pid", "echo $$ ${$} $PPID $UID $EUID", []string{strconv.Itoa(os.Getpid()), strconv.Itoa(os.Getppid())}, "", 0},
		{"dev fd", "echo x > /dev/fd/1; cat /dev/fd/0 /dev/fd/3", nil, "/dev/fd/3: No such file or directory", -1},
		{"xargs program", "echo /etc | xargs ls; echo x | xargs sh -c 'cat /etc/passwd'; echo x | xargs python3", []string{"root:", "bin/bash"}, "xargs: python3: No such file or directory", 127},
		{"network", "curl http://127.0.0.1/; wget x; nc -l 1", nil, "command not found", 127},
		{"alias", "alias foo='echo pwn'; foo", []string{"pwn"}, "command not found", 127},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, st, tc.script)
			for _, bad := range tc.stdoutNot {
				if strings.Contains(res.Stdout, bad) || strings.Contains(res.Stderr, bad) {
					t.Errorf("output leaks %q:\nstdout %q\nstderr %q", bad, res.Stdout, res.Stderr)
				}
			}
			if !strings.Contains(res.Stderr, tc.stderrHas) {
				t.Errorf("stderr %q lacks %q", res.Stderr, tc.stderrHas)
			}
			if tc.exit >= 0 && res.ExitCode != tc.exit {
				t.Errorf("exit %d; want %d (stderr %q)", res.ExitCode, tc.exit, res.Stderr)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("script created %s on the host", marker)
			}
		})
	}
}

// TestLimits checks each limit's message; every case must end quickly.
func TestLimits(t *testing.T) {
	noop := func(context.Context, ToolArgs) (string, error) { return "ok\n", nil }
	tests := []struct {
		name   string
		limits Limits
		script string
		stderr string
		exit   int
		errCat string
	}{
		{"commands", Limits{}, "while :; do :; done", "resource limit exceeded: maximum command count exceeded (10000)\n", 1, ErrorLimitExceeded},
		{"commands small", Limits{MaxCommands: 3}, "echo 1; echo 2; echo 3; echo 4", "resource limit exceeded: maximum command count exceeded (3)\n", 1, ErrorLimitExceeded},
		{"loop iterations", Limits{}, "for ((;;)); do x=1; done", "resource limit exceeded: maximum loop iterations exceeded (10000)\n", 1, ErrorLimitExceeded},
		{"loop per loop", Limits{MaxLoopIterations: 5}, "for i in 1 2 3 4 5 6; do x=1; done", "resource limit exceeded: maximum loop iterations exceeded (5)\n", 1, ErrorLimitExceeded},
		{"loop counter resets per loop", Limits{MaxLoopIterations: 5, MaxTotalLoopIterations: 12}, "for j in 1 2; do for i in 1 2 3 4; do x=1; done; done; echo fine", "", 0, ""},
		{"total iterations", Limits{MaxLoopIterations: 5, MaxTotalLoopIterations: 12}, "for j in 1 2 3; do for i in 1 2 3 4; do x=1; done; done", "resource limit exceeded: maximum total loop iterations exceeded (12)\n", 1, ErrorLimitExceeded},
		{"while without commands", Limits{}, "while ((1)); do ((x++)); done", "resource limit exceeded: maximum loop iterations exceeded (10000)\n", 1, ErrorLimitExceeded},
		{"function depth", Limits{}, "f() { f; }; f", "resource limit exceeded: maximum function depth exceeded (100)\n", 1, ErrorLimitExceeded},
		{"function depth ok", Limits{MaxFunctionDepth: 3}, "f() { if [ $1 -gt 0 ]; then f $(( $1 - 1 )); fi; }; f 2; echo fine", "", 0, ""},
		{"function depth small", Limits{MaxFunctionDepth: 3}, "f() { if [ $1 -gt 0 ]; then f $(( $1 - 1 )); fi; }; f 3", "resource limit exceeded: maximum function depth exceeded (3)\n", 1, ErrorLimitExceeded},
		{"fork bomb", Limits{}, "bomb(){ bomb|bomb; };bomb", "resource limit exceeded: ", 1, ErrorLimitExceeded},
		{"classic fork bomb", Limits{}, ":(){ :|:& };:", "resource limit exceeded: ", 1, ErrorLimitExceeded},
		{"fork bomb on :", Limits{}, ":(){ :|:; };:", "resource limit exceeded: ", 1, ErrorLimitExceeded},
		{"pipeline stages", Limits{MaxPipelineStages: 4}, "echo a | cat | cat | cat | cat | cat", "resource limit exceeded: maximum concurrent pipeline stages exceeded (4)\n", 1, ErrorLimitExceeded},
		{"pipeline stages released", Limits{MaxPipelineStages: 2}, "f() { echo a | cat; }; for i in 1 2 3 4 5; do f | cat; done >/dev/null; echo fine", "", 0, ""},
		{"pipeline stages with functions", Limits{MaxPipelineStages: 2}, "f() { echo a | cat | cat; }; f | cat", "resource limit exceeded: maximum concurrent pipeline stages exceeded (2)\n", 1, ErrorLimitExceeded},
		{"tool calls", Limits{MaxToolCalls: 2}, "t; t; t", "resource limit exceeded: maximum tool calls exceeded (2)\n", 1, ErrorLimitExceeded},
		{"memory doubling", Limits{}, "x=a; while true; do x=$x$x; done", "resource limit exceeded: memory budget exceeded (268435456 bytes)\n", 1, ErrorLimitExceeded},
		{"memory straight", Limits{MaxMemoryBytes: 1000}, "x=" + strings.Repeat("a", 600) + "; y=$x$x", "resource limit exceeded: memory budget exceeded (1000 bytes)\n", 1, ErrorLimitExceeded},
		{"memory array", Limits{MaxMemoryBytes: 1000}, "a=(); for i in $(seq 1 100); do a+=(xxxx); done", "resource limit exceeded: memory budget exceeded (1000 bytes)\n", 1, ErrorLimitExceeded},
		{"memory mapfile", Limits{MaxMemoryBytes: 1000}, "seq 1 1000 | mapfile -t arr; echo never", "resource limit exceeded: memory budget exceeded (1000 bytes)\n", 1, ErrorLimitExceeded},
		{"script bytes", Limits{MaxScriptBytes: 10}, "echo 12345678901", "bash: script exceeds 10 bytes\n", 2, ErrorRejected},
		{"ast depth", Limits{MaxASTDepth: 20}, strings.Repeat("(", 30) + "echo" + strings.Repeat(")", 30), "bash: script nesting too deep (more than 20 levels)\n", 2, ErrorRejected},
		{"timeout", Limits{Timeout: 200 * time.Millisecond, MaxCommands: 1 << 40, MaxLoopIterations: 1 << 40, MaxTotalLoopIterations: 1 << 40}, "while :; do :; done", "bash: execution timed out after 0.2s\n", 124, ErrorTimeout},
		{"utility input", Limits{MaxCommandInputBytes: 100}, "seq 1 1000 | sort", "sort: input exceeds 100 bytes\n", 1, ""},
		{"command substitution output", Limits{MaxVarBytes: 1000}, "x=$(for i in $(seq 1 100); do echo 0123456789012345678901234567890123456789; done); echo ${#x}", "resource limit exceeded: command substitution output exceeded (1000 bytes)\n", 1, ErrorLimitExceeded},
		{"utility output", Limits{MaxCommandOutputBytes: 100}, "x=$(jq -n 'range(1e9)'); echo ${#x}", "jq: output exceeds 100 bytes\n", 0, ""},
		{"tool stdin", Limits{MaxToolStdinBytes: 10}, "seq 1 100 | s", "s: stdin exceeds 10 bytes\n", 1, ""},
		{"tool output", Limits{MaxToolOutputBytes: 2}, "t", "t: output exceeds 2 bytes\n", 1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := NewBuilder("lim").Limits(tc.limits).
				Tool(ToolDef{Name: "t"}, noop).
				Tool(ToolDef{Name: "s", Stdin: true}, noop).
				MustBuild()
			start := time.Now()
			res := run(t, st, tc.script)
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("took %v (limit cases must end within 3s)", d)
			}
			if !strings.HasPrefix(res.Stderr, tc.stderr) && !strings.HasSuffix(res.Stderr, tc.stderr) || res.ExitCode != tc.exit || res.Error != tc.errCat {
				t.Fatalf("stderr %q exit %d error %q; want %q %d %q", res.Stderr, res.ExitCode, res.Error, tc.stderr, tc.exit, tc.errCat)
			}
		})
	}
}

func TestOutputTruncation(t *testing.T) {
	st := NewBuilder("x").Limits(DefaultLimits().WithMaxOutputBytes(3)).MustBuild()
	res := run(t, st, "echo 12345; echo abcdef >&2; exit 4")
	if res.Stdout != "123" || !res.StdoutTruncated || res.Stderr != "abc" || !res.StderrTruncated || res.ExitCode != 4 {
		t.Fatalf("truncation: %+v", res.Response)
	}
	if res.StdoutBytes != 6 || res.StderrBytes != 7 {
		t.Errorf("counted %d and %d bytes written; want 6 and 7", res.StdoutBytes, res.StderrBytes)
	}
	res = run(t, st, "echo 1")
	if res.StdoutTruncated {
		t.Errorf("2 bytes flagged as truncated")
	}
	// The cut never splits a character, and nothing written after it is
	// kept, even what would fit.
	st = NewBuilder("x").Limits(DefaultLimits().WithMaxOutputBytes(4)).MustBuild()
	res = run(t, st, "printf 'aéé'; printf b")
	if res.Stdout != "aé" || !res.StdoutTruncated || res.StdoutBytes != 6 {
		t.Errorf("cut = %q (truncated %v, %d bytes written); want \"aé\" of 6", res.Stdout, res.StdoutTruncated, res.StdoutBytes)
	}
	// Limit messages are kept even when stderr is full.
	st = NewBuilder("x").Limits(Limits{MaxStderrBytes: 3, MaxCommands: 2}).MustBuild()
	res = run(t, st, "echo abcdef >&2; echo; echo")
	if !strings.HasSuffix(res.Stderr, "resource limit exceeded: maximum command count exceeded (2)\n") {
		t.Errorf("limit message lost: %q", res.Stderr)
	}
	// Partial output is kept when a limit stops the script.
	st = NewBuilder("x").Limits(Limits{MaxCommands: 2}).MustBuild()
	if res := run(t, st, "echo kept; echo also; echo lost"); res.Stdout != "kept\nalso\n" {
		t.Errorf("partial stdout = %q", res.Stdout)
	}
}

// TestTimeoutAndCancel runs in a synctest bubble: time is fake, so the
// deadlines fire as soon as every goroutine waits, and the test is exact.
func TestTimeoutAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := func(ctx context.Context, _ ToolArgs) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}
		release := make(chan struct{})
		stubborn := func(context.Context, ToolArgs) (string, error) {
			<-release // ignores its context
			return "late\n", nil
		}
		st := NewBuilder("x").Tool(ToolDef{Name: "slow"}, slow).Tool(ToolDef{Name: "stubborn"}, stubborn).MustBuild()

		start := time.Now()
		resp := st.Run(t.Context(), tools.Request{Commands: "echo before; slow; echo after", TimeoutMS: 100}, nil)
		if resp.ExitCode != 124 || resp.Error != ErrorTimeout || resp.Stdout != "before\n" || resp.Stderr != "bash: execution timed out after 0.1s\n" {
			t.Fatalf("timeout_ms: %+v", resp)
		}
		if d := time.Since(start); d != 100*time.Millisecond {
			t.Errorf("timed out after %v; want exactly 100ms", d)
		}

		start = time.Now()
		resp = st.Run(t.Context(), tools.Request{Commands: "stubborn", TimeoutMS: 50}, nil)
		if resp.ExitCode != 124 || time.Since(start) != 50*time.Millisecond {
			t.Fatalf("a callback ignoring ctx held the script: %+v after %v", resp, time.Since(start))
		}
		close(release) // the stubborn callback's goroutine ends after Run

		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(50*time.Millisecond, cancel)
		resp = st.Run(ctx, tools.Request{Commands: "slow"}, nil)
		if resp.ExitCode != 130 || resp.Error != ErrorCancelled || resp.Stderr != "bash: execution cancelled\n" {
			t.Fatalf("cancel: %+v", resp)
		}

		ctx, cancel2 := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel2()
		resp = st.Run(ctx, tools.Request{Commands: "slow"}, nil)
		if resp.ExitCode != 124 || resp.Error != ErrorTimeout {
			t.Fatalf("caller deadline: %+v", resp)
		}

		// The default limit applies when the request sets none.
		short := NewBuilder("x").Limits(Limits{Timeout: 2 * time.Second}).Tool(ToolDef{Name: "slow"}, slow).MustBuild()
		start = time.Now()
		resp = short.Run(t.Context(), tools.Request{Commands: "slow", TimeoutMS: 5000}, nil)
		if resp.ExitCode != 124 || time.Since(start) != 2*time.Second {
			t.Fatalf("timeout_ms above the limit: %+v after %v", resp, time.Since(start))
		}
		synctest.Wait()
	})
}

// TestGoroutinesReturnToBaseline runs pipelines, limits, timeouts and
// fork bombs, then checks that no goroutine of the sandbox outlives them.
func TestGoroutinesReturnToBaseline(t *testing.T) {
	slow := func(ctx context.Context, _ ToolArgs) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}
	st := NewBuilder("x").Limits(Limits{Timeout: 100 * time.Millisecond}).
		Tool(ToolDef{Name: "slow", Stdin: true}, slow).MustBuild()
	scripts := []string{
		"seq 1 100000 | sort -n | tail -1",
		"bomb(){ bomb|bomb; };bomb",
		"while :; do echo x; done | cat",
		"seq 1 10 | slow | cat",
		"yes() { while :; do echo y; done; }; yes | head -1",
		"f() { f | f; }; f",
		"echo x | while read l; do slow; done",
	}
	runtime.GC()
	base := runtime.NumGoroutine()
	for range 3 {
		for _, s := range scripts {
			run(t, st, s)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after the runs; baseline %d\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

// TestForkBombKeepsOutput: a fork bomb on ":" is stopped by the limits at
// run time, and what the script printed before stays.
func TestForkBombKeepsOutput(t *testing.T) {
	st := NewBuilder("bomb").MustBuild()
	res := run(t, st, "echo before; :(){ :|:& };:")
	if res.Stdout != "before\n" || res.ExitCode != 1 || res.Error != ErrorLimitExceeded || !strings.Contains(res.Stderr, "resource limit exceeded") {
		t.Errorf("stdout %q exit %d error %q stderr %q", res.Stdout, res.ExitCode, res.Error, res.Stderr)
	}
}
