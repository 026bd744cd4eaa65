package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/agent/session"
)

// chatPolicy is what POST /v1/chat/completions takes of OpenAI's request.
var chatPolicy = fieldPolicy{
	taken: []string{"model", "messages", "stream", "stream_options", "tool_choice", "n", "store", "response_format"},
	ignored: map[string]bool{"metadata": true, "user": true, "safety_identifier": true, "prompt_cache_key": true, "service_tier": true,
		"parallel_tool_calls": true, "prompt_cache_retention": true},
	refused: mergeRefused(refusedCommon, map[string]string{
		"max_tokens":            "the agent's limits are the server's (demiurge serve --max-tokens)",
		"max_completion_tokens": "the agent's limits are the server's (demiurge serve --max-tokens)",
		"function_call":         "the agent's tools are its own and run on the server; client-side function tools are not supported",
		"verbosity":             "the agent's model settings are the server's",
	}),
}

// turnFailed is the message of a Chat Completions error for a failed
// turn: the fault as an OpenAI client is told it (clientFault).
func (s *Server) turnFailed(key turnKey, fault string) string {
	msg := s.clientFault(key.world, key.chat, key.request, fault)
	if fault != "" {
		msg = "the turn failed: " + msg
	}
	return msg
}

// ccMessage is one message of a Chat Completions conversation, as far as
// an agent's chat can hold it: the user's, or the agent's answer.
type ccMessage struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// ccRequest is what a POST /v1/chat/completions asks, once read.
type ccRequest struct {
	model        string
	history      []ccMessage // the messages before the user's new ones
	text         string      // the user's new message(s)
	stream       bool
	includeUsage bool
	toolChoice   *agent.ToolChoice
}

