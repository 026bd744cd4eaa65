package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
)

func newJournalDumpCommand(a *app) *cobra.Command {
	var (
		world  string
		from   uint64
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "dump [--world W] [--from SEQ] [--json]",
		Short: "Print the records of a world's journal",
		Long: `Print the records of world W (--world, default main), from seq SEQ
(default 1) on, one line each:

  SEQ KIND HASH SIZE PAYLOAD

where HASH is the first 12 hex digits of the record's hash, KIND is quoted if
it holds spaces or unprintable characters, SIZE is the payload's
size in bytes and PAYLOAD the payload decoded from CBOR and shown as JSON, or
"-" if it is not CBOR. With --json each line is a JSON object with the full
hash and prev, and the payload as "payload" (decoded) or "payload_b64" (raw).

The hash chain is checked while reading (from SEQ on; "journal verify" checks
a whole world): the records before a broken link are printed, then the error,
and the command exits 1. A world without records is an error. Opens the store
read-only.`,
		Example: `  demiurge journal dump
  demiurge journal dump --world t1 --from 3 --json | jq -c '{seq, kind}'`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if err := checkWorldFlag(world); err != nil {
				return err
			}
			s, err := a.openStore(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			ctx := cmd.Context()
			head, err := s.Journal().Head(ctx, world)
			if err != nil {
				return fmt.Errorf("journal dump: %w", err)
			}
			if head.Seq == 0 {
				return fmt.Errorf("journal dump: %w", noRecords(ctx, s, world))
			}
			if from > head.Seq {
				return fmt.Errorf("journal dump: --from %d is past the head of world %s (seq %d)", from, world, head.Seq)
			}
			err = s.Journal().Read(ctx, world, from, func(r journal.Record) error {
				line, err := dumpLine(r, asJSON)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(a.out, line)
				return err
			})
			if err != nil {
				return fmt.Errorf("journal dump: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&world, "world", defaultWorld, "the world's `NAME` in the store")
	f.Uint64Var(&from, "from", 1, "start at record `SEQ`")
	f.BoolVar(&asJSON, "json", false, "print one JSON object per record")
	return cmd
}

// dumpRecord is a record as journal dump --json prints it.
type dumpRecord struct {
	Seq        uint64          `json:"seq"`
	Kind       string          `json:"kind"`
	Hash       string          `json:"hash"`
	Prev       string          `json:"prev"`
	Size       int             `json:"size"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	PayloadB64 []byte          `json:"payload_b64,omitempty"`
}

// dumpLine renders one record.
func dumpLine(r journal.Record, asJSON bool) (string, error) {
	var payload []byte // JSON of the decoded payload; nil if it is not CBOR
	if v, err := schema.Decode(r.Payload); err == nil && len(r.Payload) > 0 {
		payload = schema.ValueJSON(v)
	}
	if asJSON {
		d := dumpRecord{Seq: r.Seq, Kind: r.Kind, Hash: r.Hash.String(), Prev: r.Prev.String(), Size: len(r.Payload)}
		if payload != nil {
			d.Payload = payload
		} else if len(r.Payload) > 0 {
			d.PayloadB64 = r.Payload
		}
		b, err := json.Marshal(d)
		return string(b), err
	}
	shown := "-"
	if payload != nil {
		shown = string(payload)
	}
	kind := r.Kind
	if strings.ContainsFunc(kind, func(c rune) bool { return unicode.IsSpace(c) || !unicode.IsPrint(c) }) {
		kind = strconv.Quote(kind)
	}
	return fmt.Sprintf("%d %s %s %d %s", r.Seq, kind, r.Hash.Short(), len(r.Payload), shown), nil
}
