package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/agent/session/otlp"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/replay"
)

func newTraceCommand(a *app) *cobra.Command {
	var (
		wf      worldFlags
		asJSON  bool
		records bool
		follow  bool
		raw     bool
		opts    traceOptions
	)
	cmd := &cobra.Command{
		Use:   "trace [BUNDLE | --world W [--follow]] [--json | --otlp FILE] [--chat ID]",
		Short: "Print a session as a timeline",
		Long: `Print the journal of world W of the store, or of a bundle directory.

For an agent world (one with demiurge chats), trace shows the session as
turns: what the user said, each model call of the turn (model, latency,
tokens, cost, why it stopped), the tool calls the model made with their
arguments and results or errors (with durations, and the commands of bash
scripts), rejected calls, and the guards that stopped a turn. With --json,
one JSON object per turn.

Otherwise, or with --records, it prints every record as a timeline: the
events that came in with their time, what each caused (reducer states,
events, plans started and ended, effects and their receipts, denials), one
record a line; with --json, one JSON object per record with its seq, kind,
hash and decoded payload.

With --chat ID, only the turns of that chat are shown.

With --otlp FILE (- for standard output), trace writes the turns of an agent
world as OpenTelemetry spans instead, in the OTLP/JSON file format (one line,
a TracesData object) that tracing UIs and the OpenTelemetry Collector read.
The spans follow the GenAI semantic conventions: a trace a turn, whose span
"invoke_agent WORLD" has a child "chat MODEL" for each model call (provider,
models, tokens, finish reasons, errors) and "execute_tool TOOL" for each tool
call (its id and status, an error status if it failed, was denied or was not
run); demiurge.* attributes give the journal seqs and the cost in USD. The
times are the journal's stamps and the ids are hashes of what the journal
says, so the same journal gives the same file byte for byte. The messages,
tool arguments and results are left out unless --otlp-content is given.
With --follow, each turn is written as a line of its own once it has ended
(the file starts empty), for a collector's otlpjsonfile receiver to tail.

Control characters in what the model, the tools and errors said (escape
sequences that a terminal would obey: OSC 52 writes the clipboard) are
shown escaped, as \x1b; --raw prints them as they are.

Trace needs no AIR (it takes no --manifest): the records, and the blobs
they name, are all in the store or the bundle. Opens the store read-only.

With --follow (-f), trace goes on printing what is committed to the world as
it lands, until Ctrl-C: the lines of a turn as its model and tool calls
finish (with --json, each turn once it has ended), or each record. It works
while another process writes the store (a running "demiurge run"), reading
through that process what it has made durable; when that process stops, it
says so on stderr and reads on from the file, and from the next process that
writes the store.`,
		Example: `  demiurge trace
  demiurge trace --json | jq -c '{request_id, user}'
  demiurge trace testdata/sessions/demo --records
  demiurge trace --follow
  demiurge trace --world main --chat main --otlp session.otlp.json
  demiurge trace --follow --otlp spans.jsonl   # a line a turn, as turns end`,
		Args: wantArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			ctx := cmd.Context()
			a.raw = raw
			if !asJSON && opts.OTLP == "" {
				// Text for a terminal: what the model and the tools said
				// shows its control characters escaped (escapeControls).
				a.out = textOut(a.out, raw)
				defer flushOut(a.out)
			}
			opts.JSON, opts.Records, opts.errOut = asJSON, records, a.err
			if opts.OTLP != "" || opts.Content {
				switch {
				case opts.OTLP == "":
					return usagef("trace: --otlp-content goes with --otlp FILE")
				case records || asJSON:
					return usagef("trace: --otlp writes spans: it goes with neither --records nor --json")
				}
			}
			if opts.Chat != "" && (follow || records) {
				return usagef("trace: --chat picks the turns of a chat: it goes with neither --follow nor --records")
			}
			if len(args) == 1 {
				if cmd.Flags().Changed("world") {
					return usagef("trace: give a bundle directory or --world, not both")
				}
				if follow {
					return usagef("trace: --follow follows a world of the store; a bundle does not grow")
				}
				b, err := replay.Read(args[0])
				if err != nil {
					return err
				}
				st, err := b.Storage(ctx)
				if err != nil {
					return err
				}
				return trace(ctx, a.out, st.Journal(), st.CAS(), b.Manifest.World, opts)
			}
			if err := wf.check(false); err != nil {
				return err
			}
			if follow {
				return followTrace(ctx, a, wf.world, asJSON, records, opts)
			}
			s, err := a.openStore(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer closeStore(s, &err)
			defer func() { err = explainMissing(cmd.Context(), s, err) }()
			head, err := s.Journal().Head(ctx, wf.world)
			if err != nil {
				return err
			}
			if head.Seq == 0 {
				return fmt.Errorf("trace: %w", noRecords(ctx, s, wf.world))
			}
			// The trace shows what it can without the blobs it cannot read
			// (a store imported from a trimmed bundle lacks some), and then
			// fails if that was because the store is damaged.
			g := &notingGetter{Getter: s.CAS()}
			if err := trace(ctx, a.out, s.Journal(), g, wf.world, opts); err != nil {
				return err
			}
			return g.check(ctx, s, "trace")
		},
	}
	wf.add(cmd, "")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per turn (or per record)")
	cmd.Flags().BoolVar(&raw, "raw", false, "print the model's text, tools' outputs and errors as they are, terminal control sequences included (default: shown escaped, as \\x1b)")
	cmd.Flags().BoolVar(&records, "records", false, "print every record, even for an agent world")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "go on printing what is committed as it lands, until Ctrl-C")
	cmd.Flags().StringVar(&opts.Chat, "chat", "", "only the turns of the chat `ID`")
	cmd.Flags().StringVar(&opts.OTLP, "otlp", "", "write the turns as OpenTelemetry spans (OTLP/JSON) to `FILE` (- for stdout)")
	cmd.Flags().BoolVar(&opts.Content, "otlp-content", false, "put the messages, tool arguments and results in the spans")
	return cmd
}

