package cli

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/adapters/builtin"
	"github.com/demiurge-dev/demiurge/effects"
)

// TestExtensionOptions: the options of a program that extends the command
// line reach its commands. WithAdapter runs a world's effects with the
// program's adapter (here in place of the built-in blob.put), WithName
// names the program in its usage errors and its completion script, and
// WithEnv is the only environment it reads.
func TestExtensionOptions(t *testing.T) {
	t.Parallel()
	var puts atomic.Int64
	counting := effects.AdapterFunc(func(ctx context.Context, c *effects.Call) effects.Receipt {
		puts.Add(1)
		return builtin.BlobPut(ctx, c)
	})
	store := filepath.Join(t.TempDir(), "store")
	env := func(k string) string {
		if k == storeEnv {
			return store
		}
		return ""
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		hello := &cobra.Command{Use: "hello", Short: "Say hello", RunE: func(cmd *cobra.Command, args []string) error {
			st, err := cmd.Flags().GetString("store")
			fmt.Fprintf(cmd.OutOrStdout(), "hello from %s\n", filepath.Base(st))
			return err
		}}
		code := Run(t.Context(), args, strings.NewReader(""), &out, &errb,
			WithAdapter(builtin.EffectBlobPut, counting), WithName("mydemiurge"), WithEnv(env), WithCommands(hello))
		return code, out.String(), errb.String()
	}
	code, out, errs := run("send", "--manifest", filepath.Join("..", "examples", "blobecho"), "--schema", "blobecho/Event@1",
		"--value", `{"Start": {"data": "aGVsbG8="}}`)
	if code != 0 || puts.Load() != 1 {
		t.Fatalf("send: exit %d, the program's adapter ran %d times\n%s\n%s", code, puts.Load(), out, errs)
	}
	if code, _, errs := run("state", "--nope"); code != exitUsage || !strings.HasPrefix(errs, "mydemiurge: ") || !strings.Contains(errs, "Run 'mydemiurge state --help'") {
		t.Errorf("a usage error: exit %d\n%s", code, errs)
	}
	if code, out, _ := run("completion", "bash"); code != 0 || !strings.Contains(out, "__start_mydemiurge") || strings.Contains(out, "__start_demiurge") {
		t.Errorf("completion bash: exit %d; want a script for mydemiurge", code)
	}
	if code, out, errs := run("hello"); code != 0 || out != "hello from store\n" {
		t.Errorf("the program's own command: exit %d, %q %s", code, out, errs)
	}
	if code, out, _ := run("help"); code != 0 || !strings.Contains(out, "hello") {
		t.Errorf("help lists no hello:\n%s", out)
	}
	// Its notes start with its name too, as its errors do: a cassette run
	// again goes to a new world, and says so.
	cassette := filepath.Join("..", "testdata", "sessions", "demo")
	for i := range 2 {
		code, out, errs := run("run", filepath.Join("..", "examples", "demiurge"), "--llm", "cassette:"+cassette, "-m", "Write a hello note and show it to me.")
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s\n%s", i+1, code, out, errs)
		}
		if !strings.HasPrefix(errs, "mydemiurge: note: world main already holds a session") || strings.HasPrefix(errs, "demiurge:") || strings.Contains(errs, "\ndemiurge:") {
			t.Errorf("the second run's note:\n%s", errs)
		}
	}
}
