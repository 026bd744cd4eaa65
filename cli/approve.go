package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/world"
)

// newDecideCommand returns demiurge approve (approve true) or deny.
func newDecideCommand(a *app, getenv func(string) string, approve bool) *cobra.Command {
	f := &runFlags{decide: &decision{}}
	f.decide.Approve = approve
	name, verb := "approve", "Approve"
	if !approve {
		name, verb = "deny", "Deny"
	}
	cmd := &cobra.Command{
		Use:   name + " MANIFEST [CALL] [--reason TEXT] [--world W] [--chat ID] [run's model flags]",
		Short: verb + " a tool call that waits for the user's approval, and run the rest of its turn",
		Long: verb + ` a tool call of chat ID (--chat, default main) of world W that waits for
the user's approval (run --require-approval TOOL made it wait). The decision
is journaled: the call runs, or the model reads that the user denied it and
why (--reason). Without CALL, the calls that wait are listed (read beside a
running demiurge run, through it); none waiting in that chat is an error
(exit 1) that names the chats where calls wait (--json: [] and exit 0).

While a "demiurge run" of the world holds the store (at its prompt, or
asking at its terminal about this very call), or a "demiurge serve", the
decision is sent to it through the store's socket: that process journals
it, as it would its terminal's answer (or POST …/approvals/CALL), stops
asking, and goes on with the turn; this command says which process took
it and exits 0. A call that does not wait (decided
already, unknown: the calls that wait are listed), a world that process
does not run, or a process that takes no decisions is an error.

When no process holds the store, this command opens it, journals the
decision and runs the rest of the turn as "demiurge run -m" does, with the
model and limits the flags give (the same flags as run). Exit codes as
run -m's.

With --json: the list is one JSON document, an array of the calls that
wait, [{"call_id", "tool", "arguments", "deadline" (RFC 3339, if the call
times out)}] ([] for none); a decision another process journaled is one
object, {"call_id", "tool", "approved", "reason", "seq" (the record),
"writer" (its process)}; a turn this command runs prints its events as
run --json does (docs/cli.md).`,
		Example: "  demiurge " + name + " examples/demiurge                      # list the calls that wait\n" +
			"  demiurge " + name + " examples/demiurge call_abc123 --reason 'not now'",
		Args: wantArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.manifest = args[0]
			if len(args) == 2 {
				f.decide.call = args[1]
			}
			a.raw = f.raw
			if err := f.validate(cmd); err != nil {
				return err
			}
			if err := f.check(true); err != nil {
				return err
			}
			// The manifest comes first: a call id in its place would
			// otherwise list the calls and look as if it had decided one.
			if _, err := os.Stat(f.manifest); err != nil && f.decide.call == "" {
				return usagef("%s: no manifest at %s (%s MANIFEST [CALL]: the world's AIR first, then the call)", name, f.manifest, name)
			}
			if !store.IsURL(a.storeDir) {
				if f.decide.call == "" {
					return a.listPending(cmd.Context(), f)
				}
				done, err := a.sendDecision(cmd.Context(), f)
				if done || err != nil {
					return err
				}
			}
			err := a.run(cmd.Context(), f, getenv)
			if errors.Is(err, store.ErrLocked) {
				return fmt.Errorf("%s: no process that runs the world serves store %s, and another holds it (one that reads it, such as demiurge replay, or a demiurge older than this one); try again once it has finished: %w", name, a.storeName(), err)
			}
			return err
		},
	}
	f.addFlags(cmd)
	cmd.Flags().StringVar(&f.decide.Reason, "reason", "", "why: what the model reads of a denial, and what the journal keeps")
	return cmd
}

// decisionWait bounds how long approve waits for the process that runs
// the world to journal a decision.
const decisionWait = time.Minute

