package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cluster"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// Chat is one conversation of a world, named by its id. It is a cheap
// handle: the chat is created in the world by its first message.
type Chat struct {
	w        *World
	id       string
	settings map[string]any
	await    bool // its streams wait through approvals (AwaitApproval)
	// imported is the state of the chat that an older chat module left,
	// which the turn starting took up (see importOlder), until the turn's
	// stream reads it as where it starts from.
	imported *demiurge.StateView
}

// A ChatOption configures a chat's settings (World.Chat).
type ChatOption func(*chatConfig)

// chatConfig is what a ChatOption changes: the settings of the chat, in
// the world that holds it.
type chatConfig struct {
	w     *World
	s     map[string]any
	await bool // of the handle, not a setting: it does not reach the world
}

// AllowTools limits the tools the chat's model may call to those named
// (it is still offered every tool; a call of another is refused with an
// error it can act on). No names: every tool. A name that is no tool the
// model is offered (World.Tools) fails the chat's next Send.
func AllowTools(names ...string) ChatOption {
	return func(c *chatConfig) {
		if len(names) == 0 {
			delete(c.s, "tools_allow")
			return
		}
		c.s["tools_allow"] = append([]string(nil), names...)
	}
}

// UseModel makes the chat talk to the model name, through the world's
// provider (the same base URL and key): what demiurge knows of it (its
// context window) goes into the chat's settings. The change reaches the
// world with the chat's next message. An empty name is the world's model
// (WithModel).
func UseModel(name string) ChatOption {
	return func(c *chatConfig) {
		if name == "" {
			name = c.w.model.name // the world's (a flag left empty, say)
		}
		c.s["model"] = name
		m := c.w.resolveModel(name)
		if c.w.module == demiurge.ModuleNameV1 { // Chat@1's settings have no window
			return
		}
		delete(c.s, "context_window")
		delete(c.s, "compact_at")
		delete(c.s, "on_overflow")
		if m.ContextWindow > 0 {
			c.s["context_window"] = m.ContextWindow
		}
		if m.CompactAt > 0 {
			c.s["compact_at"] = m.CompactAt
		}
		if m.OnOverflow != "" {
			c.s["on_overflow"] = m.OnOverflow
		}
	}
}

// DefaultToolChoice sets the tool choice of the chat's turns: Required and
// a named Tool apply to each turn's first round, then Auto (so that a model
// made to call a tool can answer after it).
func DefaultToolChoice(tc ToolChoice) ChatOption {
	return func(c *chatConfig) { c.s["tool_choice"] = tc.value() }
}

// ToolChoice says whether, and which, tool the model must call.
type ToolChoice struct {
	kind string
	name string
}

// The tool choices.
var (
	// ToolChoiceAuto lets the model choose (the default).
	ToolChoiceAuto = ToolChoice{kind: "Auto"}
	// ToolChoiceNone lets it call no tool.
	ToolChoiceNone = ToolChoice{kind: "None"}
	// ToolChoiceRequired makes it call some tool.
	ToolChoiceRequired = ToolChoice{kind: "Required"}
)

// ToolChoiceTool makes the model call the tool name.
func ToolChoiceTool(name string) ToolChoice { return ToolChoice{kind: "Tool", name: name} }

// ParseToolChoice reads a tool choice: auto, none, required, or the name
// of a tool.
func ParseToolChoice(s string) (ToolChoice, error) {
	switch strings.ToLower(s) {
	case "auto", "":
		return ToolChoiceAuto, nil
	case "none":
		return ToolChoiceNone, nil
	case "required":
		return ToolChoiceRequired, nil
	}
	if !toolName().MatchString(s) {
		return ToolChoice{}, fmt.Errorf("tool choice %q: want auto, none, required or a tool's name", s)
	}
	return ToolChoiceTool(s), nil
}

func (tc ToolChoice) String() string {
	if tc.kind == "Tool" {
		return tc.name
	}
	return strings.ToLower(tc.kind)
}

// value is the choice as sugar JSON of sys/LlmToolChoice@1.
func (tc ToolChoice) value() any {
	if tc.kind == "Tool" {
		return map[string]any{"Tool": map[string]any{"name": tc.name}}
	}
	return map[string]any{tc.kind: map[string]any{}}
}

// Chat returns the chat id of the world, with the settings the world was
// opened with and opts. The id is any text but the empty one, which the
// chat's methods refuse.
func (w *World) Chat(id string, opts ...ChatOption) *Chat {
	s := make(map[string]any, len(w.base)+2)
	for k, v := range w.base {
		s[k] = v
	}
	cfg := &chatConfig{w: w, s: s}
	for _, o := range opts {
		o(cfg)
	}
	return &Chat{w: w, id: id, settings: s, await: cfg.await}
}

// ID returns the chat's id.
func (c *Chat) ID() string { return c.id }

// With returns the chat with opts applied to its settings, which reach the
// world with its next message.
func (c *Chat) With(opts ...ChatOption) *Chat {
	s := make(map[string]any, len(c.settings))
	for k, v := range c.settings {
		s[k] = v
	}
	cfg := &chatConfig{w: c.w, s: s, await: c.await}
	for _, o := range opts {
		o(cfg)
	}
	return &Chat{w: c.w, id: c.id, settings: s, await: cfg.await}
}

// Model returns the name of the model the chat talks to.
func (c *Chat) Model() string { m, _ := c.settings["model"].(string); return m }

// Follow streams the turn the chat has under way, as Send does, until it
// ends: a turn a process left running when it stopped (its effects run
// again when the world reopens) or one another goroutine started. With no
// turn under way it yields nothing. It streams what the turn does from
// now on: what it did before (its earlier model calls, a call whose
// result is still to come) is in the journal, not in the stream; TurnEnd's
// usage and cost are still the whole turn's, read back from the journal.
// A turn that only waits for approval ends the stream at once with
// OutcomeAwaitingApproval, its Seq the journal's head, unless the chat
// awaits approval (AwaitApproval): then the stream waits for the
// decisions and goes on with the turn.
func (c *Chat) Follow(ctx context.Context) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		st, ok := c.State()
		if !ok || st.Turn == nil {
			return
		}
		id := st.Turn.RequestID
		c.turn(ctx, yield, func(context.Context) (uint64, error) { return id, nil })
	}
}

// State returns the chat's state, if the chat exists. A chat that the
// world's older chat module left (a world made with Chat@2 whose manifest
// moved to Chat@3), which its next turn takes up (see importOlder), reads
// as Chat@3 will take it up: its turns, usage and settings as Chat@2 left
// them, a turn it was running stopped.
func (c *Chat) State() (*demiurge.StateView, bool) {
	v, _, ok := c.w.host.State(c.w.module, c.id)
	if !ok {
		return c.olderView()
	}
	var st demiurge.StateView
	if err := reducer.ToGo(v, &st); err != nil {
		return nil, false
	}
	return &st, true
}

// A SendOption configures one message.
type SendOption func(map[string]any)

// WithToolChoice sets the tool choice of this message's turn (its first
// round), whatever the chat's.
func WithToolChoice(tc ToolChoice) SendOption {
	return func(m map[string]any) { m["tool_choice"] = tc.value() }
}

// ErrBusy is returned when a chat is sent a message while a turn of this
// process is under way in it.
var ErrBusy = errors.New("the chat has a turn under way")

// errNoChatID is the error of a chat whose id is empty: the world keeps
// such a chat's state under no key, where no turn of it can be followed.
var errNoChatID = errors.New(`a chat's id is not empty: name the chat, as in World.Chat("main")`)