// traceOptions are what trace prints, and how.
type traceOptions struct {
	JSON    bool   // one JSON object a turn (or a record)
	Records bool   // the records, even of an agent world
	Chat    string // only the turns of this chat ("" for all)
	OTLP    string // write the turns as OTLP/JSON spans to this file ("-": w) instead
	Content bool   // with OTLP: the messages, tool arguments and results too
	errOut  io.Writer
}

// trace prints a world: as turns if it is an agent world, else (or with
// records) as its records; or writes its turns as OTLP spans.
func trace(ctx context.Context, w io.Writer, j journal.Reader, g cas.Getter, world string, o traceOptions) error {
	if !o.Records {
		c := session.NewReader(g)
		if err := j.Read(ctx, world, 1, c.Record); err != nil {
			return err
		}
		if c.IsChat() || (c.ChatManifest() && !o.JSON && o.OTLP == "" && o.Chat == "") {
			turns, forks := c.Turns(), c.Forks()
			if o.Chat != "" {
				turns, forks = chatTurns(turns, forks, o.Chat)
				if len(turns) == 0 {
					return fmt.Errorf("trace: world %s has no turns of chat %s", world, o.Chat)
				}
			}
			switch {
			case o.OTLP != "":
				return writeOTLP(w, o, world, turns)
			case o.JSON:
				return writeJSONTurns(w, turns)
			}
			if len(turns) == 0 {
				return writeNoTurns(w, world, forks)
			}
			return writeSession(w, turns, forks)
		}
		if o.OTLP != "" || o.Chat != "" {
			return fmt.Errorf("trace: world %s has no chats: it is not an agent world, and --otlp and --chat show the turns of chats", world)
		}
	}
	return replay.Trace(ctx, w, j, world, replay.TraceOptions{JSON: o.JSON, CAS: g})
}

// writeNoTurns says that an agent world has no turns yet (a fresh world,
// or a fork made before its first message), and how one is made: printing
// nothing would read as a failure to read it.
func writeNoTurns(w io.Writer, world string, forks []session.Fork) error {
	var b strings.Builder
	for _, f := range forks {
		b.WriteString(forkLine(f) + "\n")
	}
	flag := ""
	if world != "main" {
		flag = " --world " + world
	}
	fmt.Fprintf(&b, "world %s has no turns yet: demiurge run MANIFEST%s -m TEXT starts one\n", world, flag)
	_, err := io.WriteString(w, b.String())
	return err
}

// chatTurns returns the turns of one chat, and the forks placed among
// them.
func chatTurns(turns []*session.Turn, forks []session.Fork, chat string) ([]*session.Turn, []session.Fork) {
	var kept []*session.Turn
	before := make([]int, len(turns)+1) // before[i]: turns kept among the first i
	for i, t := range turns {
		before[i] = len(kept)
		if t.Chat == chat {
			kept = append(kept, t)
		}
	}
	before[len(turns)] = len(kept)
	out := make([]session.Fork, len(forks))
	for i, f := range forks {
		out[i] = f
		out[i].Turns = before[min(max(f.Turns, 0), len(turns))]
	}
	return kept, out
}

// writeJSONTurns writes turns, one JSON object a line, as trace --json does.
func writeJSONTurns(w io.Writer, turns []*session.Turn) error {
	for _, t := range turns {
		b, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("trace: turn %d of chat %s: %w", t.RequestID, t.Chat, err)
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// writeOTLP writes turns as OTLP/JSON spans to the file o names (w for
// "-"), and says on stderr what it wrote there.
func writeOTLP(w io.Writer, o traceOptions, world string, turns []*session.Turn) error {
	td := otlp.Build(turns, otlp.Options{World: world, Content: o.Content})
	b, err := td.Encode()
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	if o.OTLP == "-" {
		_, err := w.Write(b)
		return err
	}
	if err := os.WriteFile(o.OTLP, b, 0o644); err != nil {
		return fmt.Errorf("trace: write the spans: %w", err)
	}
	if o.errOut != nil {
		fmt.Fprintf(o.errOut, "trace: wrote %s of %s to %s\n", plural(td.Spans(), "span"), plural(len(turns), "turn"), o.OTLP)
	}
	return nil
}
