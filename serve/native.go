package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// decodeBody reads the request's JSON body into v, refusing fields v does
// not have. An empty body is {}.
func decodeBody(r *http.Request, v any) error {
	if err := jsonBody(r); err != nil {
		return err
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{Status: http.StatusRequestEntityTooLarge, Type: typeInvalid, Code: "body_too_large",
				Message: fmt.Sprintf("the request's body is over %d bytes", mbe.Limit)}
		}
		return invalid("", "bad_body", "read the request's body: "+err.Error())
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		b = []byte("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalid("", "bad_json", "the request's body: "+strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return invalid("", "bad_json", "the request's body holds more than one JSON value")
	}
	return nil
}

// jsonBody refuses a request whose body is not declared JSON: a form a
// page of another site could post without asking first (CORS lets
// "simple" requests through unasked).
func jsonBody(r *http.Request) error {
	if r.ContentLength == 0 && r.Header.Get("Content-Type") == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return &apiError{Status: http.StatusUnsupportedMediaType, Type: typeInvalid, Code: "unsupported_media_type",
			Message: fmt.Sprintf("Content-Type %q: the body must be JSON (Content-Type: application/json)", r.Header.Get("Content-Type"))}
	}
	return nil
}

// wantsStream reports whether a client asked for an event stream: Accept
// text/event-stream, or ?stream=true.
func wantsStream(r *http.Request) bool {
	if v := r.URL.Query().Get("stream"); v != "" {
		b, _ := strconv.ParseBool(v)
		return b
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, _ := mime.ParseMediaType(strings.TrimSpace(part)); mt == "text/event-stream" {
			return true
		}
	}
	return false
}

// worldItem is a world as GET /v1/worlds lists it.
type worldItem struct {
	World   string       `json:"world"`
	Records uint64       `json:"records"`
	Head    session.Head `json:"head"`
}

// list is the JSON of a list: {"object": "list", "data": [...]}, as
// OpenAI's API lists.
type list[T any] struct {
	Object string `json:"object"`
	Data   []T    `json:"data"`
}

func listOf[T any](data []T) list[T] {
	if data == nil {
		data = []T{}
	}
	return list[T]{Object: "list", Data: data}
}

// handleWorlds lists the worlds of the store the caller may reach.
func (s *Server) handleWorlds(w http.ResponseWriter, r *http.Request) {
	names, err := s.journalStore().Worlds(r.Context())
	if err != nil && len(names) == 0 {
		writeError(w, err)
		return
	}
	items := []worldItem{}
	for _, n := range names {
		if !allowed(r, n) {
			continue
		}
		h, err := s.journalStore().Head(r.Context(), n)
		if err != nil {
			continue
		}
		items = append(items, worldItem{World: n, Records: h.Seq, Head: session.Head{Seq: h.Seq, Hash: h.Hash.String()}})
	}
	writeJSON(w, http.StatusOK, listOf(items))
}

// createWorld is the body of POST /v1/worlds.
type createWorld struct {
	World string `json:"world"`
}

// handleCreateWorld makes a world (or opens the one there is).
func (s *Server) handleCreateWorld(w http.ResponseWriter, r *http.Request) {
	var body createWorld
	if err := decodeBody(r, &body); err != nil {
		writeError(w, err)
		return
	}
	if body.World == "" {
		writeError(w, invalid("world", "missing_world", `name the world: {"world": "NAME"}`))
		return
	}
	if err := journal.ValidateWorld(body.World); err != nil {
		writeError(w, invalid("world", "invalid_world", err.Error()))
		return
	}
	if err := s.allow(r, body.World); err != nil {
		writeError(w, err)
		return
	}
	before, err := s.journalStore().Head(r.Context(), body.World)
	if err != nil {
		writeError(w, err)
		return
	}
	aw, err := s.world(r.Context(), body.World, true)
	if err != nil {
		writeError(w, err)
		return
	}
	sum, err := s.summary(r.Context(), aw.Name())
	if err != nil {
		writeError(w, err)
		return
	}
	status := http.StatusOK
	if before.Seq == 0 {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/worlds/"+url.PathEscape(aw.Name()))
	}
	writeJSON(w, status, sum)
}