// Send sends the user's message text and streams the turn it starts: the
// model's text as it comes (TextDelta), the model calls (ModelCall), the
// tool calls and their results, the messages, and last TurnEnd, once the
// turn's records are committed. Every event is journaled before it is
// yielded (TextDelta excepted). Once TurnEnd is yielded the chat takes
// the next message, though the stream has yet to return.
//
// Stopping early stops the turn: if ctx is cancelled, or the loop breaks,
// the chat records that the user stopped it (a Stop event: its calls
// that are still running are answered "not run", and an answer that comes
// later is ignored), so that the next run does not take it up again.
// After a cancelled ctx the last two yields are the TurnEnd of the stopped
// turn and ctx's error. An error of the world (its store failing) is
// yielded and ends the stream.
func (c *Chat) Send(ctx context.Context, text string, opts ...SendOption) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		msg, err := json.Marshal(map[string]string{"role": "user", "content": text})
		if err != nil {
			yield(nil, err)
			return
		}
		if len(msg) > MaxMessageBytes {
			yield(nil, fmt.Errorf("chat %s: %w: it is %s (%d bytes as sent), and a model call is sent at most %d KiB (%d bytes) of one message: the model would read only its start; send a shorter one, or put the text in a file of the workspace (demiurge workspace import) and ask the model to read it",
				c.id, ErrMessageTooLarge, byteSize(len(msg)), len(msg), MaxMessageBytes>>10, MaxMessageBytes))
			return
		}
		sent := map[string]any{}
		for _, o := range opts {
			o(sent)
		}
		c.turn(ctx, yield, c.begin(sent["tool_choice"], func(ctx context.Context, id uint64, settings map[string]any) error {
			ref, err := c.w.st.CAS().Put(ctx, msg)
			if err != nil {
				return err
			}
			user := map[string]any{"chat_id": c.id, "request_id": id, "text": text, "message_ref": ref.String()}
			if settings != nil {
				user["settings"] = settings
			}
			for _, o := range opts {
				o(user)
			}
			if err := c.send(ctx, "User", user); err != nil {
				return err
			}
			return c.checkTaken(id, ref)
		}))
	}
}

// MaxMessageBytes bounds a user message, as the JSON item a model call is
// sent ({"role": "user", "content": …}): the model adapter sends no more
// of one transcript item (llm.DefaultMaxItemBytes), so the model would
// read only the start of a longer message.
const MaxMessageBytes = llm.DefaultMaxItemBytes

// ErrMessageTooLarge is returned (wrapped) by Send for a message over
// MaxMessageBytes: it is refused before anything is journaled, and the
// chat goes on as it was.
var ErrMessageTooLarge = errors.New("message not sent: too large")

// stopReason is the reason a turn stopped, as the chat's stop entry says
// it, and, when it stopped because the next request was past the model's
// window, how to go on. A chat of a manifest from before item_bytes
// counts a message whole though no more than MaxMessageBytes of it is
// sent: one pasted before messages were refused over that (an older
// demiurge journaled it) keeps every later turn past the window, /compact
// included, until the manifest has item_bytes; then the next message
// recounts the chat (see demiurge.Settings.ItemBytes).
func (c *Chat) stopReason(text string) string {
	r := demiurge.StopText(text)
	if !strings.Contains(r, "the model's window of") {
		return r
	}
	if c.w.module == demiurge.ModuleName && !hasField(c.w.cat, "demiurge/Settings@2", "item_bytes") {
		return r + fmt.Sprintf(". This chat counts each message whole: its manifest %s predates item_bytes, and a long message from before demiurge refused those over %d KiB keeps it past the window."+
			` To go on, add "item_bytes": {"option": {"nat": {}}} to the fields of demiurge/Settings@2 in the manifest's schemas (as examples/demiurge has), and send a message: the chat then counts no more of a message than the %d KiB the model is sent`,
			c.w.manifest, MaxMessageBytes>>10, MaxMessageBytes>>10)
	}
	if strings.Contains(r, "too large to compact") {
		return r + ". To go on, start a new chat (--chat NAME), or use a model with a larger window (--model)"
	}
	return r + ". To go on: /compact summarizes the earlier rounds; or start a new chat (--chat NAME), or use a model with a larger window (--model)"
}

// byteSize says n bytes in KiB or MiB.
func byteSize(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}

// ErrRequestTaken is returned (wrapped) by Send when another client (a
// run beside this one on a PostgreSQL store) sent the chat a message
// with the same request id first: the chat took that one, and this one
// was not taken.
var ErrRequestTaken = errors.New("another message took its place")

// checkTaken returns an error wrapping ErrRequestTaken if the chat's
// message of request id, as the world now holds it, is not ref: the
// world took another client's message for id and ignored this one (as a
// retry). Not to be confused with an answer to it, the turn is not
// followed.
func (c *Chat) checkTaken(id uint64, ref cas.Ref) error {
	st, ok := c.State()
	if !ok {
		return nil
	}
	for _, e := range st.Entries {
		if e.RequestID == id && e.Kind == demiurge.EntryUser && e.Ref != nil && *e.Ref != ref {
			return fmt.Errorf("message not taken: %w (request %d of chat %s went to another client's message, sent at the same time; send this one again)",
				ErrRequestTaken, id, c.id)
		}
	}
	return nil
}

// ErrNoChat is returned (wrapped) for a chat the world does not have yet
// where only an existing one will do.
var ErrNoChat = errors.New("no such chat")

// Compact asks the chat to summarize the oldest part of its transcript now
// (not a Chat@1 world's chat), and streams that turn as Send does. A chat
// the world does not have yet is not created: the error wraps ErrNoChat.
func (c *Chat) Compact(ctx context.Context) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if c.w.module == demiurge.ModuleNameV1 {
			yield(nil, fmt.Errorf("this world's chat (%s) cannot compact; %s can", c.w.module, demiurge.ModuleName))
			return
		}
		if _, ok := c.State(); !ok && c.id != "" {
			yield(nil, fmt.Errorf("chat %s: %w: it has no transcript to compact", c.id, ErrNoChat))
			return
		}
		c.turn(ctx, yield, c.begin(nil, func(ctx context.Context, id uint64, _ map[string]any) error {
			// Changed settings go with the next message.
			return c.send(ctx, "Compact", map[string]any{"chat_id": c.id, "request_id": id})
		}))
	}
}

// Stop stops the chat's turn under way, if any, for reason: the chat
// records it (see Send). It is for another goroutine than the one reading
// the turn's events, which then ends.
func (c *Chat) Stop(ctx context.Context, reason string) error {
	st, ok := c.State()
	if !ok || st.Turn == nil {
		return nil
	}
	_ = c.stop(ctx, st.Turn.RequestID, reason) // a stop not journaled waits in the inbox
	return ctx.Err()
}

// StopTurn stops the chat's turn under way, if any, for reason, and
// streams its end as Follow does: the calls it answers "not run", the
// GuardStop, and its TurnEnd (OutcomeStopped). Calls that wait for
// approval are not asked for: they are answered "not run" with the rest.
// It is for a caller that sends the next message only after saying how
// the last turn ended (Send stops the turn too, but its stream is the new
// turn's). With no turn under way it yields nothing.
func (c *Chat) StopTurn(ctx context.Context, reason string) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		st, ok := c.State()
		if !ok || st.Turn == nil {
			return
		}
		id := st.Turn.RequestID
		c.turnStopping(ctx, yield, func(context.Context) (uint64, error) { return id, nil }, reason)
	}
}

// send sends the chat an event of its module's event schema.
func (c *Chat) send(ctx context.Context, tag string, value map[string]any) error {
	js, err := json.Marshal(map[string]any{tag: value})
	if err != nil {
		return err
	}
	_, err = c.w.host.SendJSON(ctx, c.w.event, js)
	return err
}

// start creates the chat if it does not exist, and returns the request id
// of its next turn and, if the chat's settings are not c's, c's (to go
// with the next message).
func (c *Chat) start(ctx context.Context) (uint64, map[string]any, error) {
	v, _, ok := c.w.host.State(c.w.module, c.id)
	if !ok {
		old, st, err := c.importOlder(ctx)
		if err != nil {
			return 0, nil, err
		}
		if st == nil {
			if err := c.send(ctx, "Created", map[string]any{"chat_id": c.id, "title": c.id, "settings": c.settings}); err != nil {
				return 0, nil, err
			}
			return 1, nil, nil
		}
		c.imported, v = st, old
	}
	var st demiurge.StateView
	if err := reducer.ToGo(v, &st); err != nil {
		return 0, nil, fmt.Errorf("chat %s: read its state: %w", c.id, err)
	}
	changed, err := c.settingsChanged(v)
	if err != nil {
		return 0, nil, err
	}
	if changed {
		return st.LastRequestID + 1, c.settings, nil
	}
	return st.LastRequestID + 1, nil, nil
}

