package bash

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/demiurge-dev/demiurge/tools"
)

// benchScript makes 5 tool calls and runs 5 jq filters (the script of
// reference/scripted-tool.md §5.1, also run by bench/peers).
const benchScript = `for id in 1 2 3; do get_user --id $id | jq -r .name; done
total=$(list_orders --user_id $USER_ID | jq '[.[].total] | add'); echo "total=$total"
get_user --id 9 | jq -c '{id}'`

const benchWant = "user1\nuser2\nuser3\ntotal=6.5\n{\"id\":9}\n"

// bashPrelude defines the same tools as shell functions for bash -c.
const bashPrelude = `get_user() { printf '{"id":%s,"name":"user%s"}\n' "$2" "$2"; }
list_orders() { echo '[{"total":2.5},{"total":4}]'; }
USER_ID=1
`

func benchTool(tb testing.TB) *Tool {
	return NewBuilder("bench").
		Tool(ToolDef{Name: "get_user", Description: "Fetch user by ID",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`)},
			func(ctx context.Context, a ToolArgs) (string, error) {
				id, _ := a.ParamInt64("id")
				return fmt.Sprintf(`{"id":%d,"name":"user%d"}`+"\n", id, id), nil
			}).
		Tool(ToolDef{Name: "list_orders", Description: "List orders",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"user_id":{"type":"integer"}},"required":["user_id"]}`)},
			func(ctx context.Context, a ToolArgs) (string, error) {
				return `[{"total":2.5},{"total":4}]` + "\n", nil
			}).
		Env("USER_ID", "1").
		MustBuild()
}

// BenchmarkScript compares, in one run, Run of the 5-tool/5-jq script
// with the same logic as a `bash -c` subprocess using the host's jq.
func BenchmarkScript(b *testing.B) {
	st := benchTool(b)
	b.Run("sandbox", func(b *testing.B) {
		if res := run(b, st, benchScript); res.Stdout != benchWant {
			b.Fatalf("sandbox output %q (stderr %q)", res.Stdout, res.Stderr)
		}
		b.ReportAllocs()
		for b.Loop() {
			st.Run(context.Background(), tools.Request{Commands: benchScript}, nil)
		}
	})
	b.Run("bash-c", func(b *testing.B) {
		bash, err := exec.LookPath("bash")
		if err != nil {
			b.Skip("bash not installed")
		}
		if _, err := exec.LookPath("jq"); err != nil {
			b.Skip("jq not installed on the host")
		}
		runBash := func() []byte {
			cmd := exec.Command(bash, "--norc", "--noprofile", "-c", bashPrelude+benchScript)
			cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
			out, err := cmd.Output()
			if err != nil {
				b.Fatal(err)
			}
			return out
		}
		if out := runBash(); !bytes.Equal(out, []byte(benchWant)) {
			b.Fatalf("bash output %q", out)
		}
		b.ReportAllocs()
		for b.Loop() {
			runBash()
		}
	})
}

func BenchmarkEcho(b *testing.B) {
	st := benchTool(b)
	b.ReportAllocs()
	for b.Loop() {
		st.Run(context.Background(), tools.Request{Commands: "echo hello"}, nil)
	}
}

func BenchmarkJQPipe(b *testing.B) {
	st := benchTool(b)
	b.ReportAllocs()
	for b.Loop() {
		st.Run(context.Background(), tools.Request{Commands: `echo '[1,2,3,4,5]' | jq '[.[] | select(. > 2)]'`}, nil)
	}
}

func BenchmarkLoop1000ToolCalls(b *testing.B) {
	st := benchTool(b)
	b.ReportAllocs()
	for b.Loop() {
		res := st.Run(context.Background(), tools.Request{Commands: `for i in $(seq 1 1000); do get_user --id $i; done | wc -l`}, nil)
		if res.Stdout != "1000\n" {
			b.Fatalf("%+v", res)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/call")
}

func BenchmarkParallel(b *testing.B) {
	st := benchTool(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			st.Run(context.Background(), tools.Request{Commands: benchScript}, nil)
		}
	})
}

// filesScript is file-heavy: it writes 100 files, then greps, summarizes
// with awk and counts lines through find | xargs (also run by bench/peers).
const filesScript = `mkdir -p data
for i in $(seq 1 100); do printf 'id,%d\nname,item%d\nTODO: check %d\n' $i $i $i > data/f$i.txt; done
grep -rn TODO data | wc -l
awk -F, '$1=="id"{s+=$2; n++} END{print n, s}' data/*.txt
find data -name '*.txt' | xargs wc -l | tail -n 1`

const filesWant = "100\n100 5050\n 300 total\n"

// BenchmarkFiles compares, in one run, the file-heavy script in the
// sandbox (a fresh in-memory file system per run) with `bash -c` in a fresh
// host directory per run (made and removed outside the timer).
func BenchmarkFiles(b *testing.B) {
	st := benchTool(b)
	b.Run("sandbox", func(b *testing.B) {
		if res := run(b, st, filesScript); res.Stdout != filesWant {
			b.Fatalf("sandbox output %q (stderr %q)", res.Stdout, res.Stderr)
		}
		b.ReportAllocs()
		for b.Loop() {
			st.Run(context.Background(), tools.Request{Commands: filesScript}, nil)
		}
	})
	b.Run("bash-c", func(b *testing.B) {
		bash, err := exec.LookPath("bash")
		if err != nil {
			b.Skip("bash not installed")
		}
		runBash := func() []byte {
			dir, err := os.MkdirTemp("", "bench-files")
			if err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(dir)
			cmd := exec.Command(bash, "--norc", "--noprofile", "-c", filesScript)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}
			out, err := cmd.Output()
			if err != nil {
				b.Fatal(err)
			}
			return out
		}
		if out := runBash(); !bytes.Equal(out, []byte(filesWant)) {
			b.Fatalf("bash output %q", out)
		}
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			dir, err := os.MkdirTemp("", "bench-files")
			if err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command(bash, "--norc", "--noprofile", "-c", filesScript)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}
			b.StartTimer()
			if _, err := cmd.Output(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			os.RemoveAll(dir)
			b.StartTimer()
		}
	})
}