// summary is what GET /v1/worlds/{world} answers: `worlds --json`'s line.
func (s *Server) summary(ctx context.Context, name string) (*session.WorldSummary, error) {
	sum, err := session.Summarize(ctx, s.journalStore(), s.storage().CAS(), name)
	if err != nil {
		return nil, fmt.Errorf("world %s: %w", name, err)
	}
	if sum.Chats == nil {
		sum.Chats = []session.ChatSummary{}
	}
	return sum, nil
}

// worldOf returns the world the request's path names, open, once the
// caller is allowed it; create makes it if it has no record.
func (s *Server) worldOf(r *http.Request, create bool) (*agent.World, error) {
	name := r.PathValue("world")
	if err := s.allow(r, name); err != nil {
		return nil, err
	}
	return s.world(r.Context(), name, create)
}

// handleWorld answers a world's summary.
func (s *Server) handleWorld(w http.ResponseWriter, r *http.Request) {
	aw, err := s.worldOf(r, false)
	if err != nil {
		writeError(w, err)
		return
	}
	sum, err := s.summary(r.Context(), aw.Name())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sum)
}

// handleChats lists a world's chats.
func (s *Server) handleChats(w http.ResponseWriter, r *http.Request) {
	aw, err := s.worldOf(r, false)
	if err != nil {
		writeError(w, err)
		return
	}
	sum, err := s.summary(r.Context(), aw.Name())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, listOf(sum.Chats))
}

// createChat is the body of POST /v1/worlds/{world}/chats.
type createChat struct {
	// Chat is the new chat's id; "" makes one.
	Chat string `json:"chat"`
}

// handleCreateChat makes a chat (or answers the one there is).
func (s *Server) handleCreateChat(w http.ResponseWriter, r *http.Request) {
	var body createChat
	if err := decodeBody(r, &body); err != nil {
		writeError(w, err)
		return
	}
	aw, err := s.worldOf(r, true)
	if err != nil {
		writeError(w, err)
		return
	}
	id := body.Chat
	if id == "" {
		id = "chat-" + randomHex(8)
	}
	if err := checkChatID(id); err != nil {
		writeError(w, err)
		return
	}
	c := s.chat(aw, id)
	_, existed := c.State()
	if err := c.Create(r.Context()); err != nil {
		writeError(w, invalid("chat", "chat_not_created", err.Error()))
		return
	}
	status := http.StatusOK
	if !existed {
		status = http.StatusCreated
		w.Header().Set("Location", chatPath(aw.Name(), id))
	}
	writeJSON(w, status, s.chatView(r.Context(), aw, c))
}

// checkChatID refuses a chat id the API cannot name.
func checkChatID(id string) error {
	switch {
	case id == "":
		return invalid("chat", "invalid_chat", "a chat's id is not empty")
	case len(id) > 256:
		return invalid("chat", "invalid_chat", "a chat's id is at most 256 bytes")
	case strings.ContainsAny(id, "\x00\n\r"):
		return invalid("chat", "invalid_chat", "a chat's id holds no NUL or line break")
	}
	return nil
}

// chatPath is the path of a chat.
func chatPath(world, chat string) string {
	return "/v1/worlds/" + url.PathEscape(world) + "/chats/" + url.PathEscape(chat)
}

// randomHex is n random bytes, in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// chatJSON is a chat as GET /v1/worlds/{world}/chats/{chat} answers it.
type chatJSON struct {
	World string `json:"world"`
	Chat  string `json:"chat"`
	Model string `json:"model"`
	// Turns is the last turn's number (its request id): the chat's turns
	// are 1 to Turns.
	Turns uint64 `json:"turns"`
	// Turn is the turn under way, if one is.
	Turn *uint64 `json:"turn"`
	// Awaiting are the calls of the turn under way that wait for the
	// user's approval.
	Awaiting     []pendingJSON `json:"awaiting_approval"`
	Usage        agent.Usage   `json:"usage"`
	CostMicroUSD uint64        `json:"cost_microusd"`
	// CallsUsageUnknown and CallsCostUnknown count the chat's model calls
	// whose usage, or cost, is not known.
	CallsUsageUnknown uint64 `json:"calls_usage_unknown"`
	CallsCostUnknown  uint64 `json:"calls_cost_unknown"`
	// Messages are the user's messages and the model's texts that the
	// chat's state keeps (the newest; EntriesBase of the chat's timeline
	// were dropped before them).
	Messages []messageJSON `json:"messages"`
}