// importOlder takes up the chat as the world's older chat module left it,
// when the world's manifest moved from Chat@2 to Chat@3 since the chat
// last ran: it sends the chat an Import of that module's newest state of
// the chat (the chat goes on from there, its transcript, usage and
// settings as they were), and returns that state. It returns nil when
// there is none to take up (or the manifest's chat event has no Import:
// the chat then starts anew).
func (c *Chat) importOlder(ctx context.Context) (schema.Value, *demiurge.StateView, error) {
	v, ref, ok := c.older()
	if !ok {
		return nil, nil, nil
	}
	var st demiurge.StateView
	if err := reducer.ToGo(v, &st); err != nil || st.Settings == nil {
		return nil, nil, nil
	}
	if err := c.send(ctx, "Import", map[string]any{"chat_id": c.id, "module": demiurge.ModuleNameV2, "state": ref.String()}); err != nil {
		return nil, nil, err
	}
	c.w.c.log.Info("a chat of the world's older chat module goes on under its new one", "chat", c.id, "from", demiurge.ModuleNameV2, "to", demiurge.ModuleName)
	return v, &st, nil
}

// older returns the newest state of the chat that the world's older chat
// module left, and its ref, when a turn of the chat, which has no state
// under the world's module, would take it up (see importOlder).
func (c *Chat) older() (schema.Value, cas.Ref, bool) {
	if !c.w.importsOlder {
		return nil, cas.Ref{}, false
	}
	v, ref, ok := c.w.host.State(demiurge.ModuleNameV2, c.id)
	if !ok || !ref.Valid() {
		return nil, cas.Ref{}, false
	}
	return v, ref, true
}

// olderView returns the chat's state as its next turn will take it up
// from the world's older chat module (see older), for State: what the
// Import will make of it (demiurge.ImportedView), computed, not
// journaled. A state the Import would refuse reads as none, as the chat
// then starts anew.
func (c *Chat) olderView() (*demiurge.StateView, bool) {
	_, ref, ok := c.older()
	if !ok {
		return nil, false
	}
	st, err := demiurge.ImportedView(c.w.st.CAS(), demiurge.ChatImport{ChatID: c.id, Module: demiurge.ModuleNameV2, State: ref})
	if err != nil {
		return nil, false
	}
	v, err := reducer.FromGo(st)
	if err != nil {
		return nil, false
	}
	var view demiurge.StateView
	if err := reducer.ToGo(v, &view); err != nil {
		return nil, false
	}
	return &view, true
}

// chatModule reports whether reducer is the module whose state records
// are the chat's: the world's chat module, or the older one whose state
// the chat's turns take up (its turns before are that module's).
func (w *World) chatModule(reducer string) bool {
	return reducer == w.module || w.importsOlder && reducer == demiurge.ModuleNameV2
}

// chatEvent reports whether name is the schema of the chat's events: the
// world's chat event, or the older module's whose chats the world's
// takes up (see chatModule).
func (w *World) chatEvent(name string) bool {
	return name == w.event || w.importsOlder && name == demiurge.EventSchemaV2
}

// settingsChanged reports whether the chat's settings in its state v are
// not c's: the tools (an MCP server was added, say), the model or a limit
// changed since the chat began.
func (c *Chat) settingsChanged(v schema.Value) (bool, error) {
	js, err := json.Marshal(c.settings)
	if err != nil {
		return false, err
	}
	name := "demiurge/Settings@2"
	if c.w.module == demiurge.ModuleNameV1 {
		name = "demiurge/Settings@1"
	}
	want, err := schema.NormalizeJSON(c.w.cat, schema.RefType(name), js)
	if err != nil {
		return false, fmt.Errorf("the chat's settings: %w", err)
	}
	return !schema.Equal(schema.FieldPath(v, "settings"), want), nil
}

// checkToolNames reports a tool that RequireApproval or AllowTools names
// and the model is not offered: a misspelt name would leave the tool it
// meant unguarded (or every tool refused), silently.
func (c *Chat) checkToolNames(choice any) error {
	offered := map[string]bool{}
	for _, t := range c.w.kit.specs {
		offered[t.Name] = true
	}
	offeredNames := func() string {
		have := make([]string, 0, len(offered))
		for name := range offered {
			have = append(have, name)
		}
		slices.Sort(have)
		return strings.Join(have, ", ")
	}
	for _, o := range []struct {
		option string
		v      any
	}{{"DefaultToolChoice", c.settings["tool_choice"]}, {"WithToolChoice", choice}} {
		if n, ok := toolChoiceName(o.v); ok && !offered[n] {
			return fmt.Errorf("%s names %q, which is no tool the model is offered (%s); name one of those", o.option, n, offeredNames())
		}
	}
	for _, o := range []struct{ key, option string }{{"require_approval", "RequireApproval"}, {"tools_allow", "AllowTools"}} {
		names, _ := c.settings[o.key].([]string)
		for _, n := range names {
			if offered[n] || n == "*" && o.key == "require_approval" {
				continue
			}
			return fmt.Errorf("%s names %q, which is no tool the model is offered (%s); name one of those", o.option, n, offeredNames())
		}
	}
	return nil
}

// toolChoiceName returns the tool a tool choice (as value makes it) names,
// if it names one.
func toolChoiceName(v any) (string, bool) {
	m, _ := v.(map[string]any)
	t, _ := m["Tool"].(map[string]any)
	n, ok := t["name"].(string)
	return n, ok
}

// begin returns the start of a new turn: the chat is created if need be,
// and send sends what starts the turn, given its request id and the
// settings to send with it (if they changed).
func (c *Chat) begin(choice any, send func(ctx context.Context, id uint64, settings map[string]any) error) func(context.Context) (uint64, error) {
	return func(ctx context.Context) (uint64, error) {
		if err := c.checkToolNames(choice); err != nil {
			return 0, err
		}
		id, settings, err := c.start(ctx)
		if err != nil {
			return 0, err
		}
		return id, send(ctx, id, settings)
	}
}

// turn runs one turn: start starts it (or finds it) and returns its
// request id, and the turn's events are yielded until it ends.
func (c *Chat) turn(ctx context.Context, yield func(Event, error) bool, start func(ctx context.Context) (uint64, error)) {
	c.turnStopping(ctx, yield, start, "")
}

