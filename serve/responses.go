package serve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/agent"
)

// responsesPolicy is what POST /v1/responses takes of OpenAI's request.
var responsesPolicy = fieldPolicy{
	taken: []string{"model", "input", "previous_response_id", "conversation", "stream", "tool_choice", "store", "background", "text", "truncation"},
	ignored: map[string]bool{"metadata": true, "user": true, "safety_identifier": true, "prompt_cache_key": true, "service_tier": true,
		"parallel_tool_calls": true, "include": true, "stream_options": true, "prompt_cache_retention": true},
	refused: mergeRefused(refusedCommon, map[string]string{
		"instructions":       "the agent's instructions are its own (its manifest's, or demiurge serve --instructions)",
		"max_output_tokens":  "the agent's limits are the server's (demiurge serve --max-tokens)",
		"max_tool_calls":     "the agent's limits are the server's (demiurge serve --max-rounds)",
		"prompt":             "prompt templates are not supported: send the input",
		"context_management": "the chat compacts its transcript on its own",
	}),
}

func mergeRefused(a, b map[string]string) map[string]string {
	m := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

// responsesRequest is what a POST /v1/responses asks, once read.
type responsesRequest struct {
	model      string
	text       string     // the user's message; "" when approvals answer
	approvals  []approval // mcp_approval_response items
	previous   string
	conv       string
	stream     bool
	toolChoice *agent.ToolChoice
}

// approval is an mcp_approval_response input item.
type approval struct {
	call    string
	approve bool
	reason  string
}

// parseResponses reads a POST /v1/responses request.
func parseResponses(fields map[string]json.RawMessage) (*responsesRequest, error) {
	if err := responsesPolicy.check(fields); err != nil {
		return nil, err
	}
	req := &responsesRequest{}
	if err := field(fields, "model", &req.model); err != nil {
		return nil, err
	}
	if err := field(fields, "stream", &req.stream); err != nil {
		return nil, err
	}
	if err := field(fields, "previous_response_id", &req.previous); err != nil {
		return nil, err
	}
	if raw, ok := fields["conversation"]; ok {
		var id string
		if json.Unmarshal(raw, &id) != nil {
			var obj struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(raw, &obj); err != nil || obj.ID == "" {
				return nil, invalid("conversation", "invalid_type", `conversation: want a chat's id, or {"id": "…"}`)
			}
			id = obj.ID
		}
		req.conv = id
	}
	if req.previous != "" && req.conv != "" {
		return nil, invalid("conversation", "invalid_request", "previous_response_id and conversation cannot both be given: the previous response names its conversation")
	}
	var store, background *bool
	if err := field(fields, "store", &store); err != nil {
		return nil, err
	}
	if store != nil && !*store {
		return nil, invalid("store", "unsupported_parameter", "store: false cannot map onto an agent: every turn is journaled (that is what makes it durable and replayable)")
	}
	if err := field(fields, "background", &background); err != nil {
		return nil, err
	}
	if background != nil && *background {
		return nil, invalid("background", "unsupported_parameter", "background: true is not supported: every turn runs on the server to its end whatever the client does; stream it, or fetch it later with GET /v1/responses/{id}")
	}
	var truncation string
	if err := field(fields, "truncation", &truncation); err != nil {
		return nil, err
	}
	if truncation != "" && truncation != "disabled" && truncation != "auto" {
		return nil, invalid("truncation", "invalid_value", `truncation: want "auto" or "disabled"`)
	}
	if raw, ok := fields["text"]; ok {
		var t struct {
			Format *struct {
				Type string `json:"type"`
			} `json:"format"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, invalid("text", "invalid_type", "text: "+err.Error())
		}
		if t.Format != nil && t.Format.Type != "text" {
			return nil, invalid("text.format", "unsupported_parameter", fmt.Sprintf("text.format %q cannot map onto an agent: it answers in text", t.Format.Type))
		}
	}
	if raw, ok := fields["tool_choice"]; ok {
		tc, err := parseToolChoice(raw)
		if err != nil {
			return nil, err
		}
		req.toolChoice = tc
	}
	raw, ok := fields["input"]
	if !ok {
		return nil, invalid("input", "missing_required_parameter", "input is required: the user's message")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		req.text = s
	} else {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, invalid("input", "invalid_type", "input: want a string or a list of input items")
		}
		var texts []string
		for i, it := range items {
			t, a, err := inputItem(i, it)
			if err != nil {
				return nil, err
			}
			if a != nil {
				req.approvals = append(req.approvals, *a)
			} else {
				texts = append(texts, t)
			}
		}
		req.text = strings.Join(texts, "\n\n")
	}
	switch {
	case len(req.approvals) > 0 && strings.TrimSpace(req.text) != "":
		return nil, invalid("input", "invalid_request", "input: a turn that waits for approval is answered by mcp_approval_response items alone; send the next message once it has ended")
	case len(req.approvals) > 0 && req.previous == "":
		return nil, invalid("previous_response_id", "missing_required_parameter", "mcp_approval_response answers a call of a previous response: give its previous_response_id")
	case len(req.approvals) == 0 && strings.TrimSpace(req.text) == "":
		return nil, invalid("input", "empty_input", "input: the user's message is empty")
	}
	return req, nil
}

// inputItem reads one input item: a user message's text, or an approval.
func inputItem(i int, raw json.RawMessage) (string, *approval, error) {
	param := fmt.Sprintf("input[%d]", i)
	var it struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		RequestID string          `json:"approval_request_id"`
		Approve   *bool           `json:"approve"`
		Reason    string          `json:"reason"`
	}
	if err := json.Unmarshal(raw, &it); err != nil {
		return "", nil, invalid(param, "invalid_type", param+": "+err.Error())
	}
	switch it.Type {
	case "mcp_approval_response":
		call, err := approvalCall(it.RequestID)
		if err != nil || it.Approve == nil {
			return "", nil, invalid(param, "invalid_value", param+`: an mcp_approval_response needs the approval_request_id of an mcp_approval_request this server sent, and "approve"`)
		}
		return "", &approval{call: call, approve: *it.Approve, reason: it.Reason}, nil
	case "", "message":
	case "function_call_output", "function_call":
		return "", nil, invalid(param, "unsupported_parameter", param+": "+it.Type+" cannot map onto an agent: its tools run on the server, and client-side function tools are not supported")
	default:
		return "", nil, invalid(param, "unsupported_parameter", fmt.Sprintf("%s: items of type %q cannot map onto an agent (it takes the user's messages, and mcp_approval_response)", param, it.Type))
	}
	if it.Role != "user" {
		return "", nil, invalid(param, "unsupported_parameter", fmt.Sprintf(`%s: a %q message cannot map onto an agent: the chat's history and instructions are the server's; send the user's new message, and continue a conversation with previous_response_id (or conversation)`, param, it.Role))
	}
	text, err := messageText(param, it.Content, "input_text")
	return text, nil, err
}

// messageText reads a message's content: a string, or a list of text
// parts (of type partType, or "text").
func messageText(param string, raw json.RawMessage, partType string) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", invalid(param+".content", "invalid_type", param+".content: want a string or a list of text parts")
	}
	var texts []string
	for j, p := range parts {
		if p.Type != partType && p.Type != "text" {
			return "", invalid(fmt.Sprintf("%s.content[%d]", param, j), "unsupported_parameter",
				fmt.Sprintf("%s.content[%d]: parts of type %q cannot map onto an agent: it reads text", param, j, p.Type))
		}
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// parseToolChoice reads a tool_choice: "auto", "none", "required", or a
// tool of the agent ({"type": "mcp", "name": …} or {"type": "function",
// "name": …}).
func parseToolChoice(raw json.RawMessage) (*agent.ToolChoice, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			tc, _ := agent.ParseToolChoice(s)
			return &tc, nil
		}
		return nil, invalid("tool_choice", "invalid_value", `tool_choice: want "auto", "none", "required", or {"type": "mcp", "name": TOOL}`)
	}
	var obj struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, invalid("tool_choice", "invalid_type", "tool_choice: "+err.Error())
	}
	name := obj.Name
	if obj.Function != nil && name == "" {
		name = obj.Function.Name
	}
	if (obj.Type != "mcp" && obj.Type != "function") || name == "" {
		return nil, invalid("tool_choice", "invalid_value", `tool_choice: want "auto", "none", "required", or {"type": "mcp", "name": TOOL} naming a tool of the agent`)
	}
	tc := agent.ToolChoiceTool(name)
	return &tc, nil
}

