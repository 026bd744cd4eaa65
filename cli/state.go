package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

func newStateCommand(a *app) *cobra.Command {
	var (
		wf      worldFlags
		reducer string
		key     string
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "state [--world W] [--reducer R] [--key K] [--manifest M]",
		Short: "Print the state of a world's reducer cells",
		Long: `Print the current state of every reducer cell of world W, or of reducer R, or
of its cell K (a JSON value, or plain text for a text key), as JSON.

The state is read from the journal (the newest State record of each cell)
and the store; nothing is run. With --manifest the state is printed in the
sugar JSON of its schema (the form "send --value" reads); without, as plain
JSON of its canonical value. With --json, one JSON document: an array of
cells, [{"reducer", "key", "state_ref", "state"}]. Opens the store read-only.`,
		Example: `  demiurge state
  demiurge state --manifest examples/counter --reducer counter/Counter@1
  demiurge state --reducer demiurge/Chat@2 --key main --json | jq '.[0].state.usage'`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if err := wf.check(false); err != nil {
				return err
			}
			var cat *schema.Catalog
			if wf.manifest != "" {
				if cat, err = a.loadCatalog(wf.manifest); err != nil {
					return err
				}
			}
			var wantKey schema.Value
			if key != "" {
				if err := json.Unmarshal([]byte(key), new(any)); err == nil {
					wantKey, err = schema.NormalizeJSON(nil, untypedKey(key), []byte(key))
					if err != nil {
						return usagef("--key: %v", err)
					}
				} else {
					wantKey = key
				}
			}
			s, err := a.openStore(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			defer func() { err = explainMissing(cmd.Context(), s, err) }()
			ctx := cmd.Context()
			head, err := s.Journal().Head(ctx, wf.world)
			if err != nil {
				return err
			}
			if head.Seq == 0 {
				return fmt.Errorf("state: %w", noRecords(ctx, s, wf.world))
			}
			type cellState struct {
				reducer string
				key     schema.Value
				ref     cas.Ref
			}
			cells := map[string]*cellState{}
			err = s.Journal().Read(ctx, wf.world, 1, func(r journal.Record) error {
				if r.Kind != world.KindState {
					return nil
				}
				sr, err := world.DecodeState(r)
				if err != nil {
					return err
				}
				kb, _ := schema.EncodeBody(sr.Key)
				id := sr.Reducer + "\x00" + string(kb)
				if !sr.State.Valid() {
					delete(cells, id)
					return nil
				}
				cells[id] = &cellState{reducer: sr.Reducer, key: sr.Key, ref: sr.State}
				return nil
			})
			if err != nil {
				return fmt.Errorf("state: %w", err)
			}
			ids := make([]string, 0, len(cells))
			for id := range cells {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			shown := 0
			var cellsJSON []cellJSON // --json: one document, the cells
			for _, id := range ids {
				c := cells[id]
				if reducer != "" && c.reducer != reducer || key != "" && !keyMatches(c.key, wantKey) {
					continue
				}
				b, err := s.CAS().Get(ctx, c.ref)
				if err != nil {
					return fmt.Errorf("state of %s: %w", c.reducer, err)
				}
				v, err := schema.Decode(b)
				if err != nil {
					return fmt.Errorf("state of %s: %w", c.reducer, err)
				}
				js := schema.ValueJSON(v)
				if cat != nil {
					if mod, ok := cat.Module(c.reducer); ok && mod.Reducer != nil {
						if typed, err := schema.MarshalJSON(cat, schema.RefType(mod.Reducer.State), v); err == nil {
							js = typed
						}
					}
				}
				shown++
				if asJSON {
					cellsJSON = append(cellsJSON, cellJSON{c.reducer, schema.ValueJSON(c.key), c.ref.String(), js})
					continue
				}
				label := c.reducer
				if c.key != nil {
					label += " " + string(schema.ValueJSON(c.key))
				}
				fmt.Fprintf(a.out, "%s\n%s\n", label, indentJSON(js))
			}
			if shown == 0 {
				what := "world " + wf.world
				if reducer != "" {
					what = "reducer " + reducer + " of " + what
				}
				if key != "" {
					what += " at key " + key
				}
				return fmt.Errorf("state: %s has no cells", what)
			}
			if asJSON {
				return writeJSON(a.out, cellsJSON)
			}
			return nil
		},
	}
	wf.add(cmd, "the world's AIR at `PATH`, to print states in their schema's JSON")
	cmd.Flags().StringVar(&reducer, "reducer", "", "only this reducer `MODULE`")
	cmd.Flags().StringVar(&key, "key", "", "only the cell with this `KEY` (JSON, or text)")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print one JSON document: an array of cells, [{"reducer", "key", "state_ref", "state"}]`)
	return cmd
}

// cellJSON is a cell as state --json prints it.
type cellJSON struct {
	Reducer string          `json:"reducer"`
	Key     json.RawMessage `json:"key"`
	Ref     string          `json:"state_ref"`
	State   json.RawMessage `json:"state"`
}

// untypedKey guesses a key's type from its JSON, for matching.
func untypedKey(js string) *schema.Type {
	js = strings.TrimSpace(js)
	switch {
	case strings.HasPrefix(js, `"`):
		return schema.Primitive(schema.KindText)
	case strings.HasPrefix(js, "-"):
		return schema.Primitive(schema.KindInt)
	default:
		return schema.Primitive(schema.KindNat)
	}
}

func keyMatches(k, want schema.Value) bool {
	if schema.Equal(k, want) {
		return true
	}
	if s, ok := want.(string); ok {
		return string(schema.ValueJSON(k)) == s
	}
	return false
}

func indentJSON(js []byte) string {
	var out bytes.Buffer
	if err := json.Indent(&out, js, "", "  "); err != nil {
		return string(js)
	}
	return out.String()
}