// turnStopping is turn; with a stopReason, the turn is stopped for it as
// the stream begins (StopTurn), its calls that wait not asked for.
func (c *Chat) turnStopping(ctx context.Context, yield func(Event, error) bool, start func(ctx context.Context) (uint64, error), stopReason string) {
	w := c.w
	if c.id == "" {
		yield(nil, errNoChatID)
		return
	}
	w.mu.Lock()
	switch {
	case w.closed:
		w.mu.Unlock()
		yield(nil, world.ErrClosed)
		return
	case w.busy[c.id]:
		w.mu.Unlock()
		yield(nil, fmt.Errorf("chat %s: %w", c.id, ErrBusy))
		return
	}
	w.busy[c.id] = true
	f := newFollower(c.id)
	w.follows[f] = struct{}{}
	w.mu.Unlock()
	free := sync.OnceFunc(func() {
		w.mu.Lock()
		delete(w.follows, f)
		delete(w.busy, c.id)
		w.mu.Unlock()
	})
	defer free()
	// The chat is free for the next message before the caller has the
	// TurnEnd, not once the stream returns after it: a caller that pulls
	// the stream (iter.Pull2), or hands its events to another goroutine,
	// may tell its user the turn ended, and take the next message, before
	// it lets the stream return. Nothing of the turn is read after its
	// TurnEnd.
	yieldEvent := yield
	yield = func(e Event, err error) bool {
		if _, end := e.(TurnEnd); end {
			free()
		}
		return yieldEvent(e, err)
	}
	if hook := testHookRegistered.Load(); hook != nil {
		(*hook)(c)
	}
	tr := &turnReader{c: c, callAt: map[string]time.Time{}, asked: map[askKey]bool{}}
	if st, ok := c.State(); ok {
		_, tr.shown = st.Since(0)
		tr.prev = st
	}
	id, err := start(ctx)
	if hook := testHookStarted.Load(); hook != nil {
		(*hook)(c)
	}
	if st := c.imported; st != nil {
		// The chat goes on from an older module's state: what it held
		// then is not this turn's.
		_, tr.shown = st.Since(0)
		tr.prev, c.imported = st, nil
	}
	tr.id = id
	tr.seq = w.host.Head().Seq // a followed turn that only waits reads no record
	if err != nil && ctx.Err() != nil && errors.Is(err, cluster.ErrNotJournaled) {
		reason := context.Cause(ctx).Error()
		if id == 0 {
			// Stopped while the chat's creation waited in the remote
			// world's inbox: the message was not sent.
			if yield(GuardStop{Seq: tr.seq, Reason: fmt.Sprintf("the user stopped the turn (%s) before its message was sent: no worker journaled the chat's creation (none may hold world %s); it waits in the world's inbox", reason, w.Name())}, nil) &&
				yield(TurnEnd{Seq: tr.seq, Outcome: OutcomeStopped}, nil) {
				yield(nil, ctx.Err())
			}
			return
		}
		// Stopped before any worker journaled the message (none holds
		// the remote world): the message waits in the inbox, and the
		// stop goes after it, so that the turn never runs.
		if serr := c.stop(ctx, id, reason); serr == nil || errors.Is(serr, cluster.ErrNotJournaled) {
			if yield(queuedStop(tr.seq, reason, w.Name()), nil) && yield(TurnEnd{Seq: tr.seq, RequestID: id, Outcome: OutcomeStopped}, nil) {
				yield(nil, ctx.Err())
			}
			return
		}
	}
	if err != nil {
		yield(nil, fmt.Errorf("chat %s: %w", c.id, err))
		return
	}
	tr.start = tr.prev
	resumed := tr.prev != nil && tr.prev.LastRequestID >= id // a turn this stream did not start
	var past *turnWindow
	if resumed {
		// Its TurnEnd counts the whole turn's usage and cost, from the
		// chat's state before the turn, in the journal.
		var before *demiurge.StateView
		past, err = c.turnWindow(ctx, id)
		if err == nil {
			before, err = past.start(ctx)
		}
		if err == nil {
			tr.calls, err = past.calls(ctx, id)
		}
		if err != nil {
			past = nil
			w.c.log.Warn("the turn's usage before this stream is not counted", "chat", c.id, "request", id, "err", err)
		} else {
			tr.start = cmp.Or(before, &demiurge.StateView{})
		}
	}
	// Calls that already wait for the user (a turn followed or resumed).
	// A turn this stream starts has none: its records, all of them
	// after the follower was registered, bring its calls, in order.
	if resumed {
		tr.asks = c.Pending(ctx)
		for _, ar := range tr.asks {
			tr.asked[askKey{ar.Round, ar.CallID}] = true
		}
	}
	st, ok := c.State()
	if ok {
		tr.awaiting = awaitingOf(st, id)
	}
	// A turn that ended before this follower was there (Follow of a turn
	// the reopened world finished at once): nothing more will come; its
	// end, and the entries the state still holds, are read from the state.
	ended := ok && st.LastRequestID >= id && (st.Turn == nil || st.Turn.RequestID != id)
	if ended && len(f.peek()) == 0 {
		tr.shown = st.EntriesBase
		if !resumed || tr.start == tr.prev {
			tr.start = st // its usage is not known from here
		}
		for _, e := range tr.state(ctx, w.host.Head().Seq, st, time.Time{}) {
			if _, isCall := e.(ModelCall); isCall {
				continue // the usage of calls before is not this turn's
			}
			if !yield(e, nil) {
				return
			}
		}
		return
	}
	if c.await && stopReason == "" {
		// The calls that already wait, which the stream waits for,
		// with the seqs of the steps that asked.
		for _, ar := range tr.asks {
			ar.Seq = tr.seq
			if past != nil {
				ar.Seq = cmp.Or(past.askedAt(ctx, id, ar.CallID), tr.seq)
			}
			if !yield(ar, nil) {
				if !tr.awaiting {
					_ = c.stop(ctx, id, "the caller stopped reading the turn")
				}
				c.armPending(ctx)
				return
			}
		}
	}
	gone := false        // the caller stopped reading
	left := false        // it stopped while the turn only waited (AwaitApproval): the turn waits on
	var stopAt time.Time // when this side asked the chat to stop the turn
	queued := ""         // the stop waits in a remote world's inbox, for this reason
	stop := func(reason string) {
		if stopAt.IsZero() {
			if errors.Is(c.stop(ctx, id, reason), cluster.ErrNotJournaled) {
				queued = reason
			}
			stopAt = time.Now()
		}
	}
	emit := func(e Event) {
		if !gone && !yield(e, nil) {
			gone = true
			if _, end := e.(TurnEnd); end {
				// The stream ends here anyway: the turn ended (or only
				// waits for approval, and waits on, or its stop is
				// queued). Nothing to stop.
				return
			}
			if c.await && tr.awaiting {
				left = true
				return
			}
			stop("the caller stopped reading the turn")
		}
	}
	fail := func(err error) {
		if !gone {
			yield(nil, err)
		}
	}
	if stopReason != "" {
		stop(stopReason)
	}
	ctxDone := ctx.Done()
	every := 250 * time.Millisecond
	if w.remote != nil {
		every = cluster.DefaultFollow // the journal is read as it grows
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	waiting := waitHookOf(ctx)
	for {
		for _, it := range f.take() {
			if it.event != nil {
				// A model call of another turn (one stopped while its call
				// was in flight, whose call runs again when the world
				// reopens) streams to nobody: its answer is dropped.
				if it.request == 0 || it.request == tr.id {
					if d, ok := it.event.(TextDelta); ok && !tr.stream(d) {
						continue
					}
					emit(it.event)
				}
				continue
			}
			// Reading records takes a while (the blobs they name): what
			// was yielded goes out first.
			waiting()
			evs, err := tr.records(it.recs)
			for _, e := range evs {
				if rest, ok := tr.rest(e); ok {
					emit(rest)
				}
				if ar, ok := e.(ApprovalRequested); ok {
					k := askKey{ar.Round, ar.CallID}
					if tr.asked[k] {
						// Committed between the follower's start and the
						// read of the calls that wait: it is in asks
						// already (and was yielded, if the chat awaits).
						if c.await {
							continue
						}
					} else {
						tr.asked[k] = true
						tr.asks = append(tr.asks, ar)
					}
				}
				emit(e)
			}
			if left {
				c.armPending(ctx) // the calls it saw wait, which no ask below reached
				return
			}
			if err != nil {
				fail(err)
				return
			}
			if tr.ended {
				if ctx.Err() != nil {
					fail(ctx.Err())
				}
				return
			}
		}
		// Every event in hand is yielded: the stream may wait from here
		// (for an approver, for the world's next records). Between, the
		// text deltas and the events of one batch of records that came
		// together are yielded one after another, with no wait between.
		waiting()
		if len(tr.asks) > 0 && stopAt.IsZero() {
			// Calls wait for the user: an approver answers them, or the
			// stream ends and the turn waits in the world.
			asks := tr.asks
			tr.asks = nil
			for _, ar := range asks {
				d, ok, expired := c.decideBy(ctx, ar)
				if !c.waits(ar) {
					continue // decided meanwhile (Chat.Answer, another process): the world has it
				}
				if expired {
					c.w.armTimeout(c, ar) // past its deadline: fires at once
					continue
				}
				if !ok {
					tr.waitingAsks = true
					c.w.armTimeout(c, ar) // the world times it out while this process holds it
					continue
				}
				if err := c.sendDecision(ctx, ar.RequestID, ar.CallID, d); err != nil {
					fail(err)
					return
				}
			}
		}
		// A caller that cancelled the turn meanwhile (Ctrl-C at the
		// question) stops it, below, instead.
		if tr.waitingAsks && tr.awaiting && len(f.peek()) == 0 && !c.await && ctx.Err() == nil {
			emit(tr.awaitingEnd())
			return
		}
		if queued != "" && len(f.peek()) == 0 {
			// No worker journaled the stop (none holds the world): it
			// waits in the inbox, after the turn's message, and the
			// worker that takes the world stops the turn before it
			// runs anything more. The stream ends saying so.
			emit(queuedStop(tr.seq, queued, w.Name()))
			emit(TurnEnd{Seq: tr.seq, RequestID: id, Outcome: OutcomeStopped})
			fail(cmp.Or(ctx.Err(), errStopped))
			return
		}
		if !stopAt.IsZero() && time.Since(stopAt) > stopWait {
			// The chat did not record the stop in time; the world has it.
			fail(fmt.Errorf("chat %s: the turn did not stop within %s: %w", c.id, stopWait, cmp.Or(ctx.Err(), errStopped)))
			return
		}
		select {
		case <-f.wake:
		case <-f.done:
			fail(world.ErrClosed)
			return
		case <-tick.C:
			if err := w.err(ctx); err != nil {
				fail(err)
				return
			}
		case <-ctxDone:
			ctxDone = nil
			if c.await && tr.awaiting && stopAt.IsZero() {
				// Nothing runs, the calls wait: the stream ends as
				// it would have without AwaitApproval, and the turn
				// keeps waiting in the world.
				emit(tr.awaitingEnd())
				fail(ctx.Err())
				return
			}
			stop(context.Cause(ctx).Error())
		}
	}
}

// testHookStarted, set by tests only, runs in a turn's stream once its
// turn has started, before the stream reads the calls that wait: a test
// lets the world run ahead there, as a busy machine may.
var testHookStarted atomic.Pointer[func(*Chat)]

// testHookRegistered, set by tests only, runs in a turn's stream once its
// follower is registered, before the stream reads the chat's state: a
// test lets the turn end there.
var testHookRegistered atomic.Pointer[func(*Chat)]

// errStopped is the error of a turn the caller stopped reading.
var errStopped = errors.New("the caller stopped reading")

// stopWait bounds how long a turn stopped from here waits to see the
// chat record the stop.
const stopWait = 10 * time.Second

// stop records that the user stopped the turn id, for reason. In a
// remote world it waits stopPostWait at most for a worker to journal the
// stop: the error then wraps cluster.ErrNotJournaled, the stop waiting
// in the world's inbox.
func (c *Chat) stop(ctx context.Context, id uint64, reason string) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopWait)
	defer cancel()
	value := map[string]any{"chat_id": c.id, "request_id": id, "reason": reason}
	var err error
	if r := c.w.remote; r != nil {
		err = c.postStop(sctx, r, value)
	} else {
		err = c.send(sctx, "Stop", value)
	}
	if err != nil && !errors.Is(err, cluster.ErrNotJournaled) {
		c.w.c.log.Warn("stop the turn", "chat", c.id, "request", id, "err", err)
	}
	return err
}