// approvalCall is the call id an approval request's id names.
func approvalCall(id string) (string, error) {
	rest, ok := strings.CutPrefix(id, "mcpr_")
	if !ok {
		return "", errors.New("not an approval request of this server")
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(b) == 0 {
		return "", errors.New("not an approval request of this server")
	}
	return string(b), nil
}

// approvalID is the id of the approval request of call.
func approvalID(call string) string {
	return "mcpr_" + base64.RawURLEncoding.EncodeToString([]byte(call))
}

// handleResponses answers POST /v1/responses: the request's input is the
// user's next message in a chat (a new one, the conversation's, or the
// previous response's), or its answers to calls that wait for approval;
// the response is the turn, streamed or whole.
func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	fields, err := readFields(r)
	if err != nil {
		writeError(w, err)
		return
	}
	req, err := parseResponses(fields)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := s.checkModel(req.model); err != nil {
		writeError(w, err)
		return
	}
	var ref responseRef
	var aw *agent.World
	switch {
	case req.previous != "":
		prev, err := decodeID("resp_", req.previous)
		if err != nil {
			writeError(w, notFound("response_not_found", "previous_response_id: "+err.Error()))
			return
		}
		if err := s.allow(r, prev.World); err != nil {
			writeError(w, err)
			return
		}
		if aw, err = s.world(r.Context(), prev.World, false); err != nil {
			writeError(w, err)
			return
		}
		ref = responseRef{World: prev.World, Chat: prev.Chat}
		if err := s.checkPrevious(aw, prev, req); err != nil {
			writeError(w, err)
			return
		}
	default:
		world, err := s.openAIWorld(r, req.conv == "")
		if err != nil {
			writeError(w, err)
			return
		}
		if aw, err = s.world(r.Context(), world, true); err != nil {
			writeError(w, err)
			return
		}
		chat := req.conv
		if chat == "" {
			chat = "conv_" + randomHex(12)
		}
		if err := checkChatID(chat); err != nil {
			writeError(w, err)
			return
		}
		ref = responseRef{World: world, Chat: chat}
	}
	ref.Created = time.Now().Unix()
	var key turnKey
	var from position
	if len(req.approvals) > 0 {
		c := s.chat(aw, ref.Chat)
		st, _ := c.State()
		key = turnKey{aw.Name(), ref.Chat, st.Turn.RequestID}
		before := aw.Head().Seq
		for _, a := range req.approvals {
			if _, _, err := c.Answer(r.Context(), a.call, agent.Decision{Approve: a.approve, Reason: a.reason}); err != nil {
				if errors.Is(err, agent.ErrNotWaiting) {
					writeError(w, conflict("not_waiting", err.Error()))
					return
				}
				writeError(w, err)
				return
			}
		}
		from = position{seq: before, n: ^uint64(0)}
		ref.After = before
	} else {
		var opts []agent.SendOption
		if req.toolChoice != nil {
			opts = append(opts, agent.WithToolChoice(*req.toolChoice))
		}
		l, err := s.send(r.Context(), aw, ref.Chat, req.text, opts...)
		if err != nil {
			writeError(w, err)
			return
		}
		defer l.handOff() // whatever this request read of the turn, the rest runs
		key = turnKey{l.world, l.chat, l.request}
		if s.testStarted != nil {
			s.testStarted(key, start)
		}
	}
	ref.Turn = key.request
	b := s.newResponse(aw, ref, req.previous)
	if req.stream {
		s.streamResponse(w, r, aw, key, from, b)
		return
	}
	evs, err := s.collect(r.Context(), aw, key, from)
	if err != nil {
		writeError(w, err)
		return
	}
	for _, e := range evs {
		b.add(r.Context(), e.ev)
	}
	writeJSON(w, http.StatusOK, b.resp)
}

