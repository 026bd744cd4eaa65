package introspect

import (
	"context"
	"errors"
	"fmt"

	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
)

// The AgentOS introspect effect kinds that Adapters runs.
const (
	EffectManifest     = "introspect.manifest"
	EffectReducerState = "introspect.reducer_state"
	EffectJournalHead  = "introspect.journal_head"
	EffectListCells    = "introspect.list_cells"
)

// EffectCall is the kind of the effect through which the model's
// introspect tools run (params {tool, arguments_json}, a sys/ToolResponse@1
// receipt; see adapters/toolcall).
const EffectCall = "introspect.call"

// adapterID is the adapter id of the effects' receipts.
const adapterID = "introspect"

// Adapters returns the adapters of the AgentOS introspect effects, by
// kind, reading v: introspect.manifest, introspect.reducer_state,
// introspect.journal_head and introspect.list_cells, with the params and
// receipts of the built-in schemas (sys/Introspect*Params@1,
// sys/Introspect*Receipt@1, sys/ReadMeta@1). opts may be nil; only
// MaxWait applies.
//
// A request that cannot be served (a bad consistency, an unknown reducer,
// a key that does not decode or fit, an unavailable height) gets an error
// receipt whose message says why. (The LLM tools are Tools; they run as
// introspect.call through adapters/toolcall.)
func Adapters(v View, opts *Options) map[string]effects.Adapter {
	r := newReader(v, opts)
	return map[string]effects.Adapter{
		EffectManifest:     readEffect{r, r.manifestEffect},
		EffectReducerState: readEffect{r, r.reducerStateEffect},
		EffectJournalHead:  readEffect{r, r.journalHeadEffect},
		EffectListCells:    readEffect{r, r.listCellsEffect},
	}
}

// readEffect is an introspect effect. It only reads the world, so a world
// may run it inside the step that emits it (see effects.InlineAdapter).
type readEffect struct {
	r   *reader
	run effects.AdapterFunc
}

func (e readEffect) Run(ctx context.Context, c *effects.Call) effects.Receipt { return e.run(ctx, c) }

// RunsInline reports whether the read can be served inside the step: all
// can but at_least:<h> above the world's height (see reader.servesNow).
func (e readEffect) RunsInline(ctx context.Context, c *effects.Call) bool {
	return e.r.servesNow(ctx, textParam(c, "consistency"))
}

// receipt turns an effect's outcome into a receipt: an error receipt names
// the effect kind and the reason.
func receipt(kind string, payload schema.Value, err error) effects.Receipt {
	if err == nil {
		return effects.OK(adapterID, payload)
	}
	r := effects.Errorf(adapterID, "%s: %s", kind, message(err))
	if errors.Is(err, context.DeadlineExceeded) {
		r.Status = effects.StatusTimeout
	}
	return r
}

func textParam(c *effects.Call, name string) string {
	s, _ := schema.FieldPath(c.Params, name).(string)
	return s
}

// manifestEffect runs introspect.manifest: {consistency} → {manifest:
// the manifest node's canonical CBOR, meta}.
func (r *reader) manifestEffect(ctx context.Context, c *effects.Call) effects.Receipt {
	p, err := func() (schema.Value, error) {
		cons, err := ParseConsistency(textParam(c, "consistency"))
		if err != nil {
			return nil, err
		}
		d, err := r.manifestAt(ctx, cons)
		if err != nil {
			return nil, err
		}
		return schema.Record("manifest", d.bytes, "meta", d.meta.Value()), nil
	}()
	return receipt(EffectManifest, p, err)
}

// reducerStateEffect runs introspect.reducer_state: {reducer, key?:
// canonical CBOR of the key, consistency} → {state?: canonical CBOR of the
// state, meta}.
func (r *reader) reducerStateEffect(ctx context.Context, c *effects.Call) effects.Receipt {
	p, err := func() (schema.Value, error) {
		cons, err := ParseConsistency(textParam(c, "consistency"))
		if err != nil {
			return nil, err
		}
		mod, err := r.reducerDef(textParam(c, "reducer"))
		if err != nil {
			return nil, err
		}
		var key schema.Value
		// An empty key is AgentOS's key of a reducer that is not keyed.
		if kb, ok := schema.FieldPath(c.Params, "key").([]byte); ok && len(kb) > 0 {
			if key, err = schema.Decode(kb); err != nil {
				return nil, fmt.Errorf("%w: key is not canonical CBOR: %v", ErrInvalid, err)
			}
			if key, err = r.normalizeKey(mod, key); err != nil {
				return nil, err
			}
		} else if mod.KeySchema != "" {
			return nil, fmt.Errorf("%w: reducer %s is keyed by %s: key needs the canonical CBOR of a key (introspect.list_cells lists them)", ErrInvalid, mod.Name, mod.KeySchema)
		}
		cr, err := r.state(ctx, mod.Name, key, cons)
		if err != nil {
			return nil, err
		}
		var st schema.Value
		if cr.ok {
			st = cr.bytes
		}
		return schema.Record("state", st, "meta", cr.meta.Value()), nil
	}()
	return receipt(EffectReducerState, p, err)
}

// journalHeadEffect runs introspect.journal_head: {} → {meta}.
func (r *reader) journalHeadEffect(ctx context.Context, c *effects.Call) effects.Receipt {
	h, err := r.v.Head(ctx)
	if err != nil {
		return receipt(EffectJournalHead, nil, err)
	}
	return receipt(EffectJournalHead, schema.Record("meta", meta(h).Value()), nil)
}

// listCellsEffect runs introspect.list_cells: {reducer} → {cells: [{key:
// canonical CBOR of the key (empty for a reducer that is not keyed),
// state_hash, size: bytes of the state's canonical CBOR, last_active_ns:
// the logical time of the input whose step last changed the cell}], meta},
// in canonical key order, at the head.
func (r *reader) listCellsEffect(ctx context.Context, c *effects.Call) effects.Receipt {
	p, err := func() (schema.Value, error) {
		mod, err := r.reducerDef(textParam(c, "reducer"))
		if err != nil {
			return nil, err
		}
		cells, m, err := r.cells(ctx, mod.Name, Consistency{}, true)
		if err != nil {
			return nil, err
		}
		list := make([]schema.Value, 0, len(cells))
		for _, cell := range cells {
			kb := []byte{}
			if cell.key != nil {
				if kb, err = schema.Encode(cell.key); err != nil {
					return nil, fmt.Errorf("introspect: encode a key of %s: %w", mod.Name, err)
				}
			}
			list = append(list, schema.Record("key", kb, "state_hash", cell.ref.String(), "size", cell.size,
				"last_active_ns", cell.lastActive))
		}
		return schema.Record("cells", list, "meta", m.Value()), nil
	}()
	return receipt(EffectListCells, p, err)
}
