package session

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/world"
)

// WorldSummary is what `demiurge worlds` and the web view say of a world
// at a glance: its records, its head, the manifest it last ran, its last
// activity and its chats. Its JSON form is a line of `worlds --json`.
type WorldSummary struct {
	World    string `json:"world"`
	Records  uint64 `json:"records"`
	Head     Head   `json:"head"`
	Manifest string `json:"manifest"`
	// LastActivity is the stamp of the newest input (RFC 3339, UTC), ""
	// if the world had none.
	LastActivity   string        `json:"last_activity,omitempty"`
	LastActivityNS uint64        `json:"last_activity_ns,omitempty"`
	Chats          []ChatSummary `json:"chats"`
}

// Head is a world's newest record: its seq and its hash, as every JSON
// the command line prints names a journal head.
type Head struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// ChatSummary is what a chat's newest state says of it.
type ChatSummary struct {
	Chat     string `json:"chat"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// Turns counts the user messages and compactions.
	Turns        uint64     `json:"turns"`
	Running      bool       `json:"running"`
	Usage        TokenUsage `json:"usage"`
	CostMicroUSD uint64     `json:"cost_microusd"`
	// CostUnknown and UsageUnknown count the model calls without a price
	// and without usage.
	CostUnknown  uint64 `json:"calls_cost_unknown"`
	UsageUnknown uint64 `json:"calls_usage_unknown"`
}

// TokenUsage is demiurge.TokenUsage in JSON, named as agent.Usage names
// the counts: Prompt counts every input token, Cached and CacheWrite
// (Chat@3 worlds only) included; Completion every output token,
// Reasoning included.
type TokenUsage struct {
	Prompt     uint64 `json:"input_tokens"`
	Completion uint64 `json:"output_tokens"`
	Cached     uint64 `json:"cached_tokens"`
	CacheWrite uint64 `json:"cache_write_tokens,omitempty"`
	Reasoning  uint64 `json:"reasoning_tokens"`
}

// Summarize reads a world's journal for its summary: the newest input's
// stamp and each chat's newest state. A chat whose state g does not hold
// is an error naming it.
func Summarize(ctx context.Context, j journal.Reader, g cas.Getter, name string) (*WorldSummary, error) {
	ws := &WorldSummary{World: name, Chats: []ChatSummary{}}
	var lastInput uint64          // seq of the newest input with a stamp
	chats := map[string]cas.Ref{} // chat → its newest state (zero once deleted)
	of := map[string]string{}     // chat → the module of its newest state
	module := ""                  // the chat module of the newest manifest
	err := j.Read(ctx, name, 1, func(r journal.Record) error {
		ws.Records, ws.Head = r.Seq, Head{Seq: r.Seq, Hash: r.Hash.String()}
		switch {
		case r.Kind == world.KindManifest:
			in, err := world.DecodeInput(r)
			if err != nil {
				return err
			}
			ws.Manifest = in.Manifest.String()
			module = ChatModule(ctx, g, in.Manifest)
		case world.IsInput(r.Kind):
			lastInput = r.Seq
		case r.Kind == world.KindState:
			sr, err := world.DecodeState(r)
			if err != nil {
				return err
			}
			if id, ok := sr.Key.(string); ok && demiurge.IsModule(sr.Reducer) {
				chats[id], of[id] = sr.State, sr.Reducer
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if lastInput > 0 {
		// Only the newest input is decoded: receipts can be large.
		err := j.Read(ctx, name, lastInput, func(r journal.Record) error {
			in, err := world.DecodeInput(r)
			if err != nil {
				return err
			}
			ws.LastActivityNS = in.Stamp.NowNS
			ws.LastActivity = time.Unix(0, int64(in.Stamp.NowNS)).UTC().Format(time.RFC3339Nano)
			return errStopRead
		})
		if err != nil && !errors.Is(err, errStopRead) {
			return nil, err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(chats)) {
		ref := chats[id]
		if !ref.Valid() {
			continue
		}
		var st demiurge.StateView
		if err := cas.GetNode(ctx, g, ref, &st); err != nil {
			return nil, fmt.Errorf("world %s: state of chat %s: %w", name, id, err)
		}
		if v, ok := ImportedState(g, module, of[id], id, ref); ok {
			st = *v
		}
		c := ChatSummary{Chat: id, Turns: st.LastRequestID, Running: st.Turn != nil,
			Usage: TokenUsage{Prompt: st.Usage.Prompt, Completion: st.Usage.Completion, Cached: st.Usage.Cached,
				CacheWrite: st.Usage.CacheWrite, Reasoning: st.Usage.Reasoning},
			CostMicroUSD: st.CostMicroUSD, CostUnknown: st.CostUnknown, UsageUnknown: st.UsageUnknown}
		if st.Settings != nil {
			c.Provider, c.Model = st.Settings.Provider, st.Settings.Model
		}
		ws.Chats = append(ws.Chats, c)
	}
	return ws, nil
}

// errStopRead ends a journal read early.
var errStopRead = errors.New("stop reading")

// ChatModule returns the chat module (the newest of demiurge.Modules it
// has) of the manifest at ref, "" if it has none or g does not hold it.
func ChatModule(ctx context.Context, g cas.Getter, ref cas.Ref) string {
	var man struct {
		Modules []struct {
			Name string `cbor:"name"`
		} `cbor:"modules"`
	}
	if cas.GetNode(ctx, g, ref, &man) != nil {
		return ""
	}
	names := map[string]bool{}
	for _, mod := range man.Modules {
		names[mod.Name] = true
	}
	m, _ := demiurge.ModuleIn(func(n string) bool { return names[n] })
	return m
}

// ImportedState reads the state at ref of chat, written by the chat
// module written, in a world whose newest manifest runs the chat module
// running, when Chat@2 left the chat and the world runs Chat@3: Chat@3
// takes the chat up with its next message, and it reads as it will be
// then (demiurge.ImportedView; agent.Chat.State reads it so), a turn it
// ran stopped, no call waiting. It returns false for any other chat, and
// for a state the Import would refuse.
func ImportedState(g cas.Getter, running, written, chat string, ref cas.Ref) (*demiurge.StateView, bool) {
	if written != demiurge.ModuleNameV2 || running != demiurge.ModuleName {
		return nil, false
	}
	st, err := demiurge.ImportedView(g, demiurge.ChatImport{ChatID: chat, Module: demiurge.ModuleNameV2, State: ref})
	if err != nil {
		return nil, false
	}
	b, err := cas.MarshalBody(st)
	if err != nil {
		return nil, false
	}
	var v demiurge.StateView
	if err := cas.Unmarshal(b, &v); err != nil {
		return nil, false
	}
	return &v, true
}
