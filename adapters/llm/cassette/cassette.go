// Package cassette answers llm.generate effects from a recorded session
// instead of a model: the k-th call of a run gets the k-th model answer of
// the recording, with the blobs it refers to. Everything else — the tools
// above all — runs for real. It makes an offline demo, and tests that need
// a model's answers without a model.
//
// A cassette is strict: it answers a call only if the call's request is
// the recorded one (the transcript so far, the tools, the system prompt;
// see Mismatch for what may differ), and fails it otherwise with a diff
// of what differs. A loose cassette (Options.Loose) warns and answers.
package cassette

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/internal/readall"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
)

// Answer is one recorded outcome of llm.generate.
type Answer struct {
	Status  string // effects.StatusOK, StatusError or StatusTimeout
	Payload schema.Value
	Error   string
	// Params are the params of the recorded call (its intent's), which
	// name its transcript and tools in the bundle's blobs.
	Params schema.Value
}

// Options configure a cassette. The zero Options is a strict cassette.
type Options struct {
	// Loose answers a call whose request is not the recorded one all the
	// same, after telling Warn (default: such a call fails).
	Loose bool
	// Warn, if set, is told of each call a loose cassette answers though
	// its request differs from the recorded one.
	Warn func(call *effects.Call, m *Mismatch)
	// World, if set, names the world the calls come from. When it is not
	// the recording's world (bundle.json's "world"), a tool output that
	// names it is compared as naming the recording's: a recording played
	// again in another world of the store (the demo run a second time).
	World string
	// LooseHint names, in the error of a call a strict cassette refuses,
	// how the user makes the cassette loose (Mismatch.LooseHint): the
	// program's own flag. Default DefaultLooseHint.
	LooseHint string
	// Advice, if set, is what the error of a call a strict cassette
	// refuses ends with (Mismatch.Advice): what the program's user does
	// about it, in the program's own commands ("record case X again:
	// demiurge eval SUITE --case X --record DIR"). Default: how to replay
	// the recording, make the cassette loose (LooseHint) or record again.
	Advice string
}

// DefaultLooseHint is how a mismatch's error says to make a cassette loose
// when Options.LooseHint does not say.
const DefaultLooseHint = "demiurge run --cassette-loose, agent.CassetteLoose"

// Cassette holds the model answers of a recording. It is safe for
// concurrent use.
type Cassette struct {
	dir     string
	world   string // the recording's world, "" if the bundle does not say
	answers []Answer
	blobs   map[cas.Ref][]byte
	opts    Options

	mu   sync.Mutex
	next int
}

// maxBundleJSON bounds bundle.json, a few lines that export writes.
const maxBundleJSON = 1 << 20