// pendingJSON is a call that waits for the user's approval.
type pendingJSON struct {
	RequestID uint64 `json:"request_id"`
	Round     uint64 `json:"round"`
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	// Arguments is the call's arguments, canonical JSON.
	Arguments string `json:"arguments"`
	// Deadline is when the call stops waiting and is denied (RFC 3339),
	// if the chats have an approval timeout.
	Deadline time.Time `json:"deadline,omitzero"`
}

// pendingOf is the calls ars as pendingJSON.
func pendingOf(ars []agent.ApprovalRequested) []pendingJSON {
	out := make([]pendingJSON, len(ars))
	for i, ar := range ars {
		out[i] = pendingJSON{RequestID: ar.RequestID, Round: ar.Round, CallID: ar.CallID, Tool: ar.Tool, Arguments: ar.Arguments, Deadline: ar.Deadline}
	}
	return out
}

// messageJSON is one message of a chat.
type messageJSON struct {
	Turn  uint64 `json:"turn"`
	Round uint64 `json:"round"`
	Role  string `json:"role"`
	Text  string `json:"text"`
}

// chatView is what GET of a chat answers.
func (s *Server) chatView(ctx context.Context, aw *agent.World, c *agent.Chat) chatJSON {
	v := chatJSON{World: aw.Name(), Chat: c.ID(), Model: c.Model(), Awaiting: []pendingJSON{}, Messages: []messageJSON{}}
	st, ok := c.State()
	if !ok {
		return v
	}
	if st.Settings != nil && st.Settings.Model != "" {
		v.Model = st.Settings.Model
	}
	v.Turns = st.LastRequestID
	if st.Turn != nil {
		n := st.Turn.RequestID
		v.Turn = &n
		v.Awaiting = pendingOf(c.Pending(ctx))
	}
	v.Usage = agent.Usage{Prompt: st.Usage.Prompt, Completion: st.Usage.Completion, Cached: st.Usage.Cached, CacheWrite: st.Usage.CacheWrite, Reasoning: st.Usage.Reasoning}
	v.CostMicroUSD = st.CostMicroUSD
	v.CallsUsageUnknown, v.CallsCostUnknown = st.UsageUnknown, st.CostUnknown
	for _, e := range st.Entries {
		switch e.Kind {
		case demiurge.EntryUser:
			v.Messages = append(v.Messages, messageJSON{Turn: e.RequestID, Round: e.Round, Role: "user", Text: e.Text})
		case demiurge.EntryAssistant:
			v.Messages = append(v.Messages, messageJSON{Turn: e.RequestID, Round: e.Round, Role: "assistant", Text: e.Text})
		}
	}
	return v
}

// chatOf returns the chat the request's path names, which must exist.
func (s *Server) chatOf(r *http.Request) (*agent.World, *agent.Chat, error) {
	aw, err := s.worldOf(r, false)
	if err != nil {
		return nil, nil, err
	}
	id := r.PathValue("chat")
	if err := checkChatID(id); err != nil {
		return nil, nil, err
	}
	c := s.chat(aw, id)
	if _, ok := c.State(); !ok {
		return nil, nil, notFound("chat_not_found", fmt.Sprintf("no chat %s in world %s", id, aw.Name()))
	}
	return aw, c, nil
}

// handleChat answers a chat.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	aw, c, err := s.chatOf(r)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.chatView(r.Context(), aw, c))
}

// sendMessage is the body of POST …/messages.
type sendMessage struct {
	Text string `json:"text"`
	// ToolChoice is this turn's tool choice: auto, none, required or a
	// tool's name.
	ToolChoice string `json:"tool_choice,omitempty"`
}

