package serve

import (
	"context"
	"fmt"
	"strings"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
)

// responseJSON is a response of OpenAI's Responses API: here, a turn (or
// what of it follows approvals the request gave).
type responseJSON struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	Background         bool              `json:"background"`
	Error              *responseError    `json:"error"`
	IncompleteDetails  *incomplete       `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int64            `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []map[string]any  `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Conversation       map[string]string `json:"conversation"`
	Store              bool              `json:"store"`
	Temperature        *float64          `json:"temperature"`
	Text               map[string]any    `json:"text"`
	ToolChoice         string            `json:"tool_choice"`
	Tools              []any             `json:"tools"`
	TopP               *float64          `json:"top_p"`
	Truncation         string            `json:"truncation"`
	Usage              *responseUsage    `json:"usage"`
	Metadata           map[string]string `json:"metadata"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incomplete struct {
	Reason string `json:"reason"`
}

type responseUsage struct {
	InputTokens         uint64            `json:"input_tokens"`
	InputTokensDetails  map[string]uint64 `json:"input_tokens_details"`
	OutputTokens        uint64            `json:"output_tokens"`
	OutputTokensDetails map[string]uint64 `json:"output_tokens_details"`
	TotalTokens         uint64            `json:"total_tokens"`
}

// responseBuilder makes a response of a turn's events, and, when it
// streams (emit set), the Responses API's stream events as they come: the
// model's text as an output message per round, each tool call the agent
// runs as an mcp_call item (its server_label the agent's name), each call
// that waits for approval as an mcp_approval_request item.
type responseBuilder struct {
	s    *Server
	chat *agent.Chat
	resp *responseJSON
	emit func(map[string]any) error // nil: not streaming
	// emitDelta, if not nil, emits a text delta event (the stream's most
	// frequent, encoded without a map: appendDeltaEvent).
	emitDelta func(itemID string, outputIndex int, text string) error
	seq       int // the next sequence_number
	ended     bool

	msg   map[string]any  // the message item being written, if one is
	round uint64          // its round
	text  strings.Builder // its text so far (a long answer comes in thousands of deltas)
	calls map[string]int  // each mcp_call item's index in the output, by call id
	stop  string          // a guard's reason
	fault string          // a failure's text
	usage agent.Usage
}

// newResponse returns the builder of the response ref names.
func (s *Server) newResponse(aw *agent.World, ref responseRef, previous string) *responseBuilder {
	r := &responseJSON{ID: encodeID("resp_", ref), Object: "response", CreatedAt: ref.Created, Status: "in_progress", Model: s.name,
		Output: []map[string]any{}, ParallelToolCalls: true, Conversation: map[string]string{"id": ref.Chat}, Store: true,
		Text: map[string]any{"format": map[string]string{"type": "text"}}, ToolChoice: "auto", Tools: []any{}, Truncation: "disabled",
		Metadata: map[string]string{}}
	if previous != "" {
		r.PreviousResponseID = &previous
	}
	return &responseBuilder{s: s, chat: s.chat(aw, ref.Chat), resp: r, calls: map[string]int{}}
}

// send emits a stream event, if the builder streams.
func (b *responseBuilder) send(ev map[string]any) error {
	if b.emit == nil {
		return nil
	}
	return b.emit(ev)
}

// snapshot is the response as it stands, for the stream's events that
// carry it.
func (b *responseBuilder) snapshot() responseJSON {
	r := *b.resp
	r.Output = append([]map[string]any(nil), r.Output...)
	return r
}

// begin emits response.created and response.in_progress.
func (b *responseBuilder) begin() error {
	if err := b.send(map[string]any{"type": "response.created", "response": b.snapshot()}); err != nil {
		return err
	}
	return b.send(map[string]any{"type": "response.in_progress", "response": b.snapshot()})
}

// item adds an output item and emits response.output_item.added.
func (b *responseBuilder) item(it map[string]any) (int, error) {
	b.resp.Output = append(b.resp.Output, it)
	i := len(b.resp.Output) - 1
	return i, b.send(map[string]any{"type": "response.output_item.added", "output_index": i, "item": clone(it)})
}