// sendDecision sends the decision to the process that writes the store,
// if one serves it; done is false when none does (the caller then opens
// the store itself).
func (a *app) sendDecision(ctx context.Context, f *runFlags) (done bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, decisionWait)
	defer cancel()
	d := f.decide
	res, err := store.SendApproval(ctx, a.storeDir, store.Approval{World: f.world, Chat: f.chat, Call: d.call, Approve: d.Approve, Reason: d.Reason})
	verb := "deny"
	if d.Approve {
		verb = "approve"
	}
	switch {
	case errors.Is(err, store.ErrOtherUser):
		return true, fmt.Errorf("%s: %w", verb, err)
	case errors.Is(err, store.ErrNoWriter):
		a.log.Debug("no process serves the store: journaling the decision here", "dir", a.storeName(), "err", err)
		return false, nil
	case errors.Is(err, store.ErrNotWaiting):
		return true, usagef("%v (demiurge %s MANIFEST --world %s --chat %s lists the calls that wait)", err, verb, f.world, f.chat)
	case errors.Is(err, store.ErrNoApprovals):
		return true, fmt.Errorf("%s: %w; answer where that process asks (the terminal of a demiurge run; a demiurge serve takes POST /v1/worlds/%s/chats/%s/approvals/%s), or once it has stopped", verb, err, f.world, f.chat, d.call)
	case errors.Is(err, context.DeadlineExceeded):
		return true, fmt.Errorf("%s: the process that writes store %s did not journal the decision within %s; demiurge %s MANIFEST lists the calls that still wait", verb, a.storeName(), decisionWait, verb)
	case err != nil:
		return true, fmt.Errorf("%s call %s of chat %s in world %s: %w", verb, d.call, f.chat, f.world, err)
	}
	if f.json {
		return true, writeJSON(a.out, struct {
			CallID   string `json:"call_id"`
			Tool     string `json:"tool"`
			Approved bool   `json:"approved"`
			Reason   string `json:"reason,omitempty"`
			Seq      uint64 `json:"seq"`
			Writer   int    `json:"writer"`
		}{d.call, res.Tool, d.Approve, d.Reason, res.Seq, res.Writer})
	}
	what := "approved"
	if !d.Approve {
		what = "denied"
		if d.Reason != "" {
			what += " (" + d.Reason + ")"
		}
	}
	fmt.Fprintf(a.out, "%s call %s (%s) of chat %s in world %s: process %d, which runs the world, journaled it at record %d and goes on with the turn\n",
		what, d.call, res.Tool, f.chat, f.world, res.Writer, res.Seq)
	return true, nil
}

// listPending lists the calls of the chat that wait for approval, read
// from the store (through the process that writes it, if one does), as
// the chat's newest state holds them.
func (a *app) listPending(ctx context.Context, f *runFlags) (err error) {
	s, err := a.openStore(ctx, true)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	defer func() { err = explainMissing(ctx, s, err) }()
	head, err := s.Journal().Head(ctx, f.world)
	if err != nil {
		return err
	}
	if head.Seq == 0 {
		return fmt.Errorf("%s: %w", f.command(), noRecords(ctx, s, f.world))
	}
	all, err := pendingByChat(ctx, s.Journal(), s.CAS(), f.world)
	if err != nil {
		return err
	}
	calls := all[f.chat]
	if f.json {
		list := []pendingJSON{}
		for _, c := range calls {
			p := pendingJSON{CallID: c.id, Tool: c.tool, Arguments: c.args}
			if !c.deadline.IsZero() {
				p.Deadline = c.deadline.UTC().Format(time.RFC3339Nano)
			}
			list = append(list, p)
		}
		return writeJSON(a.out, list)
	}
	if len(calls) == 0 {
		// Nothing to decide is a failure (the call the user meant is
		// elsewhere): say where calls do wait.
		return fmt.Errorf("%s: no call of chat %s of world %s waits for approval%s", f.command(), f.chat, f.world, waitingElsewhere(all, f))
	}
	now := time.Now
	if a.clock != nil {
		now = a.clock
	}
	for _, c := range calls {
		line := fmt.Sprintf("%s  %s %s%s\n", c.id, c.tool, argsText(c.args), deadlineNote(c.deadline, now()))
		if !f.raw {
			line = escapeControls(line) // the model's arguments
		}
		io.WriteString(a.out, line)
	}
	return nil
}

// pendingJSON is a call that waits, as approve --json lists it.
type pendingJSON struct {
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	Deadline  string `json:"deadline,omitempty"`
}

// pendingCall is a call that waits for approval.
type pendingCall struct {
	id, tool, args string
	deadline       time.Time // when it times out; zero for never
}

