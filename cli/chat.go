package cli

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/peterh/liner"
	"golang.org/x/term"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/internal/readall"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/world"
)

// chatRun is a chat at the terminal, or on a pipe: it reads the user's
// lines, sends them, and prints their turns.
type chatRun struct {
	a      *app
	f      *runFlags
	w      *agent.World
	chat   *agent.Chat
	choice agent.ToolChoice
	termIn bool         // stdin is a terminal: a line editor, a banner, prompts
	status *statusLine  // the progress line; nil unless stdout is a terminal
	ln     *liner.State // the line editor, once made
	// input is what the line editor reads when its prompts can be
	// stopped (see interruptibleInput); nil otherwise.
	input *os.File
	dec   *decisions // decisions other processes send
	// esc watches for Esc while a turn runs (escFire stops it); typed is
	// what the user typed meanwhile, for the next prompt; noWorker is set
	// while no PostgreSQL worker holds the world (watchWorker).
	escMu    sync.Mutex
	esc      *escWatch
	escFire  func()
	typed    string
	noWorker *atomic.Bool

	mu       sync.Mutex // guards writes to a.out (the status line writes from its own goroutine)
	streamed bool       // text was streamed in this model call
	answered bool       // the turn had text from the model
	started  map[string]bool
	running  map[string]string                // calls running, by id: their tools
	calls    []agent.ToolCallFinished         // the last turn's calls, numbered from 1 for /show
	lastEnd  agent.TurnEnd                    // how the last turn ended
	shown    map[string]agent.ToolCallStarted // the calls of the turn, by id
	// turned is set once this process showed a turn (r.calls are its
	// calls); before, /show reads the chat's last turn from the journal.
	turned bool
	// keyErr, if set, is why the model cannot be called: this run was
	// for a command that calls none (run -m /show N), and no turn runs.
	keyErr error
}

// errInterrupted is the cause of a turn stopped with Ctrl-C.
var errInterrupted = errors.New("interrupted at the terminal (Ctrl-C)")

// errEscaped is the cause of a turn stopped with Esc: an errInterrupted.
var errEscaped error = escaped{}

type escaped struct{}

func (escaped) Error() string        { return "interrupted at the terminal (Esc)" }
func (escaped) Is(target error) bool { return target == errInterrupted }

// exitInterrupted is the exit code of run -m when Ctrl-C stopped the turn
// (128 + SIGINT, as shells report it).
const exitInterrupted = 130

func newChatRun(a *app, f *runFlags, w *agent.World, choice agent.ToolChoice) *chatRun {
	var opts []agent.ChatOption
	if len(f.requireApproval) > 0 {
		opts = append(opts, agent.RequireApproval(f.requireApproval...))
	}
	if f.approvalTimeout > 0 {
		opts = append(opts, agent.ApprovalTimeout(f.approvalTimeout))
	}
	r := &chatRun{a: a, f: f, w: w, chat: w.Chat(f.chat, opts...), choice: choice, started: map[string]bool{}, running: map[string]string{}}
	r.termIn = isTerminal(a.in)
	if !f.json && isTerminal(a.out) {
		r.status = &statusLine{out: a.out, mu: &r.mu}
	}
	r.dec = newDecisions()
	if r.termIn {
		// Prompts that can be stopped, and Esc read during a turn.
		r.input = interruptibleInput(a.in)
	}
	if r.status != nil {
		r.status.hint = "Ctrl-C stops it"
		if r.input != nil {
			r.status.hint = "Esc or Ctrl-C stops it"
		}
		r.status.override = r.statusOverride
	}
	return r
}

// statusOverride is what the progress line says instead of waiting for
// the model, when that is not what happens: no worker holds the world of
// a PostgreSQL store, so nothing calls the model yet.
func (r *chatRun) statusOverride(what string) string {
	if what == waitingModel && r.noWorker != nil && r.noWorker.Load() {
		return fmt.Sprintf("waiting for a worker to take world %s (none holds it: start demiurge worker)", r.w.Name())
	}
	return what
}

// waitingModel is what the progress line says while a model call runs.
const waitingModel = "waiting for the model"

// startEsc watches for Esc during a turn (see escWatch), calling fire.
func (r *chatRun) startEsc(fire func()) {
	r.escMu.Lock()
	defer r.escMu.Unlock()
	r.escFire = fire
	r.esc = startEsc(r.input, fire)
}

// stopEsc stops watching for Esc, keeping what was typed; resume starts
// again with the same fire (after a question at the terminal), unless
// the turn is over (stopEsc(false)).
func (r *chatRun) stopEsc(resume bool) {
	r.escMu.Lock()
	defer r.escMu.Unlock()
	r.typed += r.esc.stop()
	r.esc = nil
	if !resume {
		r.escFire = nil
	}
}

// resumeEsc watches for Esc again after a question at the terminal, if
// a turn still runs.
func (r *chatRun) resumeEsc() {
	r.escMu.Lock()
	defer r.escMu.Unlock()
	if r.escFire != nil && r.esc == nil {
		r.esc = startEsc(r.input, r.escFire)
	}
}

// keepTyped keeps s, typed ahead beyond the line just read, for the
// next prompt, before what the next turn's Esc watch adds.
func (r *chatRun) keepTyped(s string) {
	r.escMu.Lock()
	defer r.escMu.Unlock()
	r.typed = s + r.typed
}

// takeTyped returns what the user typed during the last turn, for the
// next prompt.
func (r *chatRun) takeTyped() string {
	r.escMu.Lock()
	defer r.escMu.Unlock()
	s := r.typed
	r.typed = ""
	return s
}