// checkPrevious refuses to continue from prev what does not continue
// from it: an earlier turn (the chat has gone on since: that would branch
// it), a turn under way, or approvals of a turn that waits for none.
func (s *Server) checkPrevious(aw *agent.World, prev responseRef, req *responsesRequest) error {
	c := s.chat(aw, prev.Chat)
	st, ok := c.State()
	if !ok {
		return notFound("response_not_found", fmt.Sprintf("previous_response_id: chat %s of world %s is not there", prev.Chat, prev.World))
	}
	if prev.Turn != st.LastRequestID {
		return conflict("not_latest_response", fmt.Sprintf("previous_response_id is turn %d of chat %s, which has gone on to turn %d: a chat does not branch; continue from its latest response, or fork the world (POST /v1/worlds/%s/fork) and go on there",
			prev.Turn, prev.Chat, st.LastRequestID, prev.World))
	}
	if len(req.approvals) > 0 {
		if st.Turn == nil || st.Turn.RequestID != prev.Turn {
			return conflict("not_waiting", "the previous response's turn has ended: no call of it waits for approval")
		}
		return nil
	}
	if st.Turn != nil {
		if awaitingOnly(st) {
			return conflict("awaiting_approval", "the previous response's turn waits for approval: answer its mcp_approval_request items with mcp_approval_response items")
		}
		return conflict("turn_under_way", "the previous response's turn is still under way: wait for its end")
	}
	return nil
}