// handleSend sends the user's message and answers its turn: as an event
// stream (Accept: text/event-stream) from its first event to its
// TurnEnd, or as JSON once it ends or only waits for approval.
func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var body sendMessage
	if err := decodeBody(r, &body); err != nil {
		writeError(w, err)
		return
	}
	if strings.TrimSpace(body.Text) == "" {
		writeError(w, invalid("text", "empty_message", `the message is empty: {"text": "…"}`))
		return
	}
	var opts []agent.SendOption
	if body.ToolChoice != "" {
		tc, err := agent.ParseToolChoice(body.ToolChoice)
		if err != nil {
			writeError(w, invalid("tool_choice", "invalid_tool_choice", err.Error()))
			return
		}
		opts = append(opts, agent.WithToolChoice(tc))
	}
	aw, err := s.worldOf(r, true)
	if err != nil {
		writeError(w, err)
		return
	}
	id := r.PathValue("chat")
	if err := checkChatID(id); err != nil {
		writeError(w, err)
		return
	}
	l, err := s.send(r.Context(), aw, id, body.Text, opts...)
	if err != nil {
		if st, ok := s.chat(aw, id).State(); ok && st.Turn != nil && awaitingOnly(st) && errors.Is(err, errTurnUnderWay) {
			err = conflict("awaiting_approval", fmt.Sprintf("chat %s's turn %d waits for approval of a call: answer it (GET %s/approvals lists them) or stop the turn (POST %s/stop) first",
				id, st.Turn.RequestID, chatPath(aw.Name(), id), chatPath(aw.Name(), id)))
		}
		writeError(w, err)
		return
	}
	defer l.handOff() // whatever this request read of the turn, the rest runs
	key := turnKey{l.world, l.chat, l.request}
	if s.testStarted != nil {
		s.testStarted(key, start)
	}
	w.Header().Set("Demiurge-Turn", strconv.FormatUint(l.request, 10))
	w.Header().Set("Location", turnPath(key)+"/events")
	if wantsStream(r) {
		s.streamTurn(w, r, aw, key, position{}, true)
		return
	}
	s.answerTurn(w, r, aw, key, position{})
}

// turnPath is the path of a turn.
func turnPath(k turnKey) string {
	return chatPath(k.world, k.chat) + "/turns/" + strconv.FormatUint(k.request, 10)
}

// turnJSON is a turn's events as JSON.
type turnJSON struct {
	World  string            `json:"world"`
	Chat   string            `json:"chat"`
	Turn   uint64            `json:"turn"`
	Events []json.RawMessage `json:"events"`
}

// answerTurn answers the events of turn key after p as one JSON object,
// once the turn ends or only waits for approval.
func (s *Server) answerTurn(w http.ResponseWriter, r *http.Request, aw *agent.World, key turnKey, p position) {
	evs, err := s.collect(r.Context(), aw, key, p)
	if err != nil {
		writeError(w, err)
		return
	}
	out := turnJSON{World: key.world, Chat: key.chat, Turn: key.request, Events: make([]json.RawMessage, 0, len(evs))}
	for _, e := range evs {
		if _, ok := e.ev.(agent.TextDelta); ok {
			continue // the text is whole in the messages
		}
		out.Events = append(out.Events, e.data)
	}
	writeJSON(w, http.StatusOK, out)
}

