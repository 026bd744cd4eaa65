package world

import (
	"context"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
)

// TestLatestSnapshot finds the newest snapshot wherever it lies: in the
// first window, several windows back, at seq 1, or nowhere.
func TestLatestSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	snapRecord := func(i int) journal.Entry {
		ref := cas.Sum([]byte{byte(i), byte(i >> 8)})
		b, err := schema.Encode(schema.Record("snapshot", ref.String()))
		if err != nil {
			t.Fatal(err)
		}
		return journal.Entry{Kind: KindSnapshot, Payload: b}
	}
	for _, tc := range []struct {
		name  string
		n     int
		snaps []int // seqs of Snapshot records
		want  int   // seq of the one found; 0 for none
	}{
		{"none", 3000, nil, 0},
		{"empty", 0, nil, 0},
		{"at the head", 3000, []int{10, 3000}, 3000},
		{"in the first window", 3000, []int{10, 2500}, 2500},
		{"two windows back", 10000, []int{10, 8000}, 8000},
		{"at seq 1 of a long journal", 30000, []int{1}, 1},
		{"right before the first window", 5000, []int{5000 - snapshotWindow}, 5000 - snapshotWindow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := journal.NewMemory()
			var head journal.Head
			var batch []journal.Entry
			for seq := 1; seq <= tc.n; seq++ {
				e := journal.Entry{Kind: "Other", Payload: []byte{1}}
				for _, s := range tc.snaps {
					if s == seq {
						e = snapRecord(seq)
					}
				}
				batch = append(batch, e)
				if len(batch) == 500 || seq == tc.n {
					var err error
					if head, err = j.Append(ctx, "w", head, batch); err != nil {
						t.Fatal(err)
					}
					batch = nil
				}
			}
			ref, seq, err := latestSnapshot(ctx, j, "w", head.Seq)
			if err != nil {
				t.Fatal(err)
			}
			if int(seq) != tc.want || (tc.want == 0) != (ref == cas.Ref{}) {
				t.Fatalf("latestSnapshot = %v at seq %d; want seq %d", ref, seq, tc.want)
			}
			if tc.want > 0 && ref != cas.Sum([]byte{byte(tc.want), byte(tc.want >> 8)}) {
				t.Fatalf("latestSnapshot found %v, not the snapshot at seq %d", ref, tc.want)
			}
		})
	}
}
