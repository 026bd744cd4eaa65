package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
)

// Anthropic's pause_turn: the API paused a long turn (its own server
// tools' loop) and the answer so far is not the model's last word. As
// Anthropic's docs say, the paused content goes back as it came, as the
// request's last (assistant) message, and the model continues its turn
// from there. Generate does so within the one call, up to
// MaxPauseContinuations times: the receipt is the whole answer, as if it
// had come at once.
//
// Its evidence: the request is the last one sent (which holds the whole
// transcript and the answer before it); the response is the answer's
// segments made one Messages API message, their content blocks in order,
// their usage summed (each segment was billed, the input of each
// included), the last one's stop reason and id. It parses to the
// receipt's output. The receipt's cost is that summed usage's; its usage
// is the context the answer ended with, which the chat's context budget
// and compaction count: the last request's input (which holds the
// segments before), its cache reads and writes, and every segment's
// output. A continuation that fails leaves the answer as it
// was paused (finish "incomplete: pause_turn"), its failed attempts in the
// receipt.

// finishPauseTurn is the finish of an answer Anthropic paused.
const finishPauseTurn = "incomplete: pause_turn"

// MaxPauseContinuations bounds how many times one call continues an
// answer Anthropic paused (stop_reason pause_turn); an answer still paused
// after as many ends the call, cut (finish "incomplete: pause_turn").
const MaxPauseContinuations = 5

// continuePaused continues an answer the provider paused, from the call c
// that got it, and returns the call last sent and the whole answer.
// A call abandoned (ctx ended) is an error, as for the answer's first
// request.
func (g *Generator) continuePaused(ctx context.Context, blobs Blobs, c *call, apiKey string, ex exchange, res parsed,
	attempts int, failed []FailedAttempt) (*call, exchange, parsed, int, []FailedAttempt, error) {
	seg := res.output // the output of the answer's last segment
	for n := 1; res.finish == finishPauseTurn; n++ {
		if n > MaxPauseContinuations {
			g.logger.LogAttrs(ctx, slog.LevelWarn, "llm answer still paused; not continued again",
				slog.String("provider", c.provider), slog.String("model", c.params.Model),
				slog.Int("continuations", MaxPauseContinuations))
			break
		}
		next, err := g.pausedCall(ctx, blobs, c, seg)
		if err == nil {
			next.texted = res.text != "" && !endsWithMessage(res.output)
		}
		if err != nil {
			g.logger.LogAttrs(ctx, slog.LevelWarn, "llm answer paused; cannot continue it",
				slog.String("provider", c.provider), slog.String("error", err.Error()))
			break
		}
		ex2, res2, att, fl, err := g.send(ctx, blobs, next, apiKey, attempts, failed)
		attempts, failed = att, fl
		if err != nil {
			next.releaseSession()
			if ctx.Err() != nil {
				return c, ex, res, attempts, failed, err
			}
			failed = append(failed, g.continuationFailed(err, attempts))
			g.logger.LogAttrs(ctx, slog.LevelWarn, "llm answer paused; its continuation failed",
				slog.String("provider", c.provider), slog.Int("continuation", n), slog.String("error", err.Error()))
			break
		}
		merged, err := mergeAnthropic(ex.response, ex2.response)
		var whole parsed
		if err == nil {
			whole, err = next.parse(merged)
		}
		if err != nil {
			next.releaseSession()
			if ctx.Err() != nil {
				return c, ex, res, attempts, failed, err
			}
			failed = append(failed, g.continuationFailed(err, attempts))
			break
		}
		if whole.usageKnown && res2.usageKnown {
			// Priced at every request's tokens; counted as the context
			// the answer ended with (the last request's input, which
			// holds the segments before) and all it wrote.
			billed := whole.usage
			whole.billed = &billed
			whole.usage.Input, whole.usage.CacheRead, whole.usage.CacheWrite = res2.usage.Input, res2.usage.CacheRead, res2.usage.CacheWrite
		}
		c.releaseSession()
		c, ex, res, seg = next, exchange{response: merged}, whole, res2.output
		g.logger.LogAttrs(ctx, slog.LevelInfo, "llm answer paused; continued",
			slog.String("provider", c.provider), slog.Int("continuation", n), slog.String("finish", res.finish))
	}
	return c, ex, res, attempts, failed, nil
}