// streamTurn streams the events of turn key after p as Server-Sent
// Events, each with its position as id and its type as event name, until
// the turn's TurnEnd. A stream that has nothing to send once the turn
// has ended answers 204 No Content, which tells a browser's EventSource
// not to come back; begun says the response begins at once (a message
// was just sent).
func (s *Server) streamTurn(w http.ResponseWriter, r *http.Request, aw *agent.World, key turnKey, p position, begun bool) {
	s.metrics.streamOpened()
	defer s.metrics.streamClosed()
	// A stream not begun begins within half a second (its first comment);
	// one begun beats every Heartbeat.
	first := 500 * time.Millisecond
	if begun {
		first = s.opts.Heartbeat
	}
	sw := s.newSSE(w, first)
	if begun {
		sw.start()
	}
	var written writtenEvents // the events of the batch written since the last flush
	err := s.events(r.Context(), aw, key, p, func(e logged) error {
		written.note(e)
		return sw.event(e.pos.String(), e.ev.Type(), e.data)
	}, func() error { return s.flushed(key, &written, sw.flush) }, true)
	started := sw.close()
	switch {
	case err == nil && !started:
		w.WriteHeader(http.StatusNoContent)
	case err == nil:
	case !started:
		writeError(w, err)
	case r.Context().Err() == nil && sw.err == nil:
		sw.fail(err)
	}
}

// handleTurnEvents streams a turn's events, from where the client's
// Last-Event-ID (or ?after=) says it stopped, until the turn ends.
func (s *Server) handleTurnEvents(w http.ResponseWriter, r *http.Request) {
	aw, c, err := s.chatOf(r)
	if err != nil {
		writeError(w, err)
		return
	}
	n, err := strconv.ParseUint(r.PathValue("turn"), 10, 64)
	if err != nil {
		writeError(w, invalid("turn", "invalid_turn", fmt.Sprintf("turn %q: want its number (1, 2, …)", r.PathValue("turn"))))
		return
	}
	if err := checkTurn(c, n); err != nil {
		writeError(w, err)
		return
	}
	p, err := lastEventID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	key := turnKey{aw.Name(), c.ID(), n}
	if wantsStream(r) || r.URL.Query().Get("stream") == "" {
		s.streamTurn(w, r, aw, key, p, false)
		return
	}
	s.answerTurn(w, r, aw, key, p)
}

// handleChatEvents streams the chat's turn under way, or its last, as
// handleTurnEvents does.
func (s *Server) handleChatEvents(w http.ResponseWriter, r *http.Request) {
	aw, c, err := s.chatOf(r)
	if err != nil {
		writeError(w, err)
		return
	}
	st, _ := c.State()
	n := st.LastRequestID
	if st.Turn != nil {
		n = st.Turn.RequestID
	}
	if n == 0 {
		w.WriteHeader(http.StatusNoContent) // no turn yet
		return
	}
	p, err := lastEventID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Demiurge-Turn", strconv.FormatUint(n, 10))
	s.streamTurn(w, r, aw, turnKey{aw.Name(), c.ID(), n}, p, false)
}

// lastEventID is where the client's stream stopped: Last-Event-ID, or
// ?after= for a client that cannot set it.
func lastEventID(r *http.Request) (position, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	p, err := parsePosition(v)
	if err != nil {
		return p, invalid("Last-Event-ID", "invalid_event_id", err.Error())
	}
	return p, nil
}

// handlePending lists the calls that wait for approval.
func (s *Server) handlePending(w http.ResponseWriter, r *http.Request) {
	_, c, err := s.chatOf(r)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, listOf(pendingOf(c.Pending(r.Context()))))
}

// decideCall is the body of POST …/approvals/{call}.
type decideCall struct {
	Approve *bool  `json:"approve"`
	Reason  string `json:"reason,omitempty"`
}

// decided is what a decision answers: the call, the decision, and the
// journal's head after the decision's step.
type decided struct {
	Call     pendingJSON  `json:"call"`
	Approved bool         `json:"approved"`
	Reason   string       `json:"reason,omitempty"`
	Head     session.Head `json:"head"`
}

// handleDecide journals the user's decision on a call that waits.
func (s *Server) handleDecide(w http.ResponseWriter, r *http.Request) {
	var body decideCall
	if err := decodeBody(r, &body); err != nil {
		writeError(w, err)
		return
	}
	if body.Approve == nil {
		writeError(w, invalid("approve", "missing_approve", `say the decision: {"approve": true} or {"approve": false, "reason": "…"}`))
		return
	}
	_, c, err := s.chatOf(r)
	if err != nil {
		writeError(w, err)
		return
	}
	call := r.PathValue("call")
	ar, head, err := c.Answer(r.Context(), call, agent.Decision{Approve: *body.Approve, Reason: body.Reason})
	if err != nil {
		if errors.Is(err, agent.ErrNotWaiting) {
			writeError(w, conflict("not_waiting", err.Error()))
			return
		}
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, decided{Call: pendingOf([]agent.ApprovalRequested{ar})[0], Approved: *body.Approve, Reason: body.Reason,
		Head: session.Head{Seq: head.Seq, Hash: head.Hash.String()}})
}