// waitingElsewhere says, for a listing of chat f.chat that found no call
// waiting, which chats of the world have calls that do, and the command
// that lists them; or, if none has, how to pick another world.
func waitingElsewhere(all map[string][]pendingCall, f *runFlags) string {
	chats := slices.Sorted(maps.Keys(all))
	chats = slices.DeleteFunc(chats, func(c string) bool { return len(all[c]) == 0 })
	if len(chats) == 0 {
		return ", nor any call of its other chats (--world picks another world)"
	}
	var b strings.Builder
	for i, c := range chats {
		if i > 0 {
			b.WriteString("; ")
		}
		n := len(all[c])
		fmt.Fprintf(&b, "chat %s has %s that %s (demiurge %s %s --world %s --chat %s lists %s)", shellQuote(c), plural(n, "call"), map[bool]string{true: "waits", false: "wait"}[n == 1],
			f.command(), shellQuote(f.manifest), shellQuote(f.world), shellQuote(c), map[bool]string{true: "it", false: "them"}[n == 1])
		if i == 2 && len(chats) > 3 {
			fmt.Fprintf(&b, "; and %d more chats", len(chats)-3)
			break
		}
	}
	return "; " + b.String()
}

// pendingCalls returns the calls of chat that wait for approval in the
// newest state the journal of world holds of it (what agent.Chat.Pending
// returns in the process that runs the world).
func pendingCalls(ctx context.Context, j journal.Reader, g cas.Getter, name, chat string) ([]pendingCall, error) {
	all, err := pendingByChat(ctx, j, g, name)
	return all[chat], err
}

// pendingByChat returns the calls that wait for approval in each chat of
// world name, as pendingCalls does for one.
func pendingByChat(ctx context.Context, j journal.Reader, g cas.Getter, name string) (map[string][]pendingCall, error) {
	type newestState struct {
		ref     cas.Ref
		written string // the module of the newest state
	}
	newest := map[string]newestState{}
	var running string // the chat module of the newest manifest
	err := j.Read(ctx, name, 1, func(r journal.Record) error {
		if r.Kind == world.KindManifest {
			in, err := world.DecodeInput(r)
			if err != nil {
				return err
			}
			running = session.ChatModule(ctx, g, in.Manifest)
			return nil
		}
		if r.Kind != world.KindState {
			return nil
		}
		sr, err := world.DecodeState(r)
		if err != nil {
			return err
		}
		if chat, ok := sr.Key.(string); ok && demiurge.IsModule(sr.Reducer) {
			newest[chat] = newestState{sr.State, sr.Reducer}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read world %s: %w", name, err)
	}
	out := map[string][]pendingCall{}
	for chat, n := range newest {
		calls, err := chatPending(ctx, g, running, n.written, chat, n.ref)
		if err != nil {
			return nil, err
		}
		out[chat] = calls
	}
	return out, nil
}

// chatPending returns the calls that wait for approval in chat's newest
// state (newest, of module written; running is the chat module of the
// world's newest manifest).
func chatPending(ctx context.Context, g cas.Getter, running, written, chat string, newest cas.Ref) ([]pendingCall, error) {
	var st demiurge.StateView
	if err := cas.GetNode(ctx, g, newest, &st); err != nil {
		return nil, fmt.Errorf("read the state of chat %s: %w", chat, err)
	}
	if v, ok := session.ImportedState(g, running, written, chat, newest); ok {
		st = *v // Chat@3 stops the turn Chat@2 left: no call of it waits
	}
	if st.Turn == nil {
		return nil, nil
	}
	var out []pendingCall
	for _, c := range st.Turn.Calls {
		if c.Status != "approval" {
			continue
		}
		pc := pendingCall{id: c.CallID, tool: c.Tool}
		if c.DeadlineNS != 0 && c.DeadlineNS <= math.MaxInt64 {
			pc.deadline = time.Unix(0, int64(c.DeadlineNS))
		}
		if c.RequestRef != nil {
			var req demiurge.ToolCallRequested
			if err := cas.GetNode(ctx, g, *c.RequestRef, &req); err == nil {
				pc.args = req.ArgumentsJSON
			}
		}
		out = append(out, pc)
	}
	return out, nil
}