// Open reads the model answers of the session bundle in dir (see
// replay.Export): the receipts of its llm.generate intents, in journal
// order, with the params of their intents, and its blobs (a bundle
// without a blobs directory has none). A bundle without model answers, a
// record that does not decode, a receipt with an unknown status and a
// blob whose name is not its hash are errors that name the bundle and the
// record or blob. Nil opts make a strict cassette.
func Open(dir string, opts *Options) (*Cassette, error) {
	c := &Cassette{dir: dir, blobs: map[cas.Ref][]byte{}}
	if opts != nil {
		c.opts = *opts
	}
	// The bundle's files are read only when regular (a FIFO would block
	// the read, /dev/zero never end it); the journal and blobs are as
	// large as the session recorded.
	jb, err := readall.File(filepath.Join(dir, "journal.cbor"), "a bundle's journal", readall.NoLimit)
	if err != nil {
		return nil, fmt.Errorf("cassette %s: %w (want a session bundle: demiurge export)", dir, err)
	}
	if c.answers, err = decodeAnswers(jb); err != nil {
		return nil, fmt.Errorf("cassette %s: %w", dir, err)
	}
	if len(c.answers) == 0 {
		return nil, fmt.Errorf("cassette %s: the recording holds no model answers", dir)
	}
	if mb, err := readall.File(filepath.Join(dir, "bundle.json"), "a bundle's bundle.json", maxBundleJSON); err == nil {
		var meta struct {
			World string `json:"world"`
		}
		if json.Unmarshal(mb, &meta) == nil {
			c.world = meta.World
		}
	}
	entries, err := os.ReadDir(filepath.Join(dir, "blobs"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cassette %s: %w", dir, err)
	}
	for _, e := range entries {
		b, err := readall.File(filepath.Join(dir, "blobs", e.Name()), "a bundle's blob", readall.NoLimit)
		if err != nil {
			return nil, fmt.Errorf("cassette %s: %w", dir, err)
		}
		r := cas.Sum(b)
		d := r.Digest()
		if hex.EncodeToString(d[:]) != e.Name() {
			return nil, fmt.Errorf("cassette %s: blob %s does not match its name: its bytes hash to %s", dir, e.Name(), r)
		}
		c.blobs[r] = b
	}
	return c, nil
}

// decodeAnswers returns the receipts of the llm.generate intents of a
// bundle's journal.cbor, in journal order.
func decodeAnswers(jb []byte) ([]Answer, error) {
	var answers []Answer
	llmIntents := map[string]schema.Value{} // the params of each llm.generate intent
	seq := 0
	for r, err := range journal.DecodeRecords(jb) {
		seq++
		if err != nil {
			return nil, fmt.Errorf("journal record %d: %w", seq, err)
		}
		if r.Kind != "Intent" && r.Kind != "Receipt" {
			continue
		}
		v, err := schema.Decode(r.Payload)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", r.Seq, err)
		}
		m, _ := v.(*schema.Map)
		get := func(k string) schema.Value { x, _ := m.Get(k); return x }
		str := func(k string) string { s, _ := get(k).(string); return s }
		switch r.Kind {
		case "Intent":
			if str("kind") == llm.EffectKind {
				llmIntents[str("intent")] = get("params")
			}
		case "Receipt":
			params, ok := llmIntents[str("intent")]
			if !ok {
				continue
			}
			a := Answer{Status: str("status"), Payload: get("payload"), Error: str("error"), Params: params}
			switch a.Status {
			case effects.StatusOK:
				if _, ok := a.Payload.(*schema.Map); !ok {
					return nil, fmt.Errorf("record %d: an ok llm.generate receipt without a payload record", r.Seq)
				}
			case effects.StatusError, effects.StatusTimeout:
			default:
				return nil, fmt.Errorf("record %d: receipt status %q, want %s, %s or %s", r.Seq, a.Status,
					effects.StatusOK, effects.StatusError, effects.StatusTimeout)
			}
			answers = append(answers, a)
		}
	}
	return answers, nil
}

// Len returns the number of recorded answers.
func (c *Cassette) Len() int { return len(c.answers) }

// Model returns the model the recording's first call asked for (its
// params' "model"), or "" if it names none: the model whose answers the
// cassette gives.
func (c *Cassette) Model() string {
	for _, a := range c.answers {
		if m, ok := schema.FieldPath(a.Params, "model").(string); ok && m != "" {
			return m
		}
	}
	return ""
}

// Provider returns the provider the recording's first model call named
// ("anthropic", "openai-responses"…), or "" if it named none (the
// adapter's default, OpenAI's Responses API).
func (c *Cassette) Provider() string {
	for _, a := range c.answers {
		if p, ok := schema.FieldPath(a.Params, "provider").(string); ok && p != "" {
			return p
		}
	}
	return ""
}

var refPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`blake3:[0-9a-f]{64}`) })

// Run answers the next llm.generate call with the next recorded answer,
// after storing every blob of the bundle the answer refers to, and the
// blobs those refer to (a ref the bundle does not hold is left to the
// store). The answer's text is reported as progress, as a streaming model
// would.
//
// The call's request is first compared with the recorded call's (see
// Mismatch): when they differ, a strict cassette returns an error receipt
// whose message is the Mismatch (what differs, with a diff); a loose one
// tells Options.Warn and answers all the same. The k-th call takes the
// k-th answer either way. A call after the last answer gets an error
// receipt.
func (c *Cassette) Run(ctx context.Context, call *effects.Call) effects.Receipt {
	c.mu.Lock()
	k := c.next
	c.next++
	c.mu.Unlock()
	if k >= len(c.answers) {
		return effects.Errorf("cassette", "the cassette %s holds %d model answers and this is call %d; record a longer session", c.dir, len(c.answers), k+1)
	}
	a := c.answers[k]
	if m := c.check(ctx, k, a.Params, call.CAS, call.Params); m != nil {
		if !c.opts.Loose {
			return effects.Errorf("cassette", "%v", m)
		}
		if c.opts.Warn != nil {
			c.opts.Warn(call, m)
		}
	}
	if a.Status != effects.StatusOK {
		return effects.Receipt{Status: a.Status, Error: a.Error, AdapterID: "cassette"}
	}
	effect := ""
	if call.Intent != nil {
		effect = call.Intent.Effect
	}
	payload, err := receiptFor(a.Payload, effect)
	if err != nil {
		return effects.Errorf("cassette", "answer %d: %v", k+1, err)
	}
	a.Payload = payload
	enc, err := schema.Encode(a.Payload)
	if err != nil {
		return effects.Errorf("cassette", "answer %d: %v", k+1, err)
	}
	if err := c.storeRefs(ctx, call.CAS, enc, map[cas.Ref]bool{}); err != nil {
		return effects.Errorf("cassette", "answer %d: %v", k+1, err)
	}
	if call.Progress != nil {
		if m, ok := a.Payload.(*schema.Map); ok {
			if t, ok := m.Get("output_text"); ok {
				if s, ok := t.(string); ok && s != "" {
					call.Progress(s)
				}
			}
		}
	}
	return effects.OK("cassette", a.Payload)
}