// ErrNoChat is returned (wrapped) by Decide for a world or chat the
// store does not have.
var ErrNoChat = errors.New("no such chat")

// Decide journals the user's decision on call of chat in world, which
// waits for approval, as POST …/approvals/{call} does: for a decision
// another process hands this one, which writes the store (demiurge
// approve beside a running serve). It returns the call decided and the
// journal's head after the decision's step. A call that does not wait
// is an error wrapping agent.ErrNotWaiting; a world or chat the store
// does not have, one wrapping ErrNoChat.
func (s *Server) Decide(ctx context.Context, world, chat, call string, d agent.Decision) (agent.ApprovalRequested, journal.Head, error) {
	aw, err := s.world(ctx, world, false)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			return agent.ApprovalRequested{}, journal.Head{}, fmt.Errorf("%w: %s", ErrNoChat, ae.Message)
		}
		return agent.ApprovalRequested{}, journal.Head{}, err
	}
	if checkChatID(chat) != nil {
		return agent.ApprovalRequested{}, journal.Head{}, fmt.Errorf("%w: no chat %q in world %s", ErrNoChat, chat, world)
	}
	c := s.chat(aw, chat)
	if _, ok := c.State(); !ok {
		return agent.ApprovalRequested{}, journal.Head{}, fmt.Errorf("%w: no chat %s in world %s", ErrNoChat, chat, world)
	}
	return c.Answer(ctx, call, d)
}

// stopTurn is the body of POST …/stop.
type stopTurn struct {
	Reason string `json:"reason,omitempty"`
}

// stopped is what a stop answers.
type stopped struct {
	Turn *uint64 `json:"turn"`
}

// handleStop stops the chat's turn under way, if any.
func (s *Server) handleStop(w http.ResponseWriter, r *http.Request) {
	var body stopTurn
	if err := decodeBody(r, &body); err != nil {
		writeError(w, err)
		return
	}
	_, c, err := s.chatOf(r)
	if err != nil {
		writeError(w, err)
		return
	}
	st, _ := c.State()
	if st.Turn == nil {
		writeJSON(w, http.StatusOK, stopped{})
		return
	}
	n := st.Turn.RequestID
	reason := body.Reason
	if reason == "" {
		reason = "stopped through the API"
	}
	if err := c.Stop(r.Context(), reason); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, stopped{Turn: &n})
}

// forkWorld is the body of POST /v1/worlds/{world}/fork.
type forkWorld struct {
	// At is the seq of the world's last record the fork keeps (a
	// TurnEnd's seq, say); 0 is the head.
	At uint64 `json:"at"`
	// World names the new world.
	World string `json:"world"`
}

// handleFork forks a world.
func (s *Server) handleFork(w http.ResponseWriter, r *http.Request) {
	var body forkWorld
	if err := decodeBody(r, &body); err != nil {
		writeError(w, err)
		return
	}
	aw, err := s.worldOf(r, false)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := journal.ValidateWorld(body.World); err != nil {
		writeError(w, invalid("world", "invalid_world", err.Error()))
		return
	}
	if err := s.allow(r, body.World); err != nil {
		writeError(w, err)
		return
	}
	if h, err := s.journalStore().Head(r.Context(), body.World); err != nil || h.Seq > 0 {
		writeError(w, conflict("world_exists", fmt.Sprintf("world %s exists: name a new one", body.World)))
		return
	}
	at := body.At
	if at == 0 {
		at = aw.Head().Seq
	}
	if _, err := world.Fork(r.Context(), world.ForkOptions{From: aw.Name(), Name: body.World, At: at, Reducers: s.registry(), Storage: s.storage()}); err != nil {
		var mse *world.MidStepError
		if errors.As(err, &mse) {
			writeError(w, invalid("at", "mid_step", err.Error()))
			return
		}
		writeError(w, err)
		return
	}
	sum, err := s.summary(r.Context(), body.World)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Location", "/v1/worlds/"+url.PathEscape(body.World))
	writeJSON(w, http.StatusCreated, sum)
}