// queuedStop is the GuardStop of a turn stopped for reason while no
// worker journals the remote world's messages: the stop waits in the
// inbox.
func queuedStop(seq uint64, reason, world string) GuardStop {
	return GuardStop{Seq: seq, Reason: fmt.Sprintf("the user stopped the turn (%s); no worker journaled the stop within %s (none may hold world %s): it waits in the world's inbox, after the message, and the worker that takes the world applies it",
		reason, stopPostWait, world)}
}

// stopPostWait is how long a stop posted to a remote world's inbox is
// awaited before the stream that sent it ends without it.
const stopPostWait = 2 * time.Second

// postStop posts a Stop to the remote world r's inbox and waits
// stopPostWait at most for a worker to journal it.
func (c *Chat) postStop(ctx context.Context, r *cluster.Remote, value map[string]any) error {
	js, err := json.Marshal(map[string]any{"Stop": value})
	if err != nil {
		return err
	}
	mid, err := r.PostJSON(ctx, c.w.event, js)
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, stopPostWait)
	defer cancel()
	_, err = r.Await(actx, mid)
	return err
}

// item is what a follower is handed: a step's records, or streamed text.
type item struct {
	recs  []journal.Record
	event Event // an event that is not a journal record: a TextDelta, a cassette's Notice
	// request is the turn (request id) event is for; 0 for any.
	request uint64
}

// follower queues what the world hands a turn, for the goroutine that
// reads it.
type follower struct {
	chat  string
	mu    sync.Mutex
	queue []item
	wake  chan struct{}
	done  chan struct{}
	once  sync.Once
}