// handleGetResponse answers GET /v1/responses/{id}: the response as the
// journal holds it now (in_progress while its turn runs), or, with
// ?stream=true, its stream events as OpenAI streams a response it
// retrieves: from the first, or those after ?starting_after=N (a
// sequence_number), then the rest as the turn goes on.
func (s *Server) handleGetResponse(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	stream := false
	if v := q.Get("stream"); v != "" {
		var err error
		if stream, err = strconv.ParseBool(v); err != nil {
			writeError(w, invalid("stream", "invalid_value", fmt.Sprintf("stream: %q is not a boolean (true or false)", v)))
			return
		}
	}
	if r.ContentLength > 0 {
		// openai-go's GetStreaming asks with {"stream": true} in the
		// body (without a Content-Type), beside the query OpenAI
		// documents.
		r.Header.Set("Content-Type", "application/json")
		fields, err := readFields(r)
		if err != nil {
			writeError(w, err)
			return
		}
		if err := (fieldPolicy{taken: []string{"stream"}}).check(fields); err != nil {
			writeError(w, err)
			return
		}
		var body bool
		if err := field(fields, "stream", &body); err != nil {
			writeError(w, err)
			return
		}
		stream = stream || body
	}
	after := int64(-1)
	if v := q.Get("starting_after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, invalid("starting_after", "invalid_value", fmt.Sprintf("starting_after: %q is not a sequence_number (an integer from 0) of the response's stream", v)))
			return
		}
		after = n
	}
	ref, err := decodeID("resp_", r.PathValue("id"))
	if err != nil {
		writeError(w, notFound("response_not_found", err.Error()))
		return
	}
	if err := s.allow(r, ref.World); err != nil {
		writeError(w, err)
		return
	}
	aw, err := s.world(r.Context(), ref.World, false)
	if err != nil {
		writeError(w, err)
		return
	}
	c := s.chat(aw, ref.Chat)
	if err := checkTurn(c, ref.Turn); err != nil {
		writeError(w, notFound("response_not_found", err.Error()))
		return
	}
	key := turnKey{ref.World, ref.Chat, ref.Turn}
	b := s.newResponse(aw, ref, "")
	if stream {
		s.resumeResponse(w, r, aw, ref, key, b, after)
		return
	}
	st, _ := c.State()
	if st.Turn != nil && st.Turn.RequestID == ref.Turn && !awaitingOnly(st) {
		// Under way: what it did so far.
		ctx, cancel := context.WithTimeout(r.Context(), 200*time.Millisecond)
		defer cancel()
		_ = s.events(ctx, aw, key, position{seq: ref.After, n: afterN(ref.After)}, func(e logged) error {
			b.add(r.Context(), e.ev)
			return nil
		}, nil, false)
		writeJSON(w, http.StatusOK, b.resp)
		return
	}
	evs, err := s.collect(r.Context(), aw, key, position{seq: ref.After, n: afterN(ref.After)})
	if err != nil {
		writeError(w, err)
		return
	}
	for _, e := range evs {
		b.add(r.Context(), e.ev)
	}
	writeJSON(w, http.StatusOK, b.resp)
}

// afterN is the position's count for a response that begins after seq:
// every event of that seq is before it (none, for the turn's start).
func afterN(seq uint64) uint64 {
	if seq == 0 {
		return 0
	}
	return ^uint64(0)
}

// errCannotResume refuses a stream resumed where its sequence numbers
// may not be those the client was sent (see resumeResponse).
var errCannotResume = errors.New("cannot resume")

// resumeResponse answers GET /v1/responses/{id}?stream=true: the
// response's stream made again from its turn's events, those numbered
// after (all, for -1) sent, then the rest as the turn goes on. The stream
// is a function of the turn's events, so the numbers are those the client
// was sent when the events are the same: those of the turn's log in this
// process, which the response's first stream read (its text as it
// streamed), and which stays while the turn runs here and for
// Options.Keep after its end. Without that log (another server, a
// restart, later) the events come from the journal, where the model's
// text is one delta a round: a stream resumed after a message's first
// event would number what follows otherwise than the client's, losing or
// repeating events, and is refused (409 cannot_resume: GET the response
// whole, or stream it from its start); before one, it is the client's.
func (s *Server) resumeResponse(w http.ResponseWriter, r *http.Request, aw *agent.World, ref responseRef, key turnKey, b *responseBuilder, after int64) {
	l := s.turnLogOf(key)
	same := l != nil && l.began.Unix() <= ref.Created
	s.streamResponseFrom(w, r, aw, key, position{seq: ref.After, n: afterN(ref.After)}, b, after, same)
}