// itemDone emits response.output_item.done for item i.
func (b *responseBuilder) itemDone(i int) error {
	return b.send(map[string]any{"type": "response.output_item.done", "output_index": i, "item": clone(b.resp.Output[i])})
}

func clone(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// openMessage begins the output message of round.
func (b *responseBuilder) openMessage(round uint64, seq uint64) error {
	b.msg = map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d_%d_%d", b.resp.CreatedAt, seq, round), "status": "in_progress",
		"role": "assistant", "content": []any{}}
	b.round = round
	b.text.Reset()
	i, err := b.item(b.msg)
	if err != nil {
		return err
	}
	return b.send(map[string]any{"type": "response.content_part.added", "item_id": b.msg["id"], "output_index": i, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
}

// closeMessage ends the message being written with its whole text.
func (b *responseBuilder) closeMessage(text string) error {
	i := len(b.resp.Output) - 1
	part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
	b.msg["content"] = []any{part}
	b.msg["status"] = "completed"
	id := b.msg["id"]
	b.msg = nil
	if err := b.send(map[string]any{"type": "response.output_text.done", "item_id": id, "output_index": i, "content_index": 0, "text": text, "logprobs": []any{}}); err != nil {
		return err
	}
	if err := b.send(map[string]any{"type": "response.content_part.done", "item_id": id, "output_index": i, "content_index": 0, "part": part}); err != nil {
		return err
	}
	return b.itemDone(i)
}

// delta writes text to the message being written.
func (b *responseBuilder) delta(text string) error {
	b.text.WriteString(text)
	if b.emitDelta != nil {
		return b.emitDelta(b.msg["id"].(string), len(b.resp.Output)-1, text)
	}
	return b.send(map[string]any{"type": "response.output_text.delta", "item_id": b.msg["id"], "output_index": len(b.resp.Output) - 1,
		"content_index": 0, "delta": text, "logprobs": []any{}})
}

// add takes the turn's next event.
func (b *responseBuilder) add(ctx context.Context, e agent.Event) error {
	if b.ended {
		return nil
	}
	switch e := e.(type) {
	case agent.TextDelta:
		if b.msg == nil || b.round != e.Round {
			if b.msg != nil {
				if err := b.closeMessage(b.text.String()); err != nil {
					return err
				}
			}
			if err := b.openMessage(e.Round, 0); err != nil {
				return err
			}
		}
		return b.delta(e.Text)
	case agent.Message:
		if e.Role != "assistant" || e.Text == "" {
			return nil
		}
		if b.msg == nil || b.round != e.Round {
			if b.msg != nil {
				if err := b.closeMessage(b.text.String()); err != nil {
					return err
				}
			}
			if err := b.openMessage(e.Round, e.Seq); err != nil {
				return err
			}
			if err := b.delta(e.Text); err != nil {
				return err
			}
		}
		return b.closeMessage(e.Text)
	case agent.ToolCallStarted:
		if e.Status == "approval" {
			return nil // its mcp_approval_request follows
		}
		return b.startCall(e.CallID, e.Tool, b.arguments(ctx, e))
	case agent.ToolCallFinished:
		i, ok := b.calls[e.CallID]
		if !ok { // approved in an earlier response: it begins here
			if err := b.startCall(e.CallID, e.Tool, ""); err != nil {
				return err
			}
			i = b.calls[e.CallID]
		}
		out, err := b.chat.Output(ctx, e)
		if err != nil {
			out = e.Output
		}
		it := b.resp.Output[i]
		typ := "response.mcp_call.completed"
		it["output"], it["status"] = out, "completed"
		if e.Status != "ok" {
			// The call's output is what the model read of the failure; the
			// error says how it ended, as an MCP tool's failure does.
			it["error"] = map[string]any{"type": "mcp_tool_execution_error",
				"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("%s: %s", e.Status, out)}}}
			it["status"] = "failed"
			typ = "response.mcp_call.failed"
		}
		if err := b.send(map[string]any{"type": typ, "item_id": it["id"], "output_index": i}); err != nil {
			return err
		}
		return b.itemDone(i)
	case agent.ApprovalRequested:
		if b.msg != nil {
			if err := b.closeMessage(b.text.String()); err != nil {
				return err
			}
		}
		it := map[string]any{"type": "mcp_approval_request", "id": approvalID(e.CallID), "server_label": b.s.name, "name": e.Tool, "arguments": e.Arguments}
		i, err := b.item(it)
		if err != nil {
			return err
		}
		return b.itemDone(i)
	case agent.ModelCall:
		b.usage.Prompt += e.Usage.Prompt
		b.usage.Completion += e.Usage.Completion
		b.usage.Cached += e.Usage.Cached
		b.usage.CacheWrite += e.Usage.CacheWrite
		b.usage.Reasoning += e.Usage.Reasoning
	case agent.GuardStop:
		b.stop = e.Reason
	case agent.TurnError:
		b.fault = e.Text
	case agent.TurnEnd:
		return b.end(e)
	}
	return nil
}

// arguments is a call's whole arguments (the event holds a preview).
func (b *responseBuilder) arguments(ctx context.Context, e agent.ToolCallStarted) string {
	if e.Ref != nil {
		var call demiurge.LlmToolCall
		if err := cas.GetNode(ctx, b.s.storage().CAS(), *e.Ref, &call); err == nil && call.ArgumentsJSON != "" {
			return call.ArgumentsJSON
		}
	}
	return e.Arguments
}

// startCall adds the mcp_call item of a call the agent runs.
func (b *responseBuilder) startCall(call, tool, args string) error {
	if b.msg != nil {
		if err := b.closeMessage(b.text.String()); err != nil {
			return err
		}
	}
	it := map[string]any{"type": "mcp_call", "id": "mcp_" + call, "server_label": b.s.name, "name": tool, "arguments": args,
		"output": nil, "error": nil, "status": "in_progress"}
	i, err := b.item(it)
	if err != nil {
		return err
	}
	b.calls[call] = i
	if err := b.send(map[string]any{"type": "response.mcp_call_arguments.done", "item_id": it["id"], "output_index": i, "arguments": args}); err != nil {
		return err
	}
	return b.send(map[string]any{"type": "response.mcp_call.in_progress", "item_id": it["id"], "output_index": i})
}

// end completes the response as the turn ended.
func (b *responseBuilder) end(e agent.TurnEnd) error {
	if b.msg != nil {
		if err := b.closeMessage(b.text.String()); err != nil {
			return err
		}
	}
	b.usage = e.Usage
	typ := "response.completed"
	switch e.Outcome {
	case agent.OutcomeAnswer, agent.OutcomeAwaitingApproval:
		b.resp.Status = "completed"
	case agent.OutcomeCut:
		b.resp.Status, typ = "incomplete", "response.incomplete"
		reason := "max_output_tokens"
		if e.Finish == "content_filter" {
			reason = "content_filter"
		}
		b.resp.IncompleteDetails = &incomplete{Reason: reason}
	case agent.OutcomeStopped:
		b.resp.Status, typ = "incomplete", "response.incomplete"
		b.resp.IncompleteDetails = &incomplete{Reason: "stopped: " + b.stop}
	default:
		b.resp.Status, typ = "failed", "response.failed"
		ref, _ := decodeID("resp_", b.resp.ID)
		b.resp.Error = &responseError{Code: "server_error", Message: b.s.clientFault(ref.World, ref.Chat, e.RequestID, b.fault)}
	}
	u := b.usage
	b.resp.Usage = &responseUsage{InputTokens: u.Prompt, OutputTokens: u.Completion, TotalTokens: u.Prompt + u.Completion,
		InputTokensDetails: map[string]uint64{"cached_tokens": u.Cached}, OutputTokensDetails: map[string]uint64{"reasoning_tokens": u.Reasoning}}
	b.ended = true
	return b.send(map[string]any{"type": typ, "response": b.snapshot()})
}

// finishAwaiting completes a response whose turn now waits for approval
// of the calls its mcp_approval_request items name.
func (b *responseBuilder) finishAwaiting() error {
	return b.end(agent.TurnEnd{Outcome: agent.OutcomeAwaitingApproval, Usage: b.usage})
}

// fail ends a stream that broke with an error event (OpenAI's "error").
func (b *responseBuilder) fail(err error) {
	code := "server_error"
	if err == errHandedOver {
		code = "shutting_down"
	}
	_ = b.send(map[string]any{"type": "error", "code": code, "message": err.Error(), "param": nil})
}