// upgrade makes a recorded sys/LlmGenerateReceipt@1 answer what @2 would
// have said of it (an @2 or @3 one is left as it is): @1 could not say that a model has no price, and wrote
// a cost of 0; a model the table prices nowhere gets an unknown cost.
func upgrade(v schema.Value) schema.Value {
	m, ok := v.(*schema.Map)
	if !ok {
		return v
	}
	cost, _ := m.Get("cost_microusd")
	model, _ := m.Get("model")
	name, _ := model.(string)
	if n, ok := cost.(uint64); !ok || n != 0 {
		return v
	}
	if known, _ := llm.ResolveModel(name, "", nil); known.Price != nil {
		return v
	}
	return m.With("cost_microusd", nil).With("cost_cents", nil)
}

// receiptFor makes a recorded receipt (of any version) the receipt of
// the world's defeffect: sys/LlmGenerateReceipt@1 for sys/llm.generate@1
// (an unknown usage or cost counts as 0, as @1 has no way to say
// otherwise), @3 for sys/llm.generate@3, else @2. A receipt already of
// that version is answered as recorded (an @1 one upgraded, see upgrade).
func receiptFor(v schema.Value, effect string) (schema.Value, error) {
	m, ok := v.(*schema.Map)
	if !ok {
		return v, nil
	}
	_, v3 := m.Get("provider_name")
	switch {
	case effect == llm.EffectV1 && !v3:
		return downgrade(m), nil
	case effect == llm.EffectV3 && v3:
		return m, nil
	case effect != llm.EffectV1 && effect != llm.EffectV3 && !v3:
		return upgrade(m), nil
	}
	var up schema.Value = m
	if !v3 {
		up = upgrade(m)
	}
	b, err := schema.Encode(up)
	if err != nil {
		return nil, err
	}
	var rc llm.Receipt
	if err := cas.Unmarshal(b, &rc); err != nil {
		return nil, err
	}
	switch effect {
	case llm.EffectV1:
		b, err = rc.MarshalV1()
	case llm.EffectV3:
		b, err = rc.MarshalCBOR()
	default:
		b, err = rc.MarshalV2()
	}
	if err != nil {
		return nil, err
	}
	return schema.Decode(b)
}

// downgrade makes a recorded sys/LlmGenerateReceipt@2 answer what @1
// says of it, for a world of sys/llm.generate@1: an unknown usage or cost
// counts as 0, as @1 has no way to say otherwise.
func downgrade(m *schema.Map) schema.Value {
	if u, ok := m.Get("token_usage"); ok && u == nil {
		m = m.With("token_usage", schema.Record("prompt", uint64(0), "completion", uint64(0), "cached", uint64(0), "reasoning", uint64(0)))
	}
	for _, k := range []string{"cost_cents", "cost_microusd"} {
		if c, ok := m.Get(k); ok && c == nil {
			m = m.With(k, uint64(0))
		}
	}
	return m
}

// storeRefs puts the blobs b refers to, and the ones they refer to.
func (c *Cassette) storeRefs(ctx context.Context, store cas.Putter, b []byte, done map[cas.Ref]bool) error {
	for _, s := range refPattern().FindAll(b, -1) {
		r, err := cas.ParseRef(string(s))
		if err != nil || done[r] {
			continue
		}
		done[r] = true
		blob, ok := c.blobs[r]
		if !ok {
			continue
		}
		if _, err := store.Put(ctx, blob); err != nil {
			return err
		}
		if err := c.storeRefs(ctx, store, blob, done); err != nil {
			return err
		}
	}
	return nil
}

var _ effects.Adapter = (*Cassette)(nil)