// handleTrace answers the world's turns as `trace --json` reads them.
func (s *Server) handleTrace(w http.ResponseWriter, r *http.Request) {
	aw, err := s.worldOf(r, false)
	if err != nil {
		writeError(w, err)
		return
	}
	rd := session.NewReader(s.storage().CAS())
	if err := s.journalStore().Read(r.Context(), aw.Name(), 1, rd.Record); err != nil {
		writeError(w, err)
		return
	}
	chat := r.URL.Query().Get("chat")
	turns := []*session.Turn{}
	for _, t := range rd.Turns() {
		if chat == "" || t.Chat == chat {
			turns = append(turns, t)
		}
	}
	writeJSON(w, http.StatusOK, listOf(turns))
}

// cellJSON is one reducer cell's state, as `state --json` prints it.
type cellJSON struct {
	Reducer string          `json:"reducer"`
	Key     json.RawMessage `json:"key"`
	Ref     string          `json:"state_ref"`
	State   json.RawMessage `json:"state"`
}

// handleState answers the world's cells (?reducer=, ?key= pick some), or
// one chat's state.
func (s *Server) handleState(w http.ResponseWriter, r *http.Request) {
	aw, err := s.worldOf(r, false)
	if err != nil {
		writeError(w, err)
		return
	}
	reducer, key := r.URL.Query().Get("reducer"), r.URL.Query().Get("key")
	if chat := r.PathValue("chat"); chat != "" {
		if _, c, err := s.chatOf(r); err != nil {
			writeError(w, err)
			return
		} else {
			reducer, key = aw.Module(), strconv.Quote(c.ID())
		}
	}
	cells, err := s.cells(r.Context(), aw.Name(), reducer, key)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, listOf(cells))
}

// cells reads world name's cells from its journal: each cell's newest
// State record, its state from the store, as the schema's JSON.
func (s *Server) cells(ctx context.Context, name, reducer, key string) ([]cellJSON, error) {
	type cell struct {
		reducer string
		key     schema.Value
		ref     cas.Ref
	}
	found := map[string]*cell{}
	err := s.journalStore().Read(ctx, name, 1, func(rec journal.Record) error {
		if rec.Kind != world.KindState {
			return nil
		}
		sr, err := world.DecodeState(rec)
		if err != nil {
			return err
		}
		if reducer != "" && sr.Reducer != reducer || key != "" && string(schema.ValueJSON(sr.Key)) != key {
			return nil
		}
		kb, _ := schema.EncodeBody(sr.Key)
		id := sr.Reducer + "\x00" + string(kb)
		if !sr.State.Valid() {
			delete(found, id)
			return nil
		}
		found[id] = &cell{sr.Reducer, sr.Key, sr.State}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("world %s: %w", name, err)
	}
	ids := make([]string, 0, len(found))
	for id := range found {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]cellJSON, 0, len(ids))
	for _, id := range ids {
		c := found[id]
		b, err := s.storage().CAS().Get(ctx, c.ref)
		if err != nil {
			return nil, fmt.Errorf("state of %s: %w", c.reducer, err)
		}
		v, err := schema.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("state of %s: %w", c.reducer, err)
		}
		js := schema.ValueJSON(v)
		if mod, ok := s.cat.Module(c.reducer); ok && mod.Reducer != nil {
			if typed, err := schema.MarshalJSON(s.cat, schema.RefType(mod.Reducer.State), v); err == nil {
				js = typed
			}
		}
		out = append(out, cellJSON{Reducer: c.reducer, Key: schema.ValueJSON(c.key), Ref: c.ref.String(), State: js})
	}
	return out, nil
}