// termWidth is the width of the terminal f is, or 80 when it is none.
func termWidth(f any) int {
	if file, ok := f.(*os.File); ok {
		if w, _, err := term.GetSize(int(file.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 80
}

// isTerminal reports whether f is a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// run chats: the turn a crash left running first, then -m's message, or
// the lines of stdin.
func (r *chatRun) run(ctx context.Context) error {
	defer func() {
		if r.ln != nil {
			r.ln.Close()
		}
		if r.input != nil {
			r.input.Close()
		}
	}()
	if st, ok := r.chat.State(); ok && st.Turn != nil && (r.f.decide == nil || len(r.chat.Pending(ctx)) == 0) {
		if pending := r.chat.Pending(ctx); len(pending) > 0 && r.f.decide == nil && r.f.message != "" && !isCommand(r.f.message) && !r.answers() {
			// -m's message would stop the turn, whose calls wait for
			// a decision no one here can give: it is stopped first, and
			// said once, rather than told to be approved and then dropped.
			if err := r.stopWaiting(ctx, st.Turn.RequestID, pending); err != nil {
				return err
			}
		} else if len(pending) > 0 {
			r.note(fmt.Sprintf("turn %d waits for your approval", st.Turn.RequestID))
		} else {
			r.note(r.resuming(ctx, st.Turn.RequestID))
		}
		// run -m "/show 3" without a model key leaves a turn that waits
		// for approval as it is (following it would call no model, but
		// the decision that the turn waits for may be taken meanwhile).
		if r.keyErr == nil || len(r.chat.Pending(ctx)) == 0 {
			if _, err := r.turn(ctx, func(ctx context.Context) iter.Seq2[agent.Event, error] { return r.chat.Follow(ctx) }); err != nil && !errors.Is(err, errInterrupted) {
				return err
			}
		}
	}
	if d := r.f.decide; d != nil {
		return r.answer(ctx, d)
	}
	if r.f.message != "" {
		if isCommand(r.f.message) {
			return r.commandOnce(ctx, r.f.message)
		}
		outcome, err := r.say(ctx, strings.TrimPrefix(r.f.message, "/"))
		switch {
		case errors.Is(err, errInterrupted):
			return &exitStatus{code: exitInterrupted}
		case err != nil:
			return err
		}
		if code := exitCode(outcome); code != exitOK {
			return &exitStatus{code: code}
		}
		return nil
	}
	if !r.termIn {
		return r.pipe(ctx)
	}
	return r.repl(ctx)
}

// isCommand reports whether a line is a command of the chat (/compact),
// not a message: it starts with "/", but not with "//" (which sends the
// message with one "/" less).
func isCommand(line string) bool {
	return strings.HasPrefix(line, "/") && !strings.HasPrefix(line, "//")
}

// commandOnce runs -m's command, as the interactive chat runs it; a
// /compact that fails or is stopped sets the exit code as a turn does.
func (r *chatRun) commandOnce(ctx context.Context, line string) error {
	if name, _, _ := strings.Cut(strings.TrimSpace(line), " "); !knownCommand(name) {
		// At the prompt the chat goes on; -m's one command is a usage error.
		return usagef("run -m %s: unknown command %s: /help lists them (start the message with // to send it to the model)", shellQuote(line), name)
	}
	if name, _, _ := strings.Cut(strings.TrimSpace(line), " "); name != "/compact" || r.w.Module() != demiurge.ModuleName {
		_, err := r.command(ctx, line)
		return err
	}
	outcome, err := r.turn(ctx, r.chat.Compact)
	switch {
	case errors.Is(err, errInterrupted):
		return &exitStatus{code: exitInterrupted}
	case err != nil:
		return err
	}
	if code := exitCode(outcome); code != exitOK {
		return &exitStatus{code: code}
	}
	return nil
}

// answers reports whether this run answers calls that wait for approval
// itself: --approve always or never, or ask at a terminal.
func (r *chatRun) answers() bool {
	return r.f.approve != "ask" || r.asks()
}

// stopWaiting stops turn id, whose calls wait for approval, before -m's
// message is sent (the message would stop it anyway): its stream says
// that its calls were not run and that it stopped, with its TurnEnd
// (outcome stopped) in --json.
func (r *chatRun) stopWaiting(ctx context.Context, id uint64, pending []agent.ApprovalRequested) error {
	tools := make([]string, 0, len(pending))
	for _, p := range pending {
		tools = append(tools, p.Tool+" ("+p.CallID+")")
	}
	r.note(fmt.Sprintf("turn %d waited for approval of %s; the new message stops it, its calls not run", id, strings.Join(tools, ", ")))
	_, err := r.show(ctx, r.chat.StopTurn(ctx, "a new message was sent while its calls waited for approval"))
	return err
}

// resuming says why turn id of the chat is taken up before anything
// else: a process stopped while it ran, or the world was forked in the
// middle of it.
func (r *chatRun) resuming(ctx context.Context, id uint64) string {
	if f, ok := forkedDuring(ctx, r.w.Storage(), r.w.Name(), r.chat.ID(), id); ok {
		return fmt.Sprintf("resuming turn %d, which was running at seq %d of world %s when world %s was forked from it", id, f.At, f.From, r.w.Name())
	}
	return fmt.Sprintf("resuming turn %d, left running when demiurge last stopped", id)
}

// forkedDuring returns the last fork of a world if turn id of chat was
// running when it was made (it was made mid-turn).
func forkedDuring(ctx context.Context, st world.Storage, name, chat string, id uint64) (session.Fork, bool) {
	var last uint64 // the seq of the last Fork record
	if err := st.Journal().Read(ctx, name, 1, func(rec journal.Record) error {
		if rec.Kind == world.KindFork {
			last = rec.Seq
		}
		return nil
	}); err != nil || last == 0 {
		return session.Fork{}, false
	}
	rd := session.NewReader(st.CAS())
	errDone := errors.New("done")
	if err := st.Journal().Read(ctx, name, 1, func(rec journal.Record) error {
		if rec.Seq > last {
			return errDone
		}
		return rd.Record(rec)
	}); err != nil && !errors.Is(err, errDone) {
		return session.Fork{}, false
	}
	forks := rd.Forks()
	if len(forks) == 0 {
		return session.Fork{}, false
	}
	f := forks[len(forks)-1]
	for _, t := range f.Open {
		if t.Chat == chat && t.RequestID == id {
			return f, true
		}
	}
	return session.Fork{}, false
}

// say sends one user message, prints its turn, and says how it ended.
func (r *chatRun) say(ctx context.Context, text string) (agent.Outcome, error) {
	var opts []agent.SendOption
	if r.choice != agent.ToolChoiceAuto {
		opts = append(opts, agent.WithToolChoice(r.choice))
	}
	return r.turn(ctx, func(ctx context.Context) iter.Seq2[agent.Event, error] { return r.chat.Send(ctx, text, opts...) })
}

// turn runs one turn and prints it. Ctrl-C stops the turn (a second within
// a second quits); --wait stops a turn that takes too long.
func (r *chatRun) turn(ctx context.Context, events func(context.Context) iter.Seq2[agent.Event, error]) (agent.Outcome, error) {
	if r.keyErr != nil { // the model has no key (a run for a command that calls none)
		return "", r.keyErr
	}
	wctx, cancelWait := context.WithTimeoutCause(ctx, r.f.wait, fmt.Errorf("the turn took longer than --wait %s", r.f.wait))
	defer cancelWait()
	tctx, stop := context.WithCancelCause(wctx)
	defer stop(nil)
	var last atomic.Int64 // when Ctrl-C stopped the turn (unix ns)
	restore := r.a.interrupts.handle(func() {
		if t := last.Load(); t != 0 && time.Since(time.Unix(0, t)) < time.Second {
			r.a.interrupts.quit()
			return
		}
		last.Store(time.Now().UnixNano())
		stop(errInterrupted)
	})
	defer restore()
	// Esc stops the turn as Ctrl-C does (a second Esc does not quit).
	r.startEsc(func() {
		last.Store(time.Now().UnixNano())
		stop(errEscaped)
	})
	defer r.stopEsc(false)
	followed := r.dec.followTurn()
	end, err := r.show(tctx, events(tctx))
	followed(ctx, r, err)
	switch {
	case err == nil:
		return end.Outcome, nil
	case errors.Is(context.Cause(ctx), errTerminated) && end.Outcome == agent.OutcomeStopped:
		return end.Outcome, fmt.Errorf("run: %w: the turn was stopped, as Ctrl-C stops it", errTerminated)
	case ctx.Err() != nil:
		return end.Outcome, context.Cause(ctx)
	case errors.Is(context.Cause(tctx), errInterrupted):
		return end.Outcome, errInterrupted
	case errors.Is(err, context.DeadlineExceeded):
		return end.Outcome, fmt.Errorf("run: the turn took longer than --wait %s; it was stopped", r.f.wait)
	}
	return end.Outcome, err
}

// show prints a turn's events, then what it used, and returns its end.
func (r *chatRun) show(ctx context.Context, turn iter.Seq2[agent.Event, error]) (agent.TurnEnd, error) {
	var end agent.TurnEnd
	r.calls, r.answered, r.shown, r.turned = nil, false, map[string]agent.ToolCallStarted{}, true
	clear(r.running)
	r.status.set(r.startStatus())
	defer r.status.off()
	var err error
	for e, eerr := range turn {
		if eerr != nil {
			err = eerr
			break
		}
		if te, ok := e.(agent.TurnEnd); ok {
			end = te
			r.lastEnd = te
		}
		if r.f.json {
			b, merr := agent.MarshalEvent(e)
			if merr != nil {
				return end, merr
			}
			r.write(string(b) + "\n")
			continue
		}
		r.print(ctx, e)
	}
	if !r.f.json && end.RequestID != 0 {
		r.write(fmt.Sprintf("  [%s]\n", usageLine(end)))
	}
	return end, err
}

// startStatus is what the progress line says as a turn is shown: what a
// turn taken up again is doing (a tool call it left running, a call
// waiting for approval), else waiting for the model.
func (r *chatRun) startStatus() string {
	st, ok := r.chat.State()
	if !ok || st.Turn == nil {
		return waitingModel
	}
	var running, waiting []string
	for _, c := range st.Turn.Calls {
		switch c.Status {
		case "pending":
			running = append(running, c.Tool)
		case "approval":
			waiting = append(waiting, c.Tool)
		}
	}
	switch {
	case len(running) > 0:
		sort.Strings(running)
		return "running " + strings.Join(running, ", ") + " (taken up again)"
	case len(waiting) > 0:
		sort.Strings(waiting)
		return "waiting for approval of " + strings.Join(waiting, ", ")
	}
	return waitingModel
}

// usageLine says what a turn's model calls used and cost, where the cost
// came from and who served the calls: "1200 tokens in (200 cached, 900
// written to the cache), 300 out (0 reasoning), $0.0042 reported by
// openrouter (usage.cost)", "…, $0.0042 priced from catwalk v0.52.1
// (openai) for gpt-5-mini, served by openai". A world made before Chat@3
// does not say where, nor who.
func usageLine(e agent.TurnEnd) string {
	u := e.Usage
	if u == (agent.Usage{}) && e.CostMicroUSD == 0 && e.UsageUnknown == 0 && e.CostUnknown == 0 {
		// No call answered (each that does has tokens, or says its usage
		// is unknown): a $0.0000 would read as a price.
		return "no model call answered: tokens and cost unknown"
	}
	tokens := fmt.Sprintf("%d tokens in (%s), %d out (%d reasoning)", u.Prompt, cachedText(u.Cached, u.CacheWrite), u.Completion, u.Reasoning)
	if e.UsageUnknown > 0 {
		tokens += fmt.Sprintf(", usage unknown for %d call(s): the provider reported none", e.UsageUnknown)
	}
	cost := costText(e.CostMicroUSD, e.CostUnknown > 0)
	switch len(e.Costs) {
	case 0:
	case 1:
		cost += " " + e.Costs[0].Source
	default:
		parts := make([]string, len(e.Costs))
		for i, p := range e.Costs {
			parts[i] = fmt.Sprintf("$%.4f %s", float64(p.CostMicroUSD)/1e6, p.Source)
		}
		cost += ": " + strings.Join(parts, ", ")
	}
	var served []string
	for _, p := range e.Providers {
		if !slices.ContainsFunc(e.Costs, func(c agent.CostPart) bool { return strings.HasPrefix(c.Source, "reported by "+p+" ") }) {
			served = append(served, p)
		}
	}
	if len(served) > 0 {
		cost += ", served by " + strings.Join(served, " and ")
	}
	return tokens + ", " + cost
}

// repl reads lines with a line editor until /quit, Ctrl-D, or Ctrl-C
// twice at the prompt.
func (r *chatRun) repl(ctx context.Context) error {
	ln := r.editor()
	defer func() {
		ln.Close()
		r.ln = nil
	}()
	hist := r.historyFile()
	if hist != "" {
		if f, _, err := readall.Open(hist, "the chat history", readall.NoLimit); err == nil { // a FIFO there is not waited on
			_, _ = ln.ReadHistory(f)
			f.Close()
		}
		defer func() {
			if f, err := os.OpenFile(hist, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err == nil {
				_, _ = ln.WriteHistory(f)
				f.Close()
			}
		}()
	}
	r.write(fmt.Sprintf("%s: world %s, chat %s, model %s. Type a message; /help for commands, Ctrl-D to quit.\n", r.a.progName(), r.f.world, r.chat.ID(), r.chat.Model()))
	var aborted time.Time
	for {
		line, ahead, err := readLine(ctx, ln, r.input, r.takeTyped(), r.write)
		r.keepTyped(ahead)
		switch {
		case errors.Is(err, liner.ErrPromptAborted):
			if time.Since(aborted) < 2*time.Second {
				return nil
			}
			aborted = time.Now()
			r.write("  (Ctrl-C again to quit, or Ctrl-D)\n")
			continue
		case errors.Is(err, io.EOF):
			r.write("\n")
			return nil
		case ctx.Err() != nil:
			return endedBy(ctx) // SIGTERM at the prompt
		case err != nil:
			return err
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		ln.AppendHistory(line)
		quit, err := r.line(ctx, line)
		if err != nil {
			if ctx.Err() != nil {
				if errors.Is(err, errTerminated) {
					return err // says what came of the turn
				}
				return endedBy(ctx)
			}
			if !errors.Is(err, errInterrupted) {
				return err
			}
		}
		if quit || ctx.Err() != nil {
			return endedBy(ctx)
		}
	}
}

// readLine reads one line from the line editor; a line that ends with a
// backslash goes on on the next. typed is what the user typed ahead
// while the turn ran: its lines that ended with Enter are taken as they
// are (echo shows them after their prompt), as a shell takes type-ahead,
// and the last, unfinished, is in the editor's line to finish. It
// returns the line and what was typed ahead beyond it, for the next
// prompt. When ctx is done (SIGTERM) it gives up, if the editor reads an
// interruptible input (see promptUntil).
func readLine(ctx context.Context, ln *liner.State, input *os.File, typed string, echo func(string)) (line, ahead string, err error) {
	var b strings.Builder
	prompt := "> "
	for {
		var s string
		if l, rest, entered := strings.Cut(typed, "\n"); entered {
			s, typed = l, rest
			echo(prompt + s + "\n")
		} else {
			s, err = promptUntil(ctx, ln, input, prompt, typed, nil)
			typed = ""
			if err != nil {
				return "", "", err
			}
		}
		if more, ok := strings.CutSuffix(s, `\`); ok {
			b.WriteString(more + "\n")
			prompt = "… "
			continue
		}
		b.WriteString(s)
		return b.String(), typed, nil
	}
}

// historyFile is where the line editor keeps its history: in the store's
// directory, one for every world and chat of the store.
func (r *chatRun) historyFile() string {
	dir := r.a.storeDir
	if dir == "" || strings.Contains(dir, "://") {
		return ""
	}
	return filepath.Join(dir, "history")
}

// pipe reads messages from a stdin that is not a terminal: no banner, no
// prompts, each line a message; run exits with the last turn's code.
func (r *chatRun) pipe(ctx context.Context) error {
	type read struct {
		line string
		err  error
	}
	lines := make(chan read)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		br := bufio.NewReader(r.a.in)
		for {
			line, err := br.ReadString('\n')
			select {
			case lines <- read{line, err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	outcome := agent.OutcomeAnswer
	for {
		// While it waits for the next line, a decision another process
		// sends on a call that waits is taken here (decisions.idle).
		r.dec.setIdle(true)
		var in read
		select {
		case <-ctx.Done():
			// SIGTERM (or Ctrl-C) while run waits for its next line: the
			// read cannot be stopped, but run can end.
			r.dec.setIdle(false)
			if err := endedBy(ctx); err != nil {
				return err
			}
			return &exitStatus{code: exitInterrupted}
		case in = <-lines:
			r.dec.setIdle(false)
		case <-r.dec.wake:
			r.dec.setIdle(false)
			o, ok, err := r.decideHanded(ctx)
			if errors.Is(err, errInterrupted) {
				return &exitStatus{code: exitInterrupted}
			}
			if ok {
				outcome = o
			}
			continue
		}
		line := strings.TrimRight(in.line, "\r\n")
		if strings.TrimSpace(line) != "" {
			if strings.HasPrefix(line, "/") && !strings.HasPrefix(line, "//") {
				quit, err := r.command(ctx, line)
				if err != nil || quit {
					return err
				}
			} else {
				o, err := r.say(ctx, strings.TrimPrefix(line, "/"))
				switch {
				case errors.Is(err, agent.ErrMessageTooLarge):
					// Refused before it was journaled: the next lines go on.
					fmt.Fprintf(r.a.err, "%s: %v\n", r.a.progName(), err)
					o = agent.OutcomeFailed
				case errors.Is(err, errInterrupted):
					return &exitStatus{code: exitInterrupted}
				case err != nil:
					return err
				}
				outcome = o
			}
		}
		if in.err != nil {
			if !errors.Is(in.err, io.EOF) {
				return fmt.Errorf("run: read stdin: %w", in.err)
			}
			break
		}
	}
	if code := exitCode(outcome); code != exitOK {
		return &exitStatus{code: code}
	}
	return nil
}

// decideHanded journals the decisions other processes sent on calls of
// the chat while run waited for its input, each as Chat.Decide does, and
// prints the rest of their turn. ok is false if there were none. A
// decision on a call that no longer waits is not an error here: its
// sender is told.
func (r *chatRun) decideHanded(ctx context.Context) (o agent.Outcome, ok bool, err error) {
	for {
		call, d, found := r.dec.takeAny()
		if !found {
			return o, ok, nil
		}
		o, err = r.turn(ctx, func(ctx context.Context) iter.Seq2[agent.Event, error] { return r.chat.Decide(ctx, call, d) })
		switch {
		case errors.Is(err, agent.ErrNotWaiting):
		case err != nil:
			r.note(fmt.Sprintf("✗ %v", err))
			if errors.Is(err, errInterrupted) || ctx.Err() != nil {
				return o, true, err
			}
		default:
			ok = true
		}
	}
}

// line handles a line typed at the prompt: a command, or a message. It
// reports whether to quit.
func (r *chatRun) line(ctx context.Context, line string) (bool, error) {
	if strings.HasPrefix(line, "/") && !strings.HasPrefix(line, "//") {
		return r.command(ctx, line)
	}
	_, err := r.say(ctx, strings.TrimPrefix(line, "/"))
	if errors.Is(err, agent.ErrMessageTooLarge) {
		r.note(fmt.Sprintf("✗ %v", err)) // the chat goes on as it was
		return false, nil
	}
	return false, err
}

// commands are the slash commands, for /help.
var commands = [][2]string{
	{"/help", "this list"},
	{"/quit", "quit (also /exit, Ctrl-D, or Ctrl-C twice)"},
	{"/tools", "the tools the model is offered"},
	{"/model [NAME]", "the chat's model, or talk to NAME from the next message"},
	{"/cost", "the chat's tokens and cost so far"},
	{"/trace", "the last turn: its model calls and tool calls"},
	{"/show N", "the whole output of the last turn's tool call N"},
	{"/compact", "summarize the oldest part of the transcript now"},
	{"/world", "the world, its store and its journal"},
}

// knownCommand reports whether name (/show) is a slash command.
func knownCommand(name string) bool {
	if name == "/exit" {
		return true
	}
	for _, c := range commands {
		if n, _, _ := strings.Cut(c[0], " "); n == name {
			return true
		}
	}
	return false
}

// slashHelp is what /help prints: the commands, and how to send a line
// that starts with / or to go on on the next line; no line of it is over
// 80 columns (TestHelpText).
func slashHelp() string {
	var b strings.Builder
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-14s %s\n", c[0], c[1])
	}
	b.WriteString("  A line that starts with // is sent as a message starting with /;\n")
	b.WriteString("  end a line with \\ to go on on the next.\n")
	b.WriteString("  Esc or Ctrl-C stops a turn; Ctrl-D quits.\n")
	return b.String()
}

// command runs a slash command. It reports whether to quit.
func (r *chatRun) command(ctx context.Context, line string) (bool, error) {
	name, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/quit", "/exit":
		return true, nil
	case "/help":
		r.write(slashHelp())
	case "/tools":
		var b strings.Builder
		for _, t := range r.w.Tools() {
			desc, _, _ := strings.Cut(t.Description, "\n")
			fmt.Fprintf(&b, "  %-28s %s\n", t.Name, clipLine(desc, max(20, termWidth(r.a.out)-33)))
		}
		r.write(b.String())
	case "/model":
		if arg == "" {
			r.write(fmt.Sprintf("  model %s\n", r.chat.Model()))
			break
		}
		r.chat = r.chat.With(agent.UseModel(arg))
		r.write(fmt.Sprintf("  the next message goes to model %s\n", arg))
	case "/cost":
		st, ok := r.chat.State()
		if !ok {
			r.write("  the chat has no turns yet\n")
			break
		}
		r.write(fmt.Sprintf("  chat %s: %s, %d tokens in (%s), %d out (%d reasoning), %s\n", r.chat.ID(), plural(int(st.LastRequestID), "turn"),
			st.Usage.Prompt, cachedText(st.Usage.Cached, st.Usage.CacheWrite), st.Usage.Completion, st.Usage.Reasoning, costText(st.CostMicroUSD, st.CostUnknown > 0)))
	case "/trace":
		return false, r.trace(ctx)
	case "/show":
		calls, err := r.showable(ctx)
		if err != nil {
			return false, err
		}
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 || n > len(calls) {
			switch st, ok := r.chat.State(); {
			case len(calls) == 0 && !r.turned && ok && st.Turn != nil:
				// A turn under way that this process did not show (run -m
				// "/show N" while it waits for approval): its calls are
				// in the journal, not in this run's stream.
				r.write(fmt.Sprintf("  /show N shows the calls of a turn that ended; turn %d is under way: demiurge trace --world %s shows its calls so far\n", st.Turn.RequestID, shellQuote(r.w.Name())))
			case len(calls) == 0:
				r.write("  /show N shows the output of the last turn's tool call N: the last turn made no tool calls\n")
			case len(calls) == 1:
				r.write("  /show N: N is a tool call of the last turn, which made one: /show 1\n")
			default:
				r.write(fmt.Sprintf("  /show N: N is a tool call of the last turn, 1 to %d\n", len(calls)))
			}
			break
		}
		e := calls[n-1]
		out, err := r.chat.Output(ctx, e)
		if err != nil {
			return false, err
		}
		r.write(fmt.Sprintf("  %s (%s):\n%s\n", e.Tool, e.Status, strings.TrimRight(out, "\n")))
	case "/compact":
		if r.w.Module() == demiurge.ModuleNameV1 {
			r.write(fmt.Sprintf("  this world's chat (%s) cannot compact; %s can\n", r.w.Module(), demiurge.ModuleName))
			break
		}
		_, err := r.turn(ctx, r.chat.Compact)
		return false, err
	case "/world":
		head := r.w.World().Head()
		r.write(fmt.Sprintf("  world %s (%s), chat %s, model %s; store %s; journal at record %d\n",
			r.w.Name(), r.w.Module(), r.chat.ID(), r.chat.Model(), r.a.storeName(), head.Seq))
	default:
		r.write(fmt.Sprintf("  unknown command %s: /help lists them (start the line with // to send it to the model)\n", name))
	}
	return false, nil
}

// approveHint is the command that answers call: demiurge approve (or
// deny) with the flags this run was given that the rest of the turn
// needs, for approve goes on with it (the model is called again): the
// store, --llm, --model, --base-url and what else says how the model is
// called. Pasted as it is, it runs the turn on as this run would have.
func (r *chatRun) approveHint(call string) string {
	words := []string{r.a.progName(), "approve", "(or", "deny)", shellQuote(r.f.manifest), call, "--world", shellQuote(r.f.world), "--chat", shellQuote(r.chat.ID())}
	if r.a.storeGiven {
		words = append(words, "--store", shellQuote(r.a.storeName()))
	}
	f := r.f
	for _, fl := range []struct{ name, v string }{{"--llm", f.llm}, {"--model", f.model}, {"--base-url", f.baseURL}, {"--temperature", f.temperature}} {
		if fl.v != "" {
			words = append(words, fl.name, shellQuote(fl.v))
		}
	}
	for _, o := range f.modelOptions {
		words = append(words, "--model-option", shellQuote(o))
	}
	if f.cassetteLoose {
		words = append(words, "--cassette-loose")
	}
	if f.noStream {
		words = append(words, "--no-stream")
	}
	return strings.Join(words, " ")
}

// showable returns the tool calls /show numbers: those of the last turn
// this process showed, or, before it showed one (run -m "/show 3" after
// the run whose turn printed the hint), those of the chat's last turn
// that ended, read from the journal and numbered as the run that showed
// it numbered them (Watch yields the same events in the same order).
func (r *chatRun) showable(ctx context.Context) ([]agent.ToolCallFinished, error) {
	if r.turned {
		return r.calls, nil
	}
	st, ok := r.chat.State()
	if !ok || st.LastRequestID == 0 || (st.Turn != nil && st.Turn.RequestID == st.LastRequestID) {
		return r.calls, nil // no turn yet, or the last one is under way
	}
	var calls []agent.ToolCallFinished
	for e, err := range r.chat.Watch(ctx, st.LastRequestID) {
		if err != nil {
			return nil, err
		}
		switch e := e.(type) {
		case agent.ToolCallFinished:
			calls = append(calls, e)
		case agent.TurnEnd:
			return calls, nil
		}
	}
	return calls, nil
}

// trace prints the chat's last turn as trace shows it.
func (r *chatRun) trace(ctx context.Context) error {
	rd := session.NewReader(r.w.Storage().CAS())
	if err := r.w.Storage().Journal().Read(ctx, r.w.Name(), 1, rd.Record); err != nil {
		return err
	}
	var last *session.Turn
	for _, t := range rd.Turns() {
		if t.Chat == r.chat.ID() {
			last = t
		}
	}
	if last == nil {
		r.write("  the chat has no turns yet\n")
		return nil
	}
	var b strings.Builder
	if err := writeTurns(&b, []*session.Turn{last}); err != nil {
		return err
	}
	r.write(b.String())
	return nil
}

// note prints a line about the run itself.
func (r *chatRun) note(s string) {
	if !r.f.json {
		r.write("  " + s + "\n")
	}
}

// write writes to stdout, clearing the progress line first. What it
// writes may hold text from the model, tools and errors: its control
// characters are shown escaped, unless --raw (see escapeControls).
func (r *chatRun) write(s string) {
	if !r.f.raw {
		s = escapeControls(s)
	}
	r.writeRaw(s)
}

// writeRaw writes s to stdout as it is (run's own control sequences),
// clearing the progress line first.
func (r *chatRun) writeRaw(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status.clearLocked()
	io.WriteString(r.a.out, s)
}

// roundDuration formats d to a precision that fits it: 2ms, 0.35ms, 41µs.
func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	case d >= 100*time.Microsecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return d.Round(time.Microsecond).String()
}

// previewLines is how many lines of a tool's output run shows (all with
// -v, or with /show N).
const previewLines = 3

// print prints one event of a turn.
func (r *chatRun) print(ctx context.Context, e agent.Event) {
	switch e := e.(type) {
	case agent.TextDelta:
		s := e.Text
		if !r.streamed {
			s = "\n" + s
		}
		r.streamed, r.answered = true, true
		r.write(s)
		r.status.quiet()
	case agent.Message:
		switch {
		case e.Role == "user":
			if r.f.message != "" || !r.termIn {
				r.write(fmt.Sprintf("> %s\n", e.Text))
			}
		case r.streamed:
			r.write("\n")
		default:
			r.write(fmt.Sprintf("\n%s\n", e.Text))
		}
		if e.Role == "assistant" {
			r.streamed, r.answered = false, r.answered || e.Text != ""
		}
	case agent.ModelCall:
	case agent.ToolCallStarted:
		r.shown[e.CallID] = e
		switch e.Status {
		case "requested":
			r.started[e.CallID] = true
			r.running[e.CallID] = e.Tool
			r.write(fmt.Sprintf("  → %s %s\n", e.Tool, clipLine(argsText(e.Arguments), 160)))
			r.status.set("running " + r.runningTools())
		case "rejected":
			r.write(fmt.Sprintf("  ✗ %s %s (rejected before running)\n", e.Tool, clipLine(argsText(e.Arguments), 160)))
		case "cut":
			r.write(fmt.Sprintf("  ✗ %s %s (cut off with the reply; not run)\n", e.Tool, clipLine(argsText(e.Arguments), 160)))
		case "approval":
			r.write(fmt.Sprintf("  ? %s %s (waits for your approval)\n", e.Tool, clipLine(argsText(e.Arguments), 160)))
		default:
			r.write(fmt.Sprintf("  · %s %s (%s)\n", e.Tool, clipLine(argsText(e.Arguments), 160), e.Status))
		}
	case agent.ToolCallFinished:
		r.calls = append(r.calls, e)
		delete(r.running, e.CallID)
		d := ""
		if r.started[e.CallID] {
			d = " in " + roundDuration(e.Duration)
			delete(r.started, e.CallID)
		}
		if e.Status == "ok" {
			r.write(fmt.Sprintf("  ✓ %s%s (%d bytes)\n", e.Tool, d, e.Size))
			r.write(r.preview(ctx, e, len(r.calls)))
		} else {
			r.write(fmt.Sprintf("  ✗ %s %s%s: %s\n", e.Tool, e.Status, d, clipLine(statusDetail(e.Status, e.Output), 200)))
		}
		if len(r.running) > 0 {
			r.status.set("running " + r.runningTools())
		} else {
			r.status.set(waitingModel)
		}
	case agent.ApprovalRequested:
		// The approver asks (or says where to answer).
	case agent.ApprovalDecided:
		if e.Approved {
			r.started[e.CallID] = true
			r.running[e.CallID] = e.Tool
			r.status.set("running " + r.runningTools())
		}
		if pid, elsewhere := r.dec.decided(e); elsewhere {
			r.write("  " + decidedLine(e.Tool, e.Approved, e.Reason, pid) + "\n")
			break
		}
		what := "approved"
		switch {
		case e.TimedOut:
			what = "timed out, denied"
		case !e.Approved:
			what = "denied"
		}
		if e.Reason != "" {
			what += ": " + e.Reason
		}
		r.write(fmt.Sprintf("  · %s %s\n", e.Tool, what))
	case agent.Notice:
		r.write(fmt.Sprintf("  ! %s\n", e.Text))
	case agent.Compacted:
		r.write(fmt.Sprintf("  ⇢ %s\n", e.Text))
	case agent.GuardStop:
		r.newline()
		r.write(fmt.Sprintf("  ■ turn stopped: %s\n", e.Reason))
	case agent.TurnError:
		r.newline()
		r.write(fmt.Sprintf("  ✗ %s\n", e.Text))
	case agent.TurnEnd:
		r.newline()
		r.status.off()
		if e.Outcome == agent.OutcomeAwaitingApproval {
			for _, p := range r.chat.Pending(ctx) {
				r.write(fmt.Sprintf("  ? %s %s waits for approval: %s\n",
					p.Tool, clipLine(argsText(p.Arguments), 120), r.approveHint(p.CallID)))
			}
		}
		switch f := e.Finish; f {
		case "":
		case "stop":
			if !r.answered && e.Outcome == agent.OutcomeAnswer && e.Summary != "compacted" {
				r.write("  (the model answered with no text)\n")
			}
			r.write(fmt.Sprintf("  — %s\n", e.Summary))
		case "refusal":
			r.write(fmt.Sprintf("  — the model refused; %s\n", e.Summary))
		default:
			r.write(fmt.Sprintf("  ✗ the answer is incomplete: %s; %s\n", finishText(f), e.Summary))
		}
	}
}

// newline ends streamed text, so what follows starts a line.
func (r *chatRun) newline() {
	if r.streamed {
		r.write("\n")
	}
	r.streamed = false
}

// runningTools names the calls running.
func (r *chatRun) runningTools() string {
	var names []string
	for _, t := range r.running {
		names = append(names, t)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// preview is the first lines of a call's output (all of it with -v).
func (r *chatRun) preview(ctx context.Context, e agent.ToolCallFinished, n int) string {
	out := e.Output
	cut := e.Size > len(e.Output) // the event holds the output's start
	if r.a.verbose || cut {
		// The whole: all of it is shown with -v, and the lines left out
		// are counted in it (the event's preview holds only some of them).
		if whole, err := r.chat.Output(ctx, e); err == nil {
			out, cut = whole, false
		}
	}
	out = strings.TrimRight(out, "\n")
	if out == "" {
		return ""
	}
	lines := strings.Split(out, "\n")
	var b strings.Builder
	for i, l := range lines {
		if i == previewLines && !r.a.verbose {
			if cut { // the whole could not be read: its lines are not known
				fmt.Fprintf(&b, "    │ … (%d bytes in all: %s)\n", e.Size, r.showHint(n))
			} else {
				fmt.Fprintf(&b, "    │ … %s more (%s)\n", plural(len(lines)-i, "line"), r.showHint(n))
			}
			return b.String()
		}
		if !r.a.verbose {
			l = clipLine(l, 120)
		}
		fmt.Fprintf(&b, "    │ %s\n", l)
	}
	if !r.a.verbose && len(lines) <= previewLines && e.Size > len(e.Output) {
		fmt.Fprintf(&b, "    │ … (%d bytes in all: %s)\n", e.Size, r.showHint(n))
	}
	return b.String()
}

// showHint is how to see call n's whole output: "/show N" at the
// prompt; after run -m in a world or chat other than the default, the
// flags that name them too (-m "/show N" --world W --chat C), since run
// -m "/show N" without them reads world main's chat main (a cassette's
// second run goes to main-2).
func (r *chatRun) showHint(n int) string {
	show := fmt.Sprintf("/show %d", n)
	if r.f.message == "" {
		return show
	}
	var flags string
	if r.f.world != defaultWorld {
		flags += " --world " + shellQuote(r.f.world)
	}
	if id := r.chat.ID(); id != defaultChat {
		flags += " --chat " + shellQuote(id)
	}
	if flags == "" {
		return show
	}
	return fmt.Sprintf("-m %q%s", show, flags)
}

// statusLine is the one-line progress shown on a terminal while a model
// call or a tool runs: what runs and for how long, redrawn in place and
// cleared before anything else is written.
type statusLine struct {
	out   io.Writer
	mu    *sync.Mutex // the chat's output lock
	what  string
	since time.Time
	drawn bool
	stop  chan struct{}
	// hint says how to stop the turn; override, if set, may say what
	// happens instead of what (see chatRun.statusOverride).
	hint     string
	override func(what string) string
}

// spinner is the status line's animation.
var spinner = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// set shows what runs from now on.
func (s *statusLine) set(what string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.what == what && s.stop != nil {
		return
	}
	s.what, s.since = what, time.Now()
	if s.stop == nil {
		s.stop = make(chan struct{})
		go s.tick(s.stop)
	}
}

// quiet hides the line until the next set (text is streaming).
func (s *statusLine) quiet() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearLocked()
	s.what = ""
}

// off hides the line and stops it.
func (s *statusLine) off() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearLocked()
	s.what = ""
	if s.stop != nil {
		close(s.stop)
		s.stop = nil
	}
}

// clearLocked erases the line if it is drawn; the caller holds s.mu.
func (s *statusLine) clearLocked() {
	if s == nil || !s.drawn {
		return
	}
	io.WriteString(s.out, "\r\x1b[K")
	s.drawn = false
}

func (s *statusLine) tick(stop chan struct{}) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		if s.what != "" && time.Since(s.since) > 300*time.Millisecond {
			what := s.what
			if s.override != nil {
				what = s.override(what)
			}
			line := fmt.Sprintf("%c %s %.1fs", spinner[i%len(spinner)], what, time.Since(s.since).Seconds())
			if s.hint != "" {
				line += " · " + s.hint
			}
			fmt.Fprintf(s.out, "\r\x1b[K%s", line)
			s.drawn = true
		}
		s.mu.Unlock()
	}
}

// editor returns the line editor, made on first use (a terminal only).
func (r *chatRun) editor() *liner.State {
	if r.ln == nil {
		r.ln = newEditor(r.input)
		r.ln.SetCtrlCAborts(true)
	}
	return r.ln
}

// approver answers a call that waits for approval as --approve says: at
// the terminal (ask), or always, or never. Without a terminal to ask, the
// call waits (run ends with exit code 5; demiurge approve answers). A
// decision another process sends for the call (demiurge approve beside
// this run) ends the question: whichever of the two comes first is the
// answer.
func (r *chatRun) approver(ctx context.Context, ar agent.ApprovalRequested) (agent.Decision, bool) {
	switch r.f.approve {
	case "always":
		return agent.Decision{Approve: true, Reason: "approved by --approve always"}, true
	case "never":
		return agent.Decision{Reason: "the user denies every call that needs approval (--approve never)"}, true
	}
	if !r.asks() {
		return agent.Decision{}, false
	}
	if d, ok := r.dec.take(ar.CallID); ok { // sent before the question was asked
		return d, true
	}
	r.status.quiet()
	// The question reads the terminal: Esc is not watched meanwhile.
	r.stopEsc(true)
	defer r.resumeEsc()
	ln := r.editor()
	until := ""
	if !ar.Deadline.IsZero() {
		until = fmt.Sprintf(" (denied at %s unless you answer)", ar.Deadline.Local().Format(time.TimeOnly))
	}
	question := fmt.Sprintf("  ? run %s %s?%s [y]es, [n]o (n REASON), [a]lways for %s: ", ar.Tool, clipLine(argsText(ar.Arguments), 120), until, ar.Tool)
	if !r.f.raw {
		question = escapeControls(question)
	}
	for {
		s, err := promptUntil(ctx, ln, r.input, question, "", r.dec.wake)
		switch {
		case errors.Is(err, errPromptStopped):
			if d, ok := r.dec.take(ar.CallID); ok {
				r.write("\n")
				return d, true
			}
			r.writeRaw("\r\x1b[K") // a decision for another call, which waits its turn: ask again
			continue
		case ctx.Err() != nil:
			r.write("\n")
			return agent.Decision{}, false
		case errors.Is(err, liner.ErrPromptAborted) && r.a.interrupts != nil:
			// Ctrl-C at the question stops the turn, as it does anywhere
			// in a turn: the call is not run, nor is the model asked again.
			r.write("\n")
			r.a.interrupts.fire()
			select { // the turn's context ends: the stream stops the turn
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
			}
			return agent.Decision{}, false
		case err != nil:
			// Ctrl-D at the question: no, and the turn goes on.
			return r.local(ar, agent.Decision{Reason: "the user did not approve it"})
		}
		answer, reason, _ := strings.Cut(strings.TrimSpace(s), " ")
		switch strings.ToLower(answer) {
		case "y", "yes":
			return r.local(ar, agent.Decision{Approve: true})
		case "a", "always":
			return r.local(ar, agent.Decision{Approve: true, Always: true, Reason: "approved for the session"})
		case "n", "no":
			return r.local(ar, agent.Decision{Reason: cmp.Or(strings.TrimSpace(reason), "the user said no")})
		}
	}
}

// deadlineNote says when a call that waits for approval times out.
func deadlineNote(deadline, now time.Time) string {
	switch {
	case deadline.IsZero():
		return ""
	case now.Before(deadline):
		return fmt.Sprintf("  (denied at %s unless answered)", deadline.Local().Format(time.DateTime))
	}
	return fmt.Sprintf("  (timed out at %s: any decision now denies it)", deadline.Local().Format(time.DateTime))
}

// local returns the terminal's answer d on ar's call, unless another
// process's decision came first: then that one.
func (r *chatRun) local(ar agent.ApprovalRequested, d agent.Decision) (agent.Decision, bool) {
	if r.dec.answered(ar.CallID) {
		return d, true
	}
	if other, ok := r.dec.take(ar.CallID); ok {
		return other, true
	}
	return d, true
}

// answer answers a call that waits for approval (demiurge approve, deny)
// and prints the rest of its turn; with no call named, it lists the calls
// that wait.
func (r *chatRun) answer(ctx context.Context, d *decision) error {
	if d.call == "" {
		pending := r.chat.Pending(ctx)
		if r.f.json {
			list := []pendingJSON{}
			for _, p := range pending {
				pj := pendingJSON{CallID: p.CallID, Tool: p.Tool, Arguments: p.Arguments}
				if !p.Deadline.IsZero() {
					pj.Deadline = p.Deadline.UTC().Format(time.RFC3339Nano)
				}
				list = append(list, pj)
			}
			return writeJSON(r.a.out, list)
		}
		if len(pending) == 0 {
			r.write(fmt.Sprintf("no call of chat %s of world %s waits for approval (--world and --chat pick another)\n", r.chat.ID(), r.f.world))
		}
		now := time.Now
		if r.a.clock != nil {
			now = r.a.clock
		}
		for _, p := range pending {
			r.write(fmt.Sprintf("%s  %s %s%s\n", p.CallID, p.Tool, argsText(p.Arguments), deadlineNote(p.Deadline, now())))
		}
		return nil
	}
	outcome, err := r.turn(ctx, func(ctx context.Context) iter.Seq2[agent.Event, error] { return r.chat.Decide(ctx, d.call, d.Decision) })
	switch {
	case errors.Is(err, agent.ErrNotWaiting):
		return usagef("%v (demiurge approve %s --world %s --chat %s lists the calls that wait)", err, r.f.manifest, r.f.world, r.chat.ID())
	case errors.Is(err, errInterrupted):
		return &exitStatus{code: exitInterrupted}
	case err != nil:
		return err
	}
	if code := exitCode(outcome); code != exitOK {
		return &exitStatus{code: code}
	}
	return nil
}
