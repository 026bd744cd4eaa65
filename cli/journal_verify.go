package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/journal"
)

func newJournalVerifyCommand(a *app) *cobra.Command {
	var (
		world  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "verify [--world W] [--json]",
		Short: "Check the hash chain of every world's journal",
		Long: `Read the journal of world W (of every world by default) from its first record
and check it without trusting the store: every seq present once, every record
hashing to what the next one names as its prev, the head matching the last
record. Prints "W: ok, seq N blake3:..." for a good world and
"journal: world W: <problem>" for a bad one (the problem names the seq).
Exits 1 if any world is bad, or if --world names a world without records.
Opens the store read-only.

With --json, one JSON document: an array with an object per world,
{"world", "ok": true, "head": {"seq", "hash"}} for a good world, {"world",
"ok": false, "error"} for a bad one, and {"ok": false, "error"} if the
worlds could not all be listed; [] for an empty store (docs/cli.md).`,
		Example: `  demiurge journal verify
  demiurge journal verify --world main --json`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			explicit := cmd.Flags().Changed("world")
			if explicit {
				if err := checkWorldFlag(world); err != nil {
					return err
				}
			}
			s, err := a.openStore(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			ctx := cmd.Context()
			worlds := []string{world}
			bad := 0
			results := []verifyResult{} // --json: one document
			if asJSON {
				defer func() {
					if werr := writeJSON(a.out, results); err == nil {
						err = werr
					}
				}()
			}
			if !explicit {
				// A store that names a world it cannot list still has the
				// others to check.
				var listErr error
				worlds, listErr = s.Journal().Worlds(ctx)
				if listErr != nil {
					if ctx.Err() != nil || !errors.Is(listErr, journal.ErrCorrupt) {
						return fmt.Errorf("journal verify: list worlds: %w", listErr)
					}
					bad++
					if asJSON {
						results = append(results, verifyResult{Error: listErr.Error()})
					} else {
						fmt.Fprintln(a.out, listErr)
					}
				}
				if len(worlds) == 0 && bad == 0 && !asJSON {
					_, err = fmt.Fprintf(a.out, "no worlds in store %s\n", s.Dir())
					return err
				}
			}
			for _, w := range worlds {
				head, err := journal.Verify(ctx, s.Journal(), w)
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					bad++
					if asJSON {
						results = append(results, verifyResult{World: w, Error: err.Error()})
						continue
					}
					if _, ok := errors.AsType[*journal.CorruptError](err); ok {
						fmt.Fprintln(a.out, err) // it names the world and the seq
					} else {
						fmt.Fprintf(a.out, "%s: %v\n", w, err)
					}
					continue
				}
				a.log.Debug("verified", "world", w, "head", head)
				if asJSON {
					results = append(results, verifyResult{World: w, OK: true, Head: &session.Head{Seq: head.Seq, Hash: head.Hash.String()}})
					continue
				}
				fmt.Fprintf(a.out, "%s: ok, %s\n", w, head)
			}
			if bad > 0 {
				if bad > len(worlds) { // the listing failed too
					return fmt.Errorf("journal verify: the worlds of store %s could not all be listed, and %d of the %s listed failed", s.Dir(), bad-1, plural(len(worlds), "world"))
				}
				return fmt.Errorf("journal verify: %d of %s in store %s failed", bad, plural(len(worlds), "world"), s.Dir())
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&world, "world", "", "verify only world `W`")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document, an array with an object per world (the shape is above)")
	return cmd
}

// verifyResult is a world's line of journal verify --json.
type verifyResult struct {
	World string        `json:"world,omitempty"`
	OK    bool          `json:"ok"`
	Head  *session.Head `json:"head,omitempty"`
	Error string        `json:"error,omitempty"`
}

// writeJSONLine writes v as one line of JSON. v must marshal.
func writeJSONLine(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // a programmer's error: the types written here all marshal
	}
	fmt.Fprintf(w, "%s\n", b)
}

// writeJSON writes v as the one JSON document a report prints (a list is
// an array, [] when empty: see docs/cli.md), on one line.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