// streamResponse streams turn key's events after p as the Responses
// API's stream events.
func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, aw *agent.World, key turnKey, p position, b *responseBuilder) {
	s.streamResponseFrom(w, r, aw, key, p, b, -1, true)
}

// streamResponseFrom is streamResponse leaving out the events numbered
// up to skip; same says the events are those of the stream that numbered
// them (else a text message numbered up to skip refuses the stream: see
// resumeResponse).
func (s *Server) streamResponseFrom(w http.ResponseWriter, r *http.Request, aw *agent.World, key turnKey, p position, b *responseBuilder, skip int64, same bool) {
	s.metrics.streamOpened()
	defer s.metrics.streamClosed()
	sw := s.newSSE(w, time.Second)
	if skip < 0 {
		sw.start()
	}
	b.emit = func(ev map[string]any) error {
		n := b.seq
		ev["sequence_number"] = n
		b.seq++
		if int64(n) <= skip {
			if !same && textEvent(ev) {
				return errCannotResume
			}
			return nil
		}
		data, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		return sw.event("", ev["type"].(string), data)
	}
	var buf []byte // reused by every delta
	b.emitDelta = func(itemID string, outputIndex int, text string) error {
		n := b.seq
		b.seq++
		if int64(n) <= skip {
			if !same {
				return errCannotResume // a delta is part of a text message
			}
			return nil
		}
		var err error
		if buf, err = appendDeltaEvent(buf[:0], itemID, outputIndex, text, n); err != nil {
			return err
		}
		return sw.event("", "response.output_text.delta", buf)
	}
	err := b.begin()
	if err == nil {
		err = sw.flush()
	}
	if err == nil {
		err = s.follow(r.Context(), aw, key, p, func(e logged) error {
			return b.add(r.Context(), e.ev)
		}, b.finishAwaiting, sw.flush)
	}
	if errors.Is(err, errCannotResume) {
		if !sw.close() {
			writeError(w, conflict("cannot_resume", fmt.Sprintf("the stream of this response cannot be resumed after sequence_number %d: this server no longer holds the turn's text as it streamed (the turn ran on another server, before a restart, or ended more than %s ago), so the events after that number would not be those the stream sent. GET the response without stream for the whole of it, or stream it from its start", skip, s.opts.Keep)))
			return
		}
		err = errors.New("the stream cannot be resumed here")
	}
	if err != nil && r.Context().Err() == nil && sw.err == nil {
		b.fail(err)
	}
	_ = sw.flush()
	if !sw.close() {
		sw.start() // resumed after its last event: an empty stream
	}
}

// textEvent reports whether a Responses stream event is part of a text
// message (its item's opening, its part's, a delta), whose events are
// numbered otherwise when the text comes from the journal.
func textEvent(ev map[string]any) bool {
	switch ev["type"] {
	case "response.output_text.delta", "response.content_part.added":
		return true
	case "response.output_item.added":
		it, _ := ev["item"].(map[string]any)
		return it["type"] == "message"
	}
	return false
}

// appendDeltaEvent appends a response.output_text.delta event's JSON to
// buf, the bytes json.Marshal makes of the event as a map (its keys in
// order), without the map: a stream sends one a text delta.
func appendDeltaEvent(buf []byte, itemID string, outputIndex int, text string, seq int) ([]byte, error) {
	buf = append(buf, `{"content_index":0,"delta":`...)
	q, err := json.Marshal(text)
	if err != nil {
		return buf, err
	}
	buf = append(buf, q...)
	buf = append(buf, `,"item_id":`...)
	if q, err = json.Marshal(itemID); err != nil {
		return buf, err
	}
	buf = append(buf, q...)
	buf = append(buf, `,"logprobs":[],"output_index":`...)
	buf = strconv.AppendInt(buf, int64(outputIndex), 10)
	buf = append(buf, `,"sequence_number":`...)
	buf = strconv.AppendInt(buf, int64(seq), 10)
	buf = append(buf, `,"type":"response.output_text.delta"}`...)
	return buf, nil
}
