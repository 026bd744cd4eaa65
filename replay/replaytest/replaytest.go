// Package replaytest holds the golden replay test of a recorded session,
// for the tests of programs that embed demiurge: a session recorded once
// (a replay bundle, see package replay) keeps their agent's behaviour
// from drifting.
package replaytest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/world"
)

// CheckGolden is the golden replay test of a recorded bundle in dir: the
// session must replay from genesis (and from its snapshots) with no
// divergence, and its timeline must equal dir/trace.txt. A divergence
// fails the test with the report `demiurge replay` prints
// (replay.Describe: a state's difference by field, the defs a changed
// manifest changed), what the diverging step derived kept in a store in
// a temporary directory (replay.Keep) that the report names. With update set,
// a diverging bundle is re-derived with the current code (inputs and
// receipts kept, everything derived recomputed) and rewritten, and
// trace.txt regenerated; review the diff. A bundle fresh from
// replay.Export (or agent's World.Export) has no trace.txt: the first run
// with update set writes it, and one without fails saying so.
func CheckGolden(t testing.TB, dir string, reg *reducer.Registry, update bool) {
	t.Helper()
	ctx := context.Background()
	b, err := replay.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = replay.ReplayBundle(ctx, b, reg, true)
	var div *world.DivergenceError
	switch {
	case err == nil:
	case errors.As(err, &div) && update:
		if err := replay.Rebase(ctx, b, reg); err != nil {
			t.Fatalf("rebase %s: %v", dir, err)
		}
		if b, err = replay.Read(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := replay.ReplayBundle(ctx, b, reg, true); err != nil {
			t.Fatalf("%s still diverges after -update:\n%s", dir, describe(ctx, err))
		}
		t.Logf("%s: re-derived the journal with the current code", dir)
	default:
		t.Fatalf("%s:\n%s\n(rerun with -update to re-derive the session with the current code, or, if the AIR it ran changed, with -record to record it again; review the diff)", dir, describe(ctx, err))
	}
	if _, err := replay.ReplayBundle(ctx, b, reg, false); err != nil {
		t.Fatalf("%s: replay from the newest snapshot:\n%s", dir, describe(ctx, err))
	}
	got := b.TraceText()
	path := filepath.Join(dir, "trace.txt")
	want, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if string(want) == got {
		return
	}
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want == nil {
		t.Errorf("%s has no trace.txt, the timeline the session must replay to: run the test once with update set (a flag such as -update) to write it, review it and commit it", dir)
		return
	}
	t.Errorf("%s: the timeline differs from trace.txt (rerun with -update and review the diff):\n%s", dir, replay.Diff(path, string(want), "the replayed timeline", got))
}

// describe is the report of a replay's error, the divergence's blobs kept.
func describe(ctx context.Context, err error) string {
	dir, kerr := replay.Keep(ctx, err)
	s := replay.DescribeWith(err, replay.DescribeOptions{KeptIn: dir})
	if kerr != nil {
		s += "\n(the replayed state could not be kept: " + kerr.Error() + ")"
	}
	return s
}