// continuationFailed is the failed attempt that ended a paused answer's
// continuation.
func (g *Generator) continuationFailed(err error, attempts int) FailedAttempt {
	fa := FailedAttempt{Attempt: uint64(attempts), Kind: string(KindFailed), Message: "continuing the paused answer: " + err.Error()}
	var pe *ProviderError
	if errors.As(err, &pe) {
		fa.Kind, fa.Status, fa.RequestID = string(pe.Kind), uint64(max(pe.Status, 0)), pe.RequestID
		fa.Message = "continuing the paused answer: " + pe.Message
		fa.setEvidence(pe)
	}
	return fa
}

// pausedCall makes the request that continues the answer c paused: c's
// transcript (the answer's segments before c's among it), then seg, the
// output of c's segment, as it came.
func (g *Generator) pausedCall(ctx context.Context, blobs Blobs, c *call, seg []byte) (*call, error) {
	ref, err := blobs.Put(ctx, seg)
	if err != nil {
		return nil, fmt.Errorf("store the paused answer: %w", err)
	}
	refs := append(slices.Clip(c.refs), ref)
	next := &call{provider: c.provider, model: c.model, apiKey: c.apiKey, onDelta: c.onDelta,
		params: c.params, refs: refs, tools: c.tools}
	// c's body went out: the session may build the next on its parts.
	c.releaseSession()
	if err := g.prepareAnthropic(ctx, blobs, next, c.params, refs, c.tools); err != nil {
		return nil, err
	}
	return next, nil
}

// mergeAnthropic makes two segments of one paused answer (Messages API
// messages) one message: first's content blocks then next's, their usage
// summed, next's other members.
func mergeAnthropic(first, next []byte) ([]byte, error) {
	var a, b map[string]json.RawMessage
	if err := json.Unmarshal(first, &a); err != nil {
		return nil, badResponse("paused answer: %v", err)
	}
	if err := json.Unmarshal(next, &b); err != nil {
		return nil, badResponse("continued answer: %v", err)
	}
	var ca, cb []json.RawMessage
	if err := json.Unmarshal(a["content"], &ca); err != nil {
		return nil, badResponse("paused answer: content: %v", err)
	}
	if err := json.Unmarshal(b["content"], &cb); err != nil {
		return nil, badResponse("continued answer: content: %v", err)
	}
	out := make(map[string]json.RawMessage, len(b))
	for k, v := range b {
		out[k] = v
	}
	content, err := marshalNoEscape(append(ca, cb...))
	if err != nil {
		return nil, err
	}
	out["content"] = content
	if u, ok := sumCounts(a["usage"], b["usage"]); ok {
		out["usage"] = u
	}
	return marshalNoEscape(out)
}

// sumCounts adds two usage objects: the counts of one name summed (in
// nested objects too), a member only one has kept, any other member
// next's. ok is false when either is not an object.
func sumCounts(a, b json.RawMessage) (json.RawMessage, bool) {
	var ma, mb map[string]json.RawMessage
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil || ma == nil || mb == nil {
		return nil, false
	}
	out := make(map[string]json.RawMessage, len(ma)+len(mb))
	for k, v := range ma {
		out[k] = v
	}
	for k, v := range mb {
		prev, both := out[k]
		if !both {
			out[k] = v
			continue
		}
		x, errX := strconv.ParseUint(string(prev), 10, 64)
		y, errY := strconv.ParseUint(string(v), 10, 64)
		switch {
		case errX == nil && errY == nil:
			out[k] = json.RawMessage(strconv.FormatUint(x+y, 10))
		default:
			if s, ok := sumCounts(prev, v); ok {
				out[k] = s
			} else {
				out[k] = v
			}
		}
	}
	b2, err := marshalNoEscape(out)
	if err != nil {
		return nil, false
	}
	return b2, true
}

// endsWithMessage reports whether an output array's last item is a
// message (text the next text would run on from).
func endsWithMessage(output []byte) bool {
	var items []struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(output, &items)
	return len(items) > 0 && items[len(items)-1].Type == "message"
}
