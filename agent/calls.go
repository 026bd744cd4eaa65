package agent

import (
	"context"
	"slices"
	"sort"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/world"
	"github.com/fxamacker/cbor/v2"
)

// callInfo is what a model call's receipt says beyond the usage and cost
// the chat's state sums: the model that answered, who served it, where
// its cost came from.
type callInfo struct {
	seq        uint64 // of the Result event
	request    uint64
	model      string
	provider   string
	source     string // llm.CostSource.Describe; "" when the cost is unknown or the receipt does not say
	cost       uint64
	costKnown  bool
	usageKnown bool
}

// raisedRecord is a KindRaised record's payload, its value left encoded.
type raisedRecord struct {
	Schema string          `cbor:"schema"`
	Value  cbor.RawMessage `cbor:"value"`
}

// chatResult is the Result arm of a chat event (ChatResult@3 or @2).
type chatResult struct {
	Tag   string `cbor:"$tag"`
	Value struct {
		ChatID    string      `cbor:"chat_id"`
		RequestID uint64      `cbor:"request_id"`
		Receipt   llm.Receipt `cbor:"receipt"`
	} `cbor:"$value"`
}

// resultOf returns what the model call's receipt says, if r is the
// Result event of a model call of chat c that its chat plan raised.
func (c *Chat) resultOf(r journal.Record) (callInfo, bool) {
	if r.Kind != world.KindRaised {
		return callInfo{}, false
	}
	var rr raisedRecord
	if err := cas.Unmarshal(r.Payload, &rr); err != nil || !c.w.chatEvent(rr.Schema) {
		return callInfo{}, false
	}
	var res chatResult
	if err := cas.Unmarshal(rr.Value, &res); err != nil || res.Tag != "Result" || res.Value.ChatID != c.id {
		return callInfo{}, false
	}
	rc := res.Value.Receipt
	ci := callInfo{seq: r.Seq, request: res.Value.RequestID, model: rc.Model, provider: rc.ProviderName, cost: rc.CostMicroUSD,
		costKnown: rc.CostKnown, usageKnown: rc.UsageKnown}
	if rc.CostKnown && rc.CostSource.Kind != "" {
		ci.source = rc.CostSource.Describe(rc.ProviderName)
	}
	return ci, true
}

// fill sets what the receipt says on mc.
func (ci *callInfo) fill(mc *ModelCall) {
	mc.Model, mc.Provider = ci.model, ci.provider
	if !mc.CostUnknown {
		mc.CostSource = ci.source
	}
}

// sameCounts reports whether two chat states count the same usage and
// cost (whichever schema their usage has).
func sameCounts(a, b *demiurge.StateView) bool {
	return sameUsage(a.Usage, b.Usage) && a.UsageUnknown == b.UsageUnknown && a.CostUnknown == b.CostUnknown && a.CostMicroUSD == b.CostMicroUSD
}

// sameUsage reports whether a and b count the same tokens, whichever
// schema each has (a new chat's state is @2 before it counts any).
func sameUsage(a, b demiurge.TokenUsage) bool {
	a.V2, b.V2 = false, false
	return a == b
}

// costParts sums the known costs of calls by source, in the order the
// sources first come, and lists who served them.
func costParts(calls []callInfo) (parts []CostPart, providers []string) {
	for _, ci := range calls {
		if ci.provider != "" && !slices.Contains(providers, ci.provider) {
			providers = append(providers, ci.provider)
		}
		if !ci.costKnown || ci.source == "" {
			continue
		}
		i := slices.IndexFunc(parts, func(p CostPart) bool { return p.Source == ci.source })
		if i < 0 {
			parts = append(parts, CostPart{Source: ci.source})
			i = len(parts) - 1
		}
		parts[i].Calls++
		parts[i].CostMicroUSD += ci.cost
	}
	return parts, providers
}

// calls returns the model calls of turn id that the chat counted among
// the records the window read: each Result event of the turn whose step
// changed the chat's counts (a late or repeated answer, which the chat
// ignores, does not).
func (tw *turnWindow) calls(ctx context.Context, id uint64) ([]callInfo, error) {
	var out []callInfo
	for _, r := range tw.results {
		if r.info.request != id {
			continue
		}
		// The result's step wrote the first chat state after it.
		i := sort.Search(len(tw.states), func(i int) bool { return tw.states[i].seq > r.seq })
		if i >= len(tw.states) {
			continue
		}
		after, err := tw.read(ctx, tw.states[i].ref)
		if err != nil {
			return nil, err
		}
		before := &demiurge.StateView{}
		if i > 0 {
			if before, err = tw.read(ctx, tw.states[i-1].ref); err != nil {
				return nil, err
			}
		}
		if !sameCounts(before, after) {
			out = append(out, r.info)
		}
	}
	return out, nil
}

// resultAt is a Result event the window read: its seq and what it says.
type resultAt struct {
	seq  uint64
	info callInfo
}

// addCall adds ci to the turn's calls, unless they have it (a stream that
// read the turn's past in the journal may read its last records again).
func addCall(calls []callInfo, ci callInfo) []callInfo {
	if slices.ContainsFunc(calls, func(c callInfo) bool { return c.seq == ci.seq }) {
		return calls
	}
	return append(calls, ci)
}