// parseChat reads a POST /v1/chat/completions request.
func parseChat(fields map[string]json.RawMessage) (*ccRequest, error) {
	if err := chatPolicy.check(fields); err != nil {
		return nil, err
	}
	req := &ccRequest{}
	if err := field(fields, "model", &req.model); err != nil {
		return nil, err
	}
	if err := field(fields, "stream", &req.stream); err != nil {
		return nil, err
	}
	var so struct {
		IncludeUsage bool `json:"include_usage"`
	}
	if err := field(fields, "stream_options", &so); err != nil {
		return nil, err
	}
	req.includeUsage = so.IncludeUsage
	n := 1
	if err := field(fields, "n", &n); err != nil {
		return nil, err
	}
	if n != 1 {
		return nil, invalid("n", "unsupported_parameter", "n cannot map onto an agent: a turn has one answer (n: 1)")
	}
	var store *bool
	if err := field(fields, "store", &store); err != nil {
		return nil, err
	}
	if store != nil && !*store {
		return nil, invalid("store", "unsupported_parameter", "store: false cannot map onto an agent: every turn is journaled")
	}
	var rf struct {
		Type string `json:"type"`
	}
	if err := field(fields, "response_format", &rf); err != nil {
		return nil, err
	}
	if rf.Type != "" && rf.Type != "text" {
		return nil, invalid("response_format", "unsupported_parameter", fmt.Sprintf("response_format %q cannot map onto an agent: it answers in text", rf.Type))
	}
	if raw, ok := fields["tool_choice"]; ok {
		tc, err := parseToolChoice(raw)
		if err != nil {
			return nil, err
		}
		req.toolChoice = tc
	}
	var raws []json.RawMessage
	if err := field(fields, "messages", &raws); err != nil {
		return nil, err
	}
	if len(raws) == 0 {
		return nil, invalid("messages", "missing_required_parameter", "messages is required: the conversation, the user's new message last")
	}
	var msgs []ccMessage
	for i, raw := range raws {
		param := fmt.Sprintf("messages[%d]", i)
		var m struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCalls  json.RawMessage `json:"tool_calls"`
			ToolCallID string          `json:"tool_call_id"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, invalid(param, "invalid_type", param+": "+err.Error())
		}
		switch m.Role {
		case "user":
		case "assistant":
			if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" && string(m.ToolCalls) != "[]" {
				return nil, invalid(param, "unsupported_parameter", param+": tool_calls cannot map onto an agent: its tools run on the server; client-side function tools are not supported")
			}
		case "system", "developer":
			return nil, invalid(param, "unsupported_parameter", fmt.Sprintf("%s: a %s message cannot map onto an agent: its instructions are its own (its manifest's, or demiurge serve --instructions)", param, m.Role))
		case "tool", "function":
			return nil, invalid(param, "unsupported_parameter", param+": tool results cannot map onto an agent: its tools run on the server; client-side function tools are not supported")
		default:
			return nil, invalid(param+".role", "invalid_value", fmt.Sprintf("%s.role %q: want user or assistant", param, m.Role))
		}
		if len(m.Content) == 0 || string(m.Content) == "null" {
			return nil, invalid(param+".content", "missing_required_parameter", param+": the message's content is required")
		}
		text, err := messageText(param, m.Content, "text")
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, ccMessage{Role: m.Role, Text: text})
	}
	last := len(msgs)
	for last > 0 && msgs[last-1].Role == "user" {
		last--
	}
	if last == len(msgs) {
		return nil, invalid("messages", "invalid_request", "messages: the last message must be the user's (the agent answers it)")
	}
	var texts []string
	for _, m := range msgs[last:] {
		texts = append(texts, m.Text)
	}
	req.history, req.text = msgs[:last], strings.Join(texts, "\n\n")
	if strings.TrimSpace(req.text) == "" {
		return nil, invalid("messages", "empty_input", "messages: the user's new message is empty")
	}
	for i, m := range req.history {
		if want := []string{"user", "assistant"}[i%2]; m.Role != want {
			return nil, invalid(fmt.Sprintf("messages[%d]", i), "invalid_request", fmt.Sprintf("messages[%d]: a conversation alternates the user's messages and the agent's answers, the user's first; this one is the %s's", i, m.Role))
		}
	}
	return req, nil
}

// convKey is the key of a conversation's history in a world.
func convKey(world string, history []ccMessage) string {
	h := sha256.New()
	for _, m := range append([]ccMessage{{Role: "world", Text: world}}, history...) {
		b, _ := json.Marshal([]string{m.Role, strings.TrimSpace(m.Text)})
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// convIndex finds the chat a Chat Completions conversation is, from the
// messages it sends back: each chat's history (the user's messages and
// the agent's answers, turn by turn) after each turn it answered, by
// hash. It is made from the journal (each chat's turns), and grows with
// the turns this server answers: another server's turn, or a restart,
// makes it read the world's journal again.
//
// Only a chat's current history leads to it. Two chats can have the same
// history (two users who said the same and got the same answers, as a
// deterministic model gives): each request goes on in a chat whose
// history is what it sent, never in one that has moved past it, whose
// later turns are another conversation's.
type convIndex struct {
	mu     sync.Mutex
	worlds map[string]*worldConvs
}

// worldConvs is what convIndex holds of one world.
type worldConvs struct {
	current map[string][]string // convKey → the chats whose history it is now, in the order they reached it
	at      map[string]chatAt   // chat → its current history
	past    map[string]bool     // every convKey a chat had (a history some chat moved past)
	read    uint64              // the journal head the world was last read at
}

// chatAt is a chat's current history: its key and its length.
type chatAt struct {
	key string
	n   int
}

func newConvIndex() *convIndex {
	return &convIndex{worlds: map[string]*worldConvs{}}
}

// of returns what x holds of world, made on first use; x.mu is held.
func (x *convIndex) of(world string) *worldConvs {
	wc := x.worlds[world]
	if wc == nil {
		wc = &worldConvs{current: map[string][]string{}, at: map[string]chatAt{}, past: map[string]bool{}}
		x.worlds[world] = wc
	}
	return wc
}

// add records that chat's history is history, unless the chat is known
// to have a longer one already (the journal read again after this server
// recorded the chat's later turns).
func (x *convIndex) add(world, chat string, history []ccMessage) {
	key := convKey(world, history)
	x.mu.Lock()
	defer x.mu.Unlock()
	wc := x.of(world)
	wc.past[key] = true
	old, ok := wc.at[chat]
	switch {
	case ok && old.key == key:
		return
	case ok && old.n >= len(history):
		return
	case ok:
		wc.current[old.key] = slices.DeleteFunc(wc.current[old.key], func(c string) bool { return c == chat })
		if len(wc.current[old.key]) == 0 {
			delete(wc.current, old.key)
		}
	}
	wc.at[chat] = chatAt{key, len(history)}
	wc.current[key] = append(wc.current[key], chat)
}

// lookup returns the chats whose current history has key, and whether
// some chat had it once; x.mu is held.
func (x *convIndex) lookup(world, key string) (chats []string, seen bool) {
	wc := x.worlds[world]
	if wc == nil {
		return nil, false
	}
	return slices.Clone(wc.current[key]), wc.past[key]
}

// forget drops what the index holds of world (closed: it is read from
// the journal again when it opens).
func (x *convIndex) forget(world string) {
	x.mu.Lock()
	delete(x.worlds, world)
	x.mu.Unlock()
}

// newWorldConversation returns the world NewWorlds gave the Chat
// Completions conversation whose history is history, if this server
// answered its turns there.
func (s *Server) newWorldConversation(history []ccMessage) (string, bool) {
	s.newWorld.Lock()
	worlds := slices.Sorted(maps.Keys(s.taken))
	s.newWorld.Unlock()
	x := s.conv
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, w := range worlds {
		if _, seen := x.lookup(w, convKey(w, history)); seen {
			return w, true
		}
	}
	return "", false
}

// findConversation returns the chats whose history is history now (the
// first is the one to go on in), and whether some chat had that history
// once (a conversation that some chat has since moved past), reading the
// world's journal when it moved since it was last read.
func (s *Server) findConversation(ctx context.Context, aw *agent.World, history []ccMessage) ([]string, bool, error) {
	x := s.conv
	key := convKey(aw.Name(), history)
	x.mu.Lock()
	chats, seen := x.lookup(aw.Name(), key)
	var read uint64
	if wc := x.worlds[aw.Name()]; wc != nil {
		read = wc.read
	}
	x.mu.Unlock()
	if len(chats) > 0 {
		return chats, true, nil
	}
	head, err := s.journalStore().Head(ctx, aw.Name())
	if err != nil || head.Seq == read {
		return nil, seen, err
	}
	rd := session.NewReader(s.storage().CAS())
	if err := s.journalStore().Read(ctx, aw.Name(), 1, rd.Record); err != nil {
		return nil, false, err
	}
	hist := map[string][]ccMessage{}
	for _, t := range rd.Turns() {
		a := answerText(t.Assistant)
		if !t.Ended() || a == "" {
			continue // unanswered: the client did not get it as an answer
		}
		h := append(hist[t.Chat], ccMessage{"user", t.User}, ccMessage{"assistant", a})
		hist[t.Chat] = h
		x.add(aw.Name(), t.Chat, h)
	}
	x.mu.Lock()
	x.of(aw.Name()).read = head.Seq
	chats, seen = x.lookup(aw.Name(), key)
	x.mu.Unlock()
	return chats, seen, nil
}

// ccResponse is a chat.completion object.
type ccResponse struct {
	ID      string     `json:"id"`
	Object  string     `json:"object"`
	Created int64      `json:"created"`
	Model   string     `json:"model"`
	Choices []ccChoice `json:"choices"`
	Usage   *ccUsage   `json:"usage,omitempty"`
}

type ccChoice struct {
	Index        int       `json:"index"`
	Message      *ccOut    `json:"message,omitempty"`
	Delta        *ccOut    `json:"delta,omitempty"`
	FinishReason *string   `json:"finish_reason"`
	Logprobs     *struct{} `json:"logprobs"`
}

type ccOut struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
	Refusal *string `json:"refusal,omitempty"`
}

type ccUsage struct {
	PromptTokens            uint64            `json:"prompt_tokens"`
	CompletionTokens        uint64            `json:"completion_tokens"`
	TotalTokens             uint64            `json:"total_tokens"`
	PromptTokensDetails     map[string]uint64 `json:"prompt_tokens_details"`
	CompletionTokensDetails map[string]uint64 `json:"completion_tokens_details"`
}

func ccUsageOf(u agent.Usage) *ccUsage {
	return &ccUsage{PromptTokens: u.Prompt, CompletionTokens: u.Completion, TotalTokens: u.Prompt + u.Completion,
		PromptTokensDetails: map[string]uint64{"cached_tokens": u.Cached}, CompletionTokensDetails: map[string]uint64{"reasoning_tokens": u.Reasoning}}
}

// handleChatCompletions answers POST /v1/chat/completions: the
// conversation's messages map onto a chat (the one whose turns they
// repeat, or a new one), its last user message is sent to it, and the
// turn's text is the answer, streamed or whole. The agent's tool calls
// run on the server and are not in the answer.
func (s *Server) handleChatCompletions(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	fields, err := readFields(r)
	if err != nil {
		writeError(w, err)
		return
	}
	req, err := parseChat(fields)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := s.checkModel(req.model); err != nil {
		writeError(w, err)
		return
	}
	begins := r.Header.Get("Demiurge-Chat") == "" && len(req.history) == 0
	world, err := s.openAIWorld(r, begins)
	if err != nil {
		writeError(w, err)
		return
	}
	if s.opts.NewWorlds && !begins && r.Header.Get("Demiurge-World") == "" && r.Header.Get("Demiurge-Chat") == "" {
		// A conversation that began in a world of its own goes on there.
		if nw, ok := s.newWorldConversation(req.history); ok && s.allow(r, nw) == nil {
			world = nw
		}
	}
	aw, err := s.world(r.Context(), world, true)
	if err != nil {
		writeError(w, err)
		return
	}
	chat := r.Header.Get("Demiurge-Chat")
	var others []string // more chats whose history is the request's
	if chat != "" {
		if err := checkChatID(chat); err != nil {
			writeError(w, err)
			return
		}
		// A first message to a named chat has no history to check: the
		// journal is not read for it.
		if len(req.history) > 0 {
			found, _, err := s.findConversation(r.Context(), aw, req.history)
			if err != nil {
				writeError(w, err)
				return
			}
			if !slices.Contains(found, chat) {
				writeError(w, conflict("conversation_mismatch", fmt.Sprintf("the messages before the last are not chat %s's turns (the user's messages and the answers it got): a chat's history cannot be edited; send them as the chat has them, or start a new conversation", chat)))
				return
			}
		}
	} else if len(req.history) == 0 {
		chat = "chatcmpl_" + randomHex(12)
	} else {
		found, seen, err := s.findConversation(r.Context(), aw, req.history)
		if err != nil {
			writeError(w, err)
			return
		}
		if len(found) == 0 && seen {
			writeError(w, conflict("conversation_diverged", fmt.Sprintf("the messages before the last were a chat's turns in world %s, but that chat has gone on since with other messages (another client's, or this one's sent again): a chat's history cannot be edited or branched; send the chat's whole history, or start a new conversation with the user's message alone", world)))
			return
		}
		if len(found) == 0 {
			writeError(w, notFound("conversation_not_found", fmt.Sprintf("the messages before the last are no chat's turns in world %s (the user's messages and the answers they got, in order): a chat's history cannot be edited or regenerated; start a new conversation with the user's message alone", world)))
			return
		}
		chat, others = found[0], found[1:]
	}
	var opts []agent.SendOption
	if req.toolChoice != nil {
		opts = append(opts, agent.WithToolChoice(*req.toolChoice))
	}
	l, err := s.send(r.Context(), aw, chat, req.text, opts...)
	// Another chat with the same history is as good a place to go on: one
	// whose turn is under way is another client's conversation.
	for len(others) > 0 && errors.Is(err, errTurnUnderWay) {
		chat, others = others[0], others[1:]
		l, err = s.send(r.Context(), aw, chat, req.text, opts...)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	defer l.handOff() // whatever this request read of the turn, the rest runs
	key := turnKey{l.world, l.chat, l.request}
	if s.testStarted != nil {
		s.testStarted(key, start)
	}
	ref := responseRef{World: key.world, Chat: key.chat, Turn: key.request, Created: time.Now().Unix()}
	id := encodeID("chatcmpl-", ref)
	record := func(answer string) {
		s.conv.add(key.world, key.chat, append(append([]ccMessage(nil), req.history...), ccMessage{"user", req.text}, ccMessage{"assistant", answer}))
	}
	if req.stream {
		s.streamChat(w, r, aw, key, ref, id, req.includeUsage, record)
		return
	}
	var texts []string
	var end agent.TurnEnd
	var fault, stop string
	awaiting := false
	err = s.follow(r.Context(), aw, key, position{}, func(e logged) error {
		switch e := e.ev.(type) {
		case agent.Message:
			if e.Role == "assistant" {
				texts = append(texts, e.Text)
			}
		case agent.TurnError:
			fault = e.Text
		case agent.GuardStop:
			stop = e.Reason
		case agent.TurnEnd:
			end = e
		}
		return nil
	}, func() error { awaiting = true; return nil }, nil)
	if err != nil {
		writeError(w, err)
		return
	}
	if awaiting {
		writeError(w, awaitingError(key))
		return
	}
	answer := answerText(texts)
	finish := "stop"
	switch end.Outcome {
	case agent.OutcomeFailed:
		writeError(w, &apiError{Status: http.StatusBadGateway, Type: typeServer, Code: "turn_failed", Message: s.turnFailed(key, fault)})
		return
	case agent.OutcomeCut:
		finish = "length"
		if end.Finish == "content_filter" {
			finish = "content_filter"
		}
	case agent.OutcomeStopped:
		if answer == "" {
			answer = "[the turn was stopped: " + stop + "]"
		}
	}
	record(answer)
	writeJSON(w, http.StatusOK, ccResponse{ID: id, Object: "chat.completion", Created: ref.Created, Model: s.name,
		Choices: []ccChoice{{Message: &ccOut{Role: "assistant", Content: &answer}, FinishReason: &finish}}, Usage: ccUsageOf(end.Usage)})
}

// awaitingError is the error of a Chat Completions turn that waits for
// approval: the API has no way to ask.
func awaitingError(key turnKey) error {
	return conflict("awaiting_approval", fmt.Sprintf("the turn waits for approval of a tool call, which Chat Completions cannot ask: answer it at POST %s/approvals/CALL (GET %s/approvals lists them), or use the Responses API", chatPath(key.world, key.chat), chatPath(key.world, key.chat)))
}

// streamChat streams turn key as chat.completion.chunk events, the
// model's text as it comes (a blank line between two rounds' texts),
// and data: [DONE] last.
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, aw *agent.World, key turnKey, ref responseRef, id string, includeUsage bool, record func(string)) {
	s.metrics.streamOpened()
	defer s.metrics.streamClosed()
	sw := s.newSSE(w, time.Second)
	sw.start()
	var line []byte // reused by every chunk (sw.raw copies it to the response's buffer)
	chunk := func(delta *ccOut, finish *string, usage *ccUsage) error {
		c := ccResponse{ID: id, Object: "chat.completion.chunk", Created: ref.Created, Model: s.name, Choices: []ccChoice{}, Usage: usage}
		if delta != nil || finish != nil {
			if delta == nil {
				delta = &ccOut{}
			}
			c.Choices = []ccChoice{{Delta: delta, FinishReason: finish}}
		}
		b, err := json.Marshal(c)
		if err != nil {
			return err
		}
		line = append(append(append(line[:0], "data: "...), b...), '\n', '\n')
		return sw.raw(line)
	}
	fail := func(e *apiError) {
		b, _ := json.Marshal(map[string]*apiError{"error": e})
		_ = sw.raw(append(append([]byte("data: "), b...), '\n', '\n'))
	}
	empty := ""
	if err := chunk(&ccOut{Role: "assistant", Content: &empty}, nil, nil); err != nil || sw.flush() != nil {
		sw.close()
		return
	}
	var answer strings.Builder
	var fault string
	streamed := map[uint64]bool{} // rounds whose text came in deltas
	write := func(text string) error {
		answer.WriteString(text)
		return chunk(&ccOut{Content: &text}, nil, nil)
	}
	lastRound := ^uint64(0)
	startRound := func(round uint64) error {
		if round == lastRound {
			return nil
		}
		lastRound = round
		if answer.Len() > 0 {
			return write("\n\n")
		}
		return nil
	}
	err := s.follow(r.Context(), aw, key, position{}, func(e logged) error {
		switch e := e.ev.(type) {
		case agent.TextDelta:
			if e.Text == "" {
				return nil
			}
			if err := startRound(e.Round); err != nil {
				return err
			}
			streamed[e.Round] = true
			return write(e.Text)
		case agent.Message:
			if e.Role != "assistant" || strings.TrimSpace(e.Text) == "" || streamed[e.Round] {
				return nil
			}
			if err := startRound(e.Round); err != nil {
				return err
			}
			return write(e.Text)
		case agent.TurnError:
			fault = e.Text
		case agent.TurnEnd:
			if e.Outcome == agent.OutcomeFailed {
				fail(&apiError{Status: http.StatusBadGateway, Type: typeServer, Code: "turn_failed", Message: s.turnFailed(key, fault)})
				return errStop
			}
			finish := "stop"
			if e.Outcome == agent.OutcomeCut {
				finish = "length"
				if e.Finish == "content_filter" {
					finish = "content_filter"
				}
			}
			record(answer.String())
			if err := chunk(nil, &finish, nil); err != nil {
				return err
			}
			if includeUsage {
				if err := chunk(nil, nil, ccUsageOf(e.Usage)); err != nil {
					return err
				}
			}
			return sw.raw([]byte("data: [DONE]\n\n"))
		}
		return nil
	}, func() error {
		var ae *apiError
		errors.As(awaitingError(key), &ae)
		fail(ae)
		return nil
	}, sw.flush)
	if err != nil && r.Context().Err() == nil && sw.err == nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = serverError(err)
		}
		fail(ae)
	}
	_ = sw.flush()
	sw.close()
}
