package coreutils

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// grepBenchLines is the size of the input of BenchmarkGrepCount: the
// numbers 1 to 8,000,000, one a line (62.9 MB), as `seq 8000000` prints.
const grepBenchLines = 8_000_000

func grepBenchInput() []byte {
	var b bytes.Buffer
	b.Grow(63 << 20)
	var num [20]byte
	for i := 1; i <= grepBenchLines; i++ {
		b.Write(strconv.AppendInt(num[:0], int64(i), 10))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// BenchmarkGrepCount compares, in one run, the sandbox's `grep -c` over 8M
// lines with GNU grep's over the same file; the pattern cases are a
// literal, a regular expression and a fixed string with -i.
func BenchmarkGrepCount(b *testing.B) {
	data := grepBenchInput()
	file := filepath.Join(b.TempDir(), "big.txt")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
	}{
		{"literal", []string{"-c", "5"}},
		{"regex", []string{"-c", "^1.*9$"}},
		{"icase", []string{"-ci", "77"}},
	}
	for _, tc := range cases {
		gnu, gnuErr := exec.LookPath("grep")
		want := ""
		if gnuErr == nil {
			out, _ := exec.Command(gnu, append(tc.args, file)...).Output()
			want = string(out)
		}
		b.Run(tc.name+"/sandbox", func(b *testing.B) {
			env := &Env{MaxInputBytes: 1 << 30}
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				out, errOut, _ := runCmdBytes(b, context.Background(), "grep", tc.args, data, env)
				if want != "" && out != want {
					b.Fatalf("sandbox %q (stderr %q); GNU grep %q", out, errOut, want)
				}
			}
		})
		b.Run(tc.name+"/gnu", func(b *testing.B) {
			if gnuErr != nil {
				b.Skip("GNU grep not installed")
			}
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				// Output, not Run: GNU grep stops at the first match when
				// its output is /dev/null.
				if out, err := exec.Command(gnu, append(tc.args, file)...).Output(); err != nil || string(out) != want {
					b.Fatalf("GNU grep: %q, %v", out, err)
				}
			}
		})
	}
}

// runCmdBytes runs the utility name over stdin given as bytes.
func runCmdBytes(t testing.TB, ctx context.Context, name string, args []string, stdin []byte, env *Env) (string, string, int) {
	t.Helper()
	fn, ok := Lookup(name)
	if !ok {
		t.Fatalf("no command %s", name)
	}
	var out, errOut bytes.Buffer
	e := *env
	e.Stdin, e.Stdout, e.Stderr = bytes.NewReader(stdin), &out, &errOut
	status := fn(ctx, &e, args)
	return out.String(), errOut.String(), status
}