func newFollower(chat string) *follower {
	return &follower{chat: chat, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (f *follower) push(it item) {
	f.mu.Lock()
	f.queue = append(f.queue, it)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *follower) take() []item {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queue
	f.queue = nil
	return q
}

func (f *follower) close() { f.once.Do(func() { close(f.done) }) }

// peek returns what waits in the queue, leaving it there.
func (f *follower) peek() []item {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queue
}

// turnReader makes a turn's events of the records that follow it.
type turnReader struct {
	c       *Chat
	id      uint64
	shown   uint64               // entries of the chat's timeline turned into events
	prev    *demiurge.StateView  // the chat's state before the records read
	start   *demiurge.StateView  // the chat's state before the turn
	callAt  map[string]time.Time // when each running call was requested
	outcome Outcome
	finish  string
	summary string
	ended   bool
	// awaiting: the turn waits for the user's decisions only.
	awaiting bool
	// asks are calls that wait, not yet answered from here; waitingAsks
	// says some wait for a decision nobody here gives.
	asks        []ApprovalRequested
	waitingAsks bool
	// asked holds the calls ever put in asks: a call is asked once.
	asked map[askKey]bool
	seq   uint64 // the last record read
	// chatSeq is the seq of the last record of the chat's state read,
	// chatModule the module that wrote it.
	chatSeq    uint64
	chatModule string
	// streamed is what each round's TextDeltas showed (see rest).
	streamed map[uint64]*streamedText
	// answer is the text of the model's last message read (TurnEnd.Answer).
	answer string
	// result is what the receipt of the latest Result event read says,
	// until the ModelCall of its step takes it; calls are the turn's
	// model calls, for its TurnEnd.
	result *callInfo
	calls  []callInfo
}

// askKey names a call that waits for approval within its turn.
type askKey struct {
	round uint64
	call  string
}

// stream notes a TextDelta of the turn, and reports whether to pass it
// on: not once the journal has the answer of its round (the text of a
// world a worker runs comes by another road than its records, and may
// come late).
func (tr *turnReader) stream(d TextDelta) bool {
	if tr.streamed == nil {
		tr.streamed = map[uint64]*streamedText{}
	}
	s := tr.streamed[d.Round]
	if s == nil {
		s = &streamedText{}
		tr.streamed[d.Round] = s
	}
	if s.answered {
		return false
	}
	s.text.WriteString(d.Text)
	return true
}

// rest returns, before the assistant's message e, the part of it that its
// round's TextDeltas did not show (a world a worker runs: the client began
// to listen in the middle of the call, or missed some of it), so that the
// text streamed and the rest are the whole answer, as a reader that
// prints the deltas and not the message expects.
func (tr *turnReader) rest(e Event) (TextDelta, bool) {
	m, ok := e.(Message)
	if !ok || m.Role != "assistant" {
		return TextDelta{}, false
	}
	if tr.streamed == nil {
		tr.streamed = map[uint64]*streamedText{}
	}
	s := tr.streamed[m.Round]
	if s == nil {
		s = &streamedText{}
		tr.streamed[m.Round] = s
	}
	s.answered = true
	shown := s.text.String()
	if shown == "" || len(m.Text) <= len(shown) || !strings.HasPrefix(m.Text, shown) {
		return TextDelta{}, false
	}
	return TextDelta{Round: m.Round, Text: m.Text[len(shown):]}, true
}

// streamedText is what a round's TextDeltas showed.
type streamedText struct {
	text     strings.Builder
	answered bool // its message came: later deltas are dropped
}

// records returns the events of one step's records.
func (tr *turnReader) records(recs []journal.Record) ([]Event, error) {
	var out []Event
	// Each entry is timed by the ingress stamp of the input whose step
	// wrote it.
	var at time.Time
	ctx := context.Background()
	for _, r := range recs {
		tr.seq = r.Seq
		if r.Kind == world.KindEvent || r.Kind == world.KindReceipt {
			if in, err := world.DecodeInput(r); err == nil {
				at = time.Unix(0, int64(in.Stamp.NowNS))
			}
		}
		if ci, ok := tr.c.resultOf(r); ok {
			tr.result = &ci
			continue
		}
		if r.Kind != world.KindState {
			continue
		}
		sr, err := world.DecodeState(r)
		if err != nil || !tr.c.w.chatModule(sr.Reducer) || sr.Key != tr.c.id || !sr.State.Valid() {
			continue
		}
		var st demiurge.StateView
		if err := cas.GetNode(ctx, tr.c.w.st.CAS(), sr.State, &st); err != nil {
			return out, fmt.Errorf("chat %s: read its state at seq %d: %w", tr.c.id, r.Seq, err)
		}
		seq := r.Seq
		if w := tr.c.w; w.importsOlder && sr.Reducer == w.module && tr.chatModule == demiurge.ModuleNameV2 &&
			tr.prev != nil && tr.prev.LastRequestID >= tr.id {
			// The Import, which ends this turn of the older module: its
			// end stands where that module left the chat, as it read
			// before the Import (see takenUpEnd), so that every reader
			// gives it one position.
			seq = tr.chatSeq
		}
		tr.chatSeq, tr.chatModule = r.Seq, sr.Reducer
		evs := tr.state(ctx, seq, &st, at)
		for _, e := range evs {
			if m, ok := e.(Message); ok && m.Role == "assistant" && m.Text != "" {
				tr.answer = m.Text
			}
		}
		for i, e := range evs {
			if end, ok := e.(TurnEnd); ok {
				end.Answer = tr.answer
				evs[i] = end
			}
		}
		out = append(out, evs...)
		if tr.ended {
			break
		}
	}
	return out, nil
}

// state returns the events of one new state of the chat.
func (tr *turnReader) state(ctx context.Context, seq uint64, st *demiurge.StateView, at time.Time) []Event {
	var out []Event
	unseen, n := st.Since(tr.shown)
	tr.shown = n
	if p := tr.prev; p == nil || !sameCounts(st, p) {
		var p0 demiurge.StateView
		if p != nil {
			p0 = *p
		}
		if !sameUsage(st.Usage, p0.Usage) || st.UsageUnknown != p0.UsageUnknown || st.CostUnknown != p0.CostUnknown {
			mc := ModelCall{Seq: seq, Usage: usageDiff(st.Usage, p0.Usage), UsageUnknown: st.UsageUnknown != p0.UsageUnknown,
				CostMicroUSD: st.CostMicroUSD - min(st.CostMicroUSD, p0.CostMicroUSD), CostUnknown: st.CostUnknown != p0.CostUnknown}
			if len(unseen) > 0 {
				mc.Round = unseen[0].Round
			}
			if ci := tr.result; ci != nil {
				ci.fill(&mc)
				if ci.request == tr.id {
					tr.calls = addCall(tr.calls, *ci)
				}
			}
			out = append(out, mc)
		}
	}
	tr.result = nil
	before := tr.prev
	tr.prev = st
	for _, e := range unseen {
		if e.RequestID != tr.id {
			out = append(out, tr.earlier(seq, before, e)...)
			continue
		}
		tool, call, status := deref(e.Tool), deref(e.CallID), deref(e.Status)
		switch e.Kind {
		case demiurge.EntryUser:
			out = append(out, Message{Seq: seq, Round: e.Round, Role: "user", Text: e.Text, Ref: e.Ref})
		case demiurge.EntryAssistant:
			out = append(out, Message{Seq: seq, Round: e.Round, Role: "assistant", Text: e.Text, Ref: e.Ref})
		case demiurge.EntryToolCall:
			if status == "requested" {
				tr.callAt[call] = at
			}
			out = append(out, ToolCallStarted{Seq: seq, Round: e.Round, CallID: call, Tool: tool, Arguments: e.Text, Ref: e.Ref, Status: status})
			if status == "approval" {
				ar := ApprovalRequested{Seq: seq, Round: e.Round, RequestID: e.RequestID, CallID: call, Tool: tool, Arguments: e.Text,
					Deadline: deadlineOf(st, call)}
				if req, ok := tr.c.waiting(ctx, st, call); ok {
					ar.Arguments = req.ArgumentsJSON
				}
				out = append(out, ar)
			}
		case demiurge.EntryApproval:
			if status == "approved" {
				tr.callAt[call] = at // it runs from now
			}
			out = append(out, ApprovalDecided{Seq: seq, RequestID: e.RequestID, CallID: call, Tool: tool, Approved: status == "approved", Reason: e.Text,
				TimedOut: status == demiurge.StatusTimedOut})
		case demiurge.EntryToolOutput:
			ev := ToolCallFinished{Seq: seq, Round: e.Round, CallID: call, Tool: tool, Status: status, Output: e.Text, Size: len(e.Text), Ref: e.Ref}
			if whole, err := demiurge.ToolOutputOf(ctx, tr.c.w.st.CAS(), e); err == nil {
				ev.Size = len(whole) // the entry may keep a preview
			}
			if status == "not_run" {
				ev.Output = demiurge.StopText(ev.Output)
				ev.Size = len(ev.Output)
			}
			if t0, ok := tr.callAt[call]; ok && !t0.IsZero() && !at.IsZero() {
				ev.Duration = at.Sub(t0)
				delete(tr.callAt, call)
			}
			out = append(out, ev)
		case demiurge.EntryNotice:
			out = append(out, Notice{Seq: seq, Text: e.Text})
		case demiurge.EntryCompact:
			out = append(out, Compacted{Seq: seq, Text: e.Text, Ref: e.Ref})
		case demiurge.EntryStop:
			tr.noteEnd(e)
			out = append(out, GuardStop{Seq: seq, Reason: tr.c.stopReason(e.Text)})
		case demiurge.EntryError:
			tr.noteEnd(e)
			out = append(out, TurnError{Seq: seq, Text: e.Text})
		case demiurge.EntryDone:
			tr.noteEnd(e)
		}
	}
	tr.awaiting = awaitingOf(st, tr.id)
	if st.LastRequestID >= tr.id && (st.Turn == nil || st.Turn.RequestID != tr.id) {
		tr.ended = true
		if tr.outcome == "" {
			// The end was not among the entries this stream read: it
			// ended as the stream began, and the state it started from
			// holds it already. Read it there.
			tr.endFrom(st)
		}
		if tr.outcome == "" {
			tr.outcome = OutcomeFailed // no end recorded: the turn did not finish
		}
		end := TurnEnd{Seq: seq, RequestID: tr.id, Outcome: tr.outcome, Finish: tr.finish, Summary: tr.summary}
		var s0 demiurge.StateView
		if tr.start != nil {
			s0 = *tr.start
		}
		end.Usage = usageDiff(st.Usage, s0.Usage)
		end.CostMicroUSD = st.CostMicroUSD - min(st.CostMicroUSD, s0.CostMicroUSD)
		end.UsageUnknown = st.UsageUnknown - min(st.UsageUnknown, s0.UsageUnknown)
		end.CostUnknown = st.CostUnknown - min(st.CostUnknown, s0.CostUnknown)
		end.Costs, end.Providers = costParts(tr.calls)
		out = append(out, end)
	}
	return out
}

// earlier returns the events of an entry of an earlier turn that this
// turn's start ended (a message sent while that turn ran or waited for
// the user): the chat answered its calls that waited for approval "not
// run" and stopped it, and the stream says so, so that a call the user was
// told to approve is not dropped without a word. before is the state
// before the entry's step. Entries of other turns are not this stream's.
func (tr *turnReader) earlier(seq uint64, before *demiurge.StateView, e demiurge.Entry) []Event {
	if before == nil || before.Turn == nil || before.Turn.RequestID != e.RequestID || e.RequestID >= tr.id {
		return nil
	}
	switch e.Kind {
	case demiurge.EntryToolOutput:
		call := deref(e.CallID)
		for _, c := range before.Turn.Calls {
			if c.CallID == call && c.Status == "approval" {
				return []Event{ApprovalDecided{Seq: seq, RequestID: e.RequestID, CallID: call, Tool: deref(e.Tool), Reason: e.Text}}
			}
		}
	case demiurge.EntryStop:
		return []Event{Notice{Seq: seq, Text: fmt.Sprintf("turn %d stopped: %s", e.RequestID, e.Text)}}
	}
	return nil
}

// endFrom sets the turn's outcome (and its finish and summary) from the
// entries st keeps of it: its error, stop and done entries.
func (tr *turnReader) endFrom(st *demiurge.StateView) {
	for _, e := range st.Entries {
		if e.RequestID == tr.id {
			tr.noteEnd(e)
		}
	}
}

// noteEnd takes what an error, stop or done entry of the turn says of how
// it ends: an error makes it failed whatever comes after; a stop, stopped;
// a done entry, an answer (cut when its finish says so), with its summary
// and finish.
func (tr *turnReader) noteEnd(e demiurge.Entry) {
	switch e.Kind {
	case demiurge.EntryError:
		tr.outcome = OutcomeFailed
	case demiurge.EntryStop:
		if tr.outcome != OutcomeFailed {
			tr.outcome = OutcomeStopped
		}
	case demiurge.EntryDone:
		status := deref(e.Status)
		tr.summary, tr.finish = e.Text, status
		if tr.outcome != OutcomeFailed {
			tr.outcome = OutcomeAnswer
			if status == "length" || status == "content_filter" || strings.HasPrefix(status, "incomplete") {
				tr.outcome = OutcomeCut
			}
		}
	}
}

func usageDiff(a, b demiurge.TokenUsage) Usage {
	return Usage{Prompt: a.Prompt - min(a.Prompt, b.Prompt), Completion: a.Completion - min(a.Completion, b.Completion),
		Cached: a.Cached - min(a.Cached, b.Cached), CacheWrite: a.CacheWrite - min(a.CacheWrite, b.CacheWrite),
		Reasoning: a.Reasoning - min(a.Reasoning, b.Reasoning)}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Output returns the whole output of a finished tool call, where the event
// holds a preview.
func (c *Chat) Output(ctx context.Context, e ToolCallFinished) (string, error) {
	return demiurge.ToolOutputOf(ctx, c.w.st.CAS(), demiurge.Entry{Kind: demiurge.EntryToolOutput, Text: e.Output, Ref: e.Ref})
}

// awaitingEnd is the end of a stream that stops while the turn waits for
// the user's decisions.
func (tr *turnReader) awaitingEnd() TurnEnd {
	end := TurnEnd{Seq: tr.seq, RequestID: tr.id, Outcome: OutcomeAwaitingApproval}
	if st := tr.prev; st != nil {
		var s0 demiurge.StateView
		if tr.start != nil {
			s0 = *tr.start
		}
		end.Usage = usageDiff(st.Usage, s0.Usage)
		end.CostMicroUSD = st.CostMicroUSD - min(st.CostMicroUSD, s0.CostMicroUSD)
		end.UsageUnknown = st.UsageUnknown - min(st.UsageUnknown, s0.UsageUnknown)
		end.CostUnknown = st.CostUnknown - min(st.CostUnknown, s0.CostUnknown)
		end.Costs, end.Providers = costParts(tr.calls)
	}
	return end
}

// Decision is the user's answer to a call that waits for approval.
type Decision struct {
	Approve bool
	// Always approves the tool's later calls in this chat, in this
	// process, without asking.
	Always bool
	// Reason is what the model reads of a denial (and the journal keeps).
	Reason string
}

// An Approver answers calls that wait for approval (WithApprover): ok
// false leaves the call waiting (the stream ends with
// OutcomeAwaitingApproval, or waits on if the chat awaits approval:
// AwaitApproval). Its context ends at the call's deadline
// (ApprovalTimeout), and when the call is decided otherwise meanwhile
// (Chat.Answer from another goroutine, demiurge approve from another
// process): then what it returns is not taken, and the stream goes on
// with the decision the world has.
type Approver func(ctx context.Context, req ApprovalRequested) (d Decision, ok bool)

// decide answers a waiting call from here: a tool approved always in this
// chat, or the world's approver.
func (c *Chat) decide(ctx context.Context, ar ApprovalRequested) (Decision, bool) {
	w := c.w
	w.mu.Lock()
	always := w.always[c.id][ar.Tool]
	w.mu.Unlock()
	if always {
		return Decision{Approve: true, Reason: "approved for the session"}, true
	}
	if w.c.approver == nil {
		return Decision{}, false
	}
	// The approver's context ends when the call is decided otherwise
	// (Chat.Answer from another goroutine, demiurge approve from another
	// process): an approver that waits for a person then returns, and
	// the stream goes on with the decision the world has.
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go c.watchDecided(actx, ar, cancel)
	d, ok := w.c.approver(actx, ar)
	if ok && d.Approve && d.Always {
		w.mu.Lock()
		if w.always[c.id] == nil {
			w.always[c.id] = map[string]bool{}
		}
		w.always[c.id][ar.Tool] = true
		w.mu.Unlock()
	}
	return d, ok
}

// errDecided is the cause of an approver's context that ended because
// the call was decided otherwise.
var errDecided = errors.New("the call was decided otherwise")

// decidedPoll is how often the chat's state is read, while an approver
// is asked, to see whether the call was decided otherwise.
const decidedPoll = 50 * time.Millisecond

// watchDecided cancels ctx, with errDecided, once the call ar no longer
// waits for approval; it returns when ctx ends.
func (c *Chat) watchDecided(ctx context.Context, ar ApprovalRequested, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(decidedPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if !c.waits(ar) {
				cancel(errDecided)
				return
			}
		}
	}
}

// waits reports whether the call ar still waits for approval.
func (c *Chat) waits(ar ApprovalRequested) bool {
	st, ok := c.State()
	if !ok || st.Turn == nil || st.Turn.RequestID != ar.RequestID {
		return false
	}
	for _, pc := range st.Turn.Calls {
		if pc.CallID == ar.CallID {
			return pc.Status == "approval"
		}
	}
	return false
}

// decideBy answers a waiting call as decide does, by its deadline:
// expired says the deadline passed before anyone here decided (the call
// is then denied as timed out).
func (c *Chat) decideBy(ctx context.Context, ar ApprovalRequested) (d Decision, ok, expired bool) {
	if ar.Deadline.IsZero() {
		d, ok = c.decide(ctx, ar)
		return d, ok, false
	}
	left := ar.Deadline.Sub(c.w.now())
	if left <= 0 {
		return Decision{}, false, true
	}
	dctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	d, ok = c.decide(dctx, ar)
	if !ok && ctx.Err() == nil && c.w.c.approver != nil && !c.w.now().Before(ar.Deadline) {
		return Decision{}, false, true
	}
	return d, ok, false
}

// sendTimeout denies a call whose deadline has passed, as timed out.
func (c *Chat) sendTimeout(ctx context.Context, ar ApprovalRequested) error {
	return c.send(ctx, "Approval", map[string]any{"chat_id": c.id, "request_id": ar.RequestID, "call_id": ar.CallID,
		"approve": false, "reason": "", "timeout": true})
}

// now is the time on the world's ingress clock (WithClock).
func (w *World) now() time.Time {
	if w.c.now != nil {
		return w.c.now()
	}
	return time.Now()
}

// armTimeout denies call ar of chat c as timed out at its deadline, if it
// still waits then and the world is still open: a process that ran or
// followed a turn enforces the timeouts of the calls it saw wait, whether
// or not anyone follows the turn any more. The turn goes on in the world.
// (Listing the calls that wait, Chat.Pending, arms nothing: a look does
// not run a turn.)
func (w *World) armTimeout(c *Chat, ar ApprovalRequested) {
	if ar.Deadline.IsZero() {
		return
	}
	key := c.id + "\x00" + ar.CallID
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.timeouts[key] != nil {
		return
	}
	if w.timeouts == nil {
		w.timeouts = map[string]*time.Timer{}
	}
	var fire func()
	fire = func() {
		if st, ok := c.State(); !ok || deadlineOf(st, ar.CallID).IsZero() {
			w.mu.Lock()
			delete(w.timeouts, key)
			w.mu.Unlock()
			return // decided
		}
		ctx, cancel := context.WithTimeout(context.Background(), stopWait)
		err := c.sendTimeout(ctx, ar)
		cancel()
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.closed {
			return
		}
		if err != nil {
			w.c.log.Warn("approval timeout not recorded; trying again", "chat", c.id, "call", ar.CallID, "err", err)
		}
		// Look again in a second: the world's clock may not have reached
		// the deadline (then the timeout changed nothing).
		w.timeouts[key] = time.AfterFunc(time.Second, fire)
	}
	w.timeouts[key] = time.AfterFunc(max(ar.Deadline.Sub(w.now()), 0), fire)
}

// armPending arms the timeouts of the calls of the chat's turn that wait
// (see armTimeout).
func (c *Chat) armPending(ctx context.Context) {
	for _, ar := range c.Pending(ctx) {
		c.w.armTimeout(c, ar)
	}
}

// deadlineOf is when call, waiting for approval in the chat whose state
// is st, times out; zero if it does not wait or has no deadline.
func deadlineOf(st *demiurge.StateView, call string) time.Time {
	if st == nil || st.Turn == nil {
		return time.Time{}
	}
	for _, pc := range st.Turn.Calls {
		if pc.CallID == call && pc.Status == "approval" && pc.DeadlineNS != 0 && pc.DeadlineNS <= math.MaxInt64 {
			return time.Unix(0, int64(pc.DeadlineNS))
		}
	}
	return time.Time{}
}

// sendDecision records the user's decision on call of the turn id.
func (c *Chat) sendDecision(ctx context.Context, id uint64, call string, d Decision) error {
	return c.send(ctx, "Approval", map[string]any{"chat_id": c.id, "request_id": id, "call_id": call, "approve": d.Approve, "reason": d.Reason})
}

// Pending returns the calls of the chat's turn that wait for the user's
// approval.
func (c *Chat) Pending(ctx context.Context) []ApprovalRequested {
	st, ok := c.State()
	if !ok || st.Turn == nil {
		return nil
	}
	var out []ApprovalRequested
	for _, pc := range st.Turn.Calls {
		if pc.Status != "approval" {
			continue
		}
		ar := ApprovalRequested{RequestID: st.Turn.RequestID, Round: st.Turn.Round, CallID: pc.CallID, Tool: pc.Tool,
			Deadline: deadlineOf(st, pc.CallID)}
		if req, ok := c.waiting(ctx, st, pc.CallID); ok {
			ar.Arguments = req.ArgumentsJSON
		}
		out = append(out, ar)
	}
	return out
}

// waiting returns the request of a call that waits for approval.
func (c *Chat) waiting(ctx context.Context, st *demiurge.StateView, call string) (demiurge.ToolCallRequested, bool) {
	var req demiurge.ToolCallRequested
	if st.Turn == nil {
		return req, false
	}
	for _, pc := range st.Turn.Calls {
		if pc.CallID == call && pc.RequestRef != nil {
			if err := cas.GetNode(ctx, c.w.st.CAS(), *pc.RequestRef, &req); err == nil {
				return req, true
			}
		}
	}
	return req, false
}

// ErrNotWaiting is returned (wrapped) by Decide for a call that does not
// wait for approval.
var ErrNotWaiting = errors.New("the call does not wait for approval")

// Decide answers a call of the chat's turn that waits for approval (see
// Pending), and streams the rest of the turn as Send does. While another
// stream of this process follows the turn it is ErrBusy: Answer journals
// a decision without a stream of its own.
func (c *Chat) Decide(ctx context.Context, callID string, d Decision) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		var id uint64
		for _, ar := range c.Pending(ctx) {
			if ar.CallID == callID {
				id = ar.RequestID
			}
		}
		if id == 0 {
			yield(nil, fmt.Errorf("chat %s: call %s: %w", c.id, callID, ErrNotWaiting))
			return
		}
		c.turn(ctx, yield, func(ctx context.Context) (uint64, error) { return id, c.sendDecision(ctx, id, callID, d) })
	}
}

