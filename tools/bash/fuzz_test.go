package bash

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzRun runs random scripts and checks that the host is untouched:
// no file appears in the working directory or TMPDIR, the environment is
// unchanged, nothing panics, and every run ends in bounded time.
func FuzzRun(f *testing.F) {
	for _, s := range diffScripts {
		f.Add(s)
	}
	for _, s := range []string{
		"echo pwn > marker", "cat < /etc/passwd", "echo /*", "cd /tmp && touch x", "exec sh",
		"eval 'echo hi > x'", "cat <(echo x)", "sleep 1 &", "f(){ f; }; f", ":(){ :|:; };:",
		"x=a; while :; do x=$x$x; done", "get_user --id 1 | jq .name", "export FUZZ_LEAK=1",
		"echo x > $TMPDIR/sh-interp-1", "echo ~root", "seq 1 100 | xargs -n 3 echo", "printf '%*d' 5 1",
		"sed -n '1~2p'", "upper <<< hi", "help get_user --json", "discover --search u",
		"B=(b b) env", "B=([k]=v 'a b') true", "cat <<${a}\nx\n${a}", "cat <<-$(a)\n\tx\n\t$(a)", "echo ${#1#'#'}",
		"kill -USR1 $$", "trap 'echo t' TERM; kill $$", "GLOBIGNORE='[[:alnum:]]*:x'; echo *", "a[0]=(3 4)", "a[]=1", "(( ))",
		"a=1 b[0]=2 c=3 env", "a[1 + 2]= echo a[1 + 2]=", "a[5 + 3]+", "a=([k]+=v [k]+=w)", "a=([k]=-{a,b}-)",
		"echo -{z..A}-", "echo `echo \"`", "echo \"1 `[[ $(echo \\\\\" > f) ]]` 2\"", "declare a[ a[2]=3 ]=Y",
		"set -E; trap 'echo e' ERR; false & (false) | (false)", "shopt -s expand_aliases; alias c='cat <<E\nx\nE\n'\nc\ny\nE",
	} {
		f.Add(s)
	}
	watched := f.TempDir()
	tmp := f.TempDir()
	f.Chdir(watched)
	f.Setenv("TMPDIR", tmp)
	environ := os.Environ()
	slices.Sort(environ)
	st := NewBuilder("fuzz").Limits(Limits{Timeout: 500 * time.Millisecond, MaxCommands: 2000}).
		Tool(ToolDef{Name: "get_user", InputSchema: []byte(`{"type":"object","properties":{"id":{"type":"integer"}}}`)},
			func(ctx context.Context, a ToolArgs) (string, error) { return `{"name":"x"}` + "\n", nil }).
		Tool(ToolDef{Name: "upper", Stdin: true}, func(ctx context.Context, a ToolArgs) (string, error) {
			if a.Stdin == nil {
				return "", nil
			}
			return strings.ToUpper(*a.Stdin), nil
		}).
		MustBuild()
	f.Fuzz(func(t *testing.T, script string) {
		if len(script) > 4096 {
			return
		}
		start := time.Now()
		res := run(t, st, script)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("script ran %v (limit 0.5s): %q", d, script)
		}
		if res.ExitCode < 0 || res.ExitCode > 255 {
			t.Errorf("exit code %d", res.ExitCode)
		}
		for _, dir := range []string{watched, tmp} {
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) > 0 {
				t.Fatalf("script %q created %s in %s", script, entries[0].Name(), dir)
			}
		}
		now := os.Environ()
		slices.Sort(now)
		if !slices.Equal(now, environ) {
			t.Fatalf("script %q changed the host environment", script)
		}
	})
}

// FuzzParseFlags checks that the flag parser never panics and that what it
// accepts is valid for the schema checker.
func FuzzParseFlags(f *testing.F) {
	for _, s := range []string{"--id 42", "--id=42", "--verbose false", "--tags a,b,c", "--filter status=open min=3",
		"--rows a=1 b=x --rows {\"a\":2}", "--nums [1,2]", "42", "--", "--filter nope=1"} {
		f.Add(s)
	}
	schema := []byte(`{"type":"object","properties":{"id":{"type":"integer"},"verbose":{"type":"boolean"},
		"tags":{"type":"array","items":{"type":"string"}},"nums":{"type":"array","items":{"type":"integer"}},
		"filter":{"type":"object","properties":{"status":{"type":"string"},"min":{"type":"integer"}}},
		"rows":{"type":"array","items":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}}}}}}`)
	sch, doc, err := compileSchema("fuzz", schema)
	if err != nil {
		f.Fatal(err)
	}
	fs := &flagSchema{root: doc}
	f.Fuzz(func(t *testing.T, line string) {
		params, err := parseFlags(fs, strings.Fields(line), DefaultLimits())
		if err != nil {
			return
		}
		validateParams(sch, nil, params) // must not panic
		if fast := newFastSchema(doc); fast != nil {
			t.Fatal("the fuzz schema has arrays: the fast validator must not take it")
		}
	})
}