// Answer journals a decision on a call of the chat's turn that waits for
// approval, and returns once it is committed, without following the turn:
// the world goes on with it by itself, and a stream that follows the turn
// in this process (Send's, Follow's, Decide's) yields the ApprovalDecided
// and what comes after. It is what a process that runs the world does
// with a decision another process sends it. It returns the call answered
// and the journal's head after the decision's step. A call that does not
// wait is an error wrapping ErrNotWaiting. d.Always is not taken: it is
// for an approver of this process.
func (c *Chat) Answer(ctx context.Context, callID string, d Decision) (ApprovalRequested, journal.Head, error) {
	if c.id == "" {
		return ApprovalRequested{}, journal.Head{}, errNoChatID
	}
	for _, ar := range c.Pending(ctx) {
		if ar.CallID != callID {
			continue
		}
		js, err := json.Marshal(map[string]any{"Approval": map[string]any{"chat_id": c.id, "request_id": ar.RequestID, "call_id": callID, "approve": d.Approve, "reason": d.Reason}})
		if err != nil {
			return ar, journal.Head{}, err
		}
		h, err := c.w.host.SendJSON(ctx, c.w.event, js)
		if err != nil {
			return ar, h, fmt.Errorf("chat %s: call %s: %w", c.id, callID, err)
		}
		return ar, h, nil
	}
	return ApprovalRequested{}, journal.Head{}, fmt.Errorf("chat %s: call %s: %w", c.id, callID, ErrNotWaiting)
}

// RequireApproval makes calls of the tools named wait for the user's
// approval before they run ("*": every tool): the stream yields
// ApprovalRequested, and an approver (WithApprover) or Chat.Decide
// answers. The world keeps the call waiting, across restarts, until then.
// Once any tool is named, every bash call waits too: a script can run
// any tool as a command. A name that is no tool the model is offered
// (World.Tools) fails the chat's next Send, rather than leave the tool
// meant unguarded.
func RequireApproval(tools ...string) ChatOption {
	return func(c *chatConfig) {
		if len(tools) == 0 {
			delete(c.s, "require_approval")
			return
		}
		c.s["require_approval"] = append([]string(nil), tools...)
	}
}

// ApprovalTimeout makes a call that waits for approval (RequireApproval)
// wait at most d: then it is denied, and the model reads that the user
// did not approve it in time. The deadline is the world's: a decision
// that comes later (Chat.Decide, demiurge approve) denies the call all
// the same, and an approver is asked with a context that ends at the
// deadline. Zero (the default) waits as long as it takes.
func ApprovalTimeout(d time.Duration) ChatOption {
	return func(c *chatConfig) {
		if d <= 0 {
			delete(c.s, "approval_timeout_ms")
			return
		}
		c.s["approval_timeout_ms"] = uint64(max(d.Milliseconds(), 1))
	}
}

// AwaitApproval keeps the chat's streams (Send's, Decide's, Follow's,
// Compact's) open while the turn waits for approval, where they would end
// with OutcomeAwaitingApproval: for a program whose decisions come from
// elsewhere (a web form that calls Chat.Answer, demiurge approve in
// another process, whose decision the process that holds the world
// journals) or from the approval timeout (ApprovalTimeout). It has one
// stream for the whole turn, where without it a program would follow the
// turn again once decided, and miss what happened in between. The stream
// yields each call's ApprovalRequested once (Follow and Decide first
// yield those of the calls that already wait, with the Seq of the step
// that asked), then ApprovalDecided and the rest of the turn as the
// decisions land, and ends with the turn. An approver (WithApprover) is
// still asked first; a call it leaves waiting is waited for.
//
// The wait ends with ctx: if ctx ends, or the loop breaks, while the turn
// only waits for decisions (nothing runs), the stream ends as it would
// have without AwaitApproval (a TurnEnd with OutcomeAwaitingApproval, then
// ctx's error if ctx ended), and the turn keeps waiting in the world; at
// any other time it stops the turn, as Send's stream does. A call's
// deadline (ApprovalTimeout) is kept as without it: the process whose
// stream saw the call wait denies it at the deadline, with or without an
// approver, and whether or not a stream still waits for it.
//
// A stream awaiting approval holds the chat, as any of its streams does:
// Decide from another goroutine meanwhile is ErrBusy; answer with Answer,
// which only journals the decision, and the stream goes on with it.
//
// It is the chat handle's (World.Chat, Chat.With), not a setting of the
// chat in the world: it does not reach the world, and changes no record.
func AwaitApproval() ChatOption {
	return func(c *chatConfig) { c.await = true }
}

// awaitingOf reports whether the turn id of the chat whose state is st
// waits for the user's decisions only: calls wait for approval, none runs.
func awaitingOf(st *demiurge.StateView, id uint64) bool {
	t := st.Turn
	if t == nil || t.RequestID != id {
		return false
	}
	approval, running := 0, 0
	for _, c := range t.Calls {
		switch c.Status {
		case "approval":
			approval++
		case "pending":
			running++
		}
	}
	return approval > 0 && running == 0
}
