package bash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/coreutils"
)

// maxTraceArgBytes bounds each argv word kept in the trace.
const maxTraceArgBytes = 1024

type callSeqKey struct{}

// CallSeq returns the sequence number of the tool call a callback is
// running for: the Seq of its entry in Result.Calls. A world uses it to
// tie the effects a callback emits to the call that caused them (an
// idempotency key, say). ok is false outside a callback.
func CallSeq(ctx context.Context) (seq int, ok bool) {
	seq, ok = ctx.Value(callSeqKey{}).(int)
	return seq, ok
}

// callTool runs one tool command: --help, flag parsing, schema check,
// --dry-run, the tool-call budget, stdin, then the callback.
func (ex *execution) callTool(ctx context.Context, name string, argv []string, cio cmdIO) int {
	reg := ex.t.byName[name]
	// Seq is taken when the callback starts (after a tool with Stdin has
	// read all its input), so that `a | b` traces a before b.
	call := Call{Tool: name, Kind: CallTool, Argv: traceArgv(argv)}
	start := time.Now()
	var errOut strings.Builder
	stderr := io.MultiWriter(cio.stderr, &errOut)
	code := ex.runTool(ctx, reg, argv, cio, stderr, &call)
	call.ExitCode = code
	call.Duration = time.Since(start)
	if call.Seq == 0 {
		call.Seq = int(ex.seq.Add(1))
	}
	if code != 0 {
		call.Error = strings.TrimSpace(errOut.String())
	}
	ex.record(call)
	return code
}

func (ex *execution) runTool(ctx context.Context, reg *registered, argv []string, cio cmdIO, stderr io.Writer, call *Call) int {
	name := reg.def.Name
	if slices.Contains(argv, "--help") {
		call.Kind = CallHelp
		io.WriteString(cio.stdout, toolHelpText(reg))
		return 0
	}
	dry := false
	if slices.Contains(argv, "--dry-run") {
		dry = true
		argv = slices.DeleteFunc(slices.Clone(argv), func(a string) bool { return a == "--dry-run" })
		call.Kind = CallDryRun
	}
	var params map[string]any
	if reg.pos == nil {
		var err error
		params, err = parseFlags(reg.flags, argv, ex.lim)
		if err == nil {
			if msg := validateParams(reg.schema, reg.fast, params); msg != "" {
				err = errors.New("schema error: " + msg)
			}
		}
		if err != nil {
			if dry {
				writeJSONLine(stderr, map[string]any{"dry_run": true, "error": err.Error(), "tool": name, "valid": false})
				return 1
			}
			call.Kind = CallInvalid
			fmt.Fprintf(stderr, "%s: %s\n", name, err)
			return 2
		}
		call.Params = params
		if b, err := json.Marshal(params); err == nil {
			call.Arguments = string(b)
		}
	}
	if dry {
		out := map[string]any{"dry_run": true, "tool": name, "valid": true}
		if reg.pos == nil {
			out["params"] = params
		} else {
			out["argv"] = argv
		}
		writeJSONLine(cio.stdout, out)
		return 0
	}
	if ex.toolCalls.Add(1) > ex.lim.MaxToolCalls {
		ex.fail("maximum tool calls exceeded (%d)", ex.lim.MaxToolCalls)
		return 1
	}
	var stdin *string
	if reg.def.Stdin && cio.stdin != nil {
		data, err := io.ReadAll(io.LimitReader(cio.stdin, int64(ex.lim.MaxToolStdinBytes)+1))
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(stderr, "%s: reading stdin: %v\n", name, err)
			return 1
		}
		if len(data) > ex.lim.MaxToolStdinBytes {
			fmt.Fprintf(stderr, "%s: stdin exceeds %d bytes\n", name, ex.lim.MaxToolStdinBytes)
			return 1
		}
		s := string(data)
		stdin = &s
	}
	if ctx.Err() != nil {
		return 1
	}
	call.Seq = int(ex.seq.Add(1))
	out, err, panicked := ex.invoke(context.WithValue(ctx, callSeqKey{}, call.Seq), reg, ToolArgs{Params: params, Stdin: stdin, Argv: argv})
	if ctx.Err() != nil && err == nil && out == "" {
		return 1 // the run is ending (deadline or limit); the result says why
	}
	if panicked {
		fmt.Fprintf(stderr, "%s: callback failed\n", name)
		return 1
	}
	if err != nil {
		if ue, ok := asUserError(err); ok {
			code := ue.Code
			if code < 1 || code > 125 {
				code = 1
			}
			fmt.Fprintf(stderr, "%s: %s\n", name, oneLine(ue.Msg))
			return code
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			if ctx.Err() != nil {
				return 1
			}
		}
		if ex.t.sanitize {
			fmt.Fprintf(stderr, "%s: callback failed\n", name)
		} else {
			fmt.Fprintf(stderr, "%s: %s\n", name, oneLine(err.Error()))
		}
		return 1
	}
	if len(out) > ex.lim.MaxToolOutputBytes {
		fmt.Fprintf(stderr, "%s: output exceeds %d bytes\n", name, ex.lim.MaxToolOutputBytes)
		return 1
	}
	io.WriteString(cio.stdout, out)
	return 0
}

// invoke runs the callback in its own goroutine so that a callback that
// ignores ctx cannot hold the script past its deadline, and turns a panic
// into a failure.
func (ex *execution) invoke(ctx context.Context, reg *registered, args ToolArgs) (out string, err error, panicked bool) {
	type result struct {
		out      string
		err      error
		panicked bool
	}
	ch := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				slog.Error("bash: tool callback panicked", "tool", reg.def.Name, "panic", p)
				ch <- result{panicked: true}
			}
		}()
		var r result
		if reg.pos != nil {
			r.out, r.err = reg.pos(ctx, args.Argv, args.Stdin)
		} else {
			r.out, r.err = reg.fn(ctx, args)
		}
		ch <- r
	}()
	select {
	case r := <-ch:
		return r.out, r.err, r.panicked
	case <-ctx.Done():
		return "", nil, false
	}
}

func (ex *execution) record(c Call) {
	ex.traceMu.Lock()
	defer ex.traceMu.Unlock()
	if len(ex.calls) >= ex.lim.MaxTraceCalls {
		ex.dropped++
		return
	}
	if ex.calls == nil {
		ex.calls = make([]Call, 0, 8) // one allocation for a typical script's calls
	}
	ex.calls = append(ex.calls, c)
}

// traceArgv copies argv, cutting each word to maxTraceArgBytes on a UTF-8
// boundary.
func traceArgv(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		if len(a) > maxTraceArgBytes {
			cut := maxTraceArgBytes
			for cut > 0 && !utf8.RuneStart(a[cut]) {
				cut--
			}
			a = a[:cut]
		}
		out[i] = a
	}
	return out
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

func writeJSONLine(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"error":"unencodable value"}`)
	}
	w.Write(append(b, '\n'))
}

// toolHelpText is `<tool> --help` and `help <tool>`: the description,
// the usage, and each flag with its type, whether it is required, its
// allowed values and its description.
func toolHelpText(reg *registered) string {
	s := reg.def.Name + " - " + reg.def.Description + "\n"
	if reg.usage == "" {
		return s
	}
	s += "Usage: " + reg.def.Name + " " + reg.usage + "\n"
	fs := reg.flags
	props := fs.objectProps(fs.root)
	required, _ := fs.resolve(fs.root)["required"].([]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.Sort(names)
	rows := make([][2]string, 0, len(names))
	width := 0
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		p = fs.resolve(p)
		left := "--" + n + " " + typeHint(fs, p)
		width = max(width, len(left))
		var notes []string
		if slices.Contains(required, any(n)) {
			notes = append(notes, "(required)")
		}
		if d, ok := p["description"].(string); ok && d != "" {
			d, _, _ = strings.Cut(strings.TrimSpace(d), "\n")
			notes = append(notes, d)
		}
		if enum, ok := p["enum"].([]any); ok && len(enum) > 0 {
			notes = append(notes, "one of: "+allowedValues(enum))
		}
		rows = append(rows, [2]string{left, strings.Join(notes, " ")})
	}
	s += "Flags:\n"
	for _, r := range rows {
		line := "  " + r[0]
		if r[1] != "" {
			line += strings.Repeat(" ", width-len(r[0])+2) + r[1]
		}
		s += strings.TrimRight(line, " ") + "\n"
	}
	return s
}

// builtin runs the builtin name (help or discover) and records it as a
// call of kind.
func (ex *execution) builtin(name, kind string, args []string, cio cmdIO, run func([]string, cmdIO) int) int {
	call := Call{Seq: int(ex.seq.Add(1)), Tool: name, Kind: kind, Argv: traceArgv(args)}
	start := time.Now()
	code := run(args, cio)
	call.ExitCode, call.Duration = code, time.Since(start)
	ex.record(call)
	return code
}

// help is the in-script help builtin: help [--list] | help <tool> [--json].
func (ex *execution) help(args []string, cio cmdIO) int {
	return ex.builtin("help", CallHelp, args, cio, ex.helpRun)
}

func (ex *execution) helpRun(args []string, cio cmdIO) int {
	var tool string
	list, asJSON := false, false
	for _, a := range args {
		switch {
		case a == "--list":
			list = true
		case a == "--json":
			asJSON = true
		case strings.HasPrefix(a, "-") || tool != "":
			io.WriteString(cio.stderr, "usage: help [--list] [<tool>] [--json]\n")
			return 1
		default:
			tool = a
		}
	}
	if tool == "" {
		if asJSON && !list {
			io.WriteString(cio.stderr, "usage: help [--list] [<tool>] [--json]\n")
			return 1
		}
		var b strings.Builder
		for _, r := range ex.t.tools {
			fmt.Fprintf(&b, "%-20s %s\n", r.def.Name, r.def.Description)
		}
		io.WriteString(cio.stdout, b.String())
		return 0
	}
	reg, ok := ex.t.byName[tool]
	if !ok {
		// A utility of the sandbox: its usage, as "<utility> --help".
		if u, isUtility := coreutils.Usage(tool); isUtility && !asJSON {
			io.WriteString(cio.stdout, u)
			return 0
		}
		fmt.Fprintf(cio.stderr, "help: unknown tool: %s\n", tool)
		return 1
	}
	if asJSON {
		schema := json.RawMessage("{}")
		if len(reg.def.InputSchema) > 0 {
			schema = reg.def.InputSchema
		}
		b, err := json.MarshalIndent(map[string]any{"name": reg.def.Name, "description": reg.def.Description, "input_schema": schema}, "", "  ")
		if err != nil {
			fmt.Fprintf(cio.stderr, "help: %s: input schema is not valid JSON\n", tool)
			return 1
		}
		cio.stdout.Write(append(b, '\n'))
		return 0
	}
	io.WriteString(cio.stdout, toolHelpText(reg))
	return 0
}

// discover lists tools by category, tag or search text.
func (ex *execution) discover(args []string, cio cmdIO) int {
	return ex.builtin("discover", CallDiscover, args, cio, ex.discoverRun)
}

const discoverUsage = "usage: discover --categories | --category <name> | --tag <tag> | --search <text> [--json]\n"

func (ex *execution) discoverRun(args []string, cio cmdIO) int {
	asJSON := false
	mode, value := "", ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "--json":
			asJSON = true
		case "--categories":
			mode = a
		case "--category", "--tag", "--search":
			if i+1 >= len(args) {
				io.WriteString(cio.stderr, discoverUsage)
				return 1
			}
			mode, value = a, args[i+1]
			i++
		default:
			io.WriteString(cio.stderr, discoverUsage)
			return 1
		}
	}
	if mode == "" {
		io.WriteString(cio.stderr, discoverUsage)
		return 1
	}
	if mode == "--categories" {
		counts := map[string]int{}
		for _, r := range ex.t.tools {
			if r.def.Category != "" {
				counts[r.def.Category]++
			}
		}
		cats := make([]string, 0, len(counts))
		for c := range counts {
			cats = append(cats, c)
		}
		slices.Sort(cats)
		if asJSON {
			out := make([]map[string]any, 0, len(cats))
			for _, c := range cats {
				out = append(out, map[string]any{"category": c, "count": counts[c]})
			}
			writeJSONIndent(cio.stdout, out)
			return 0
		}
		for _, c := range cats {
			noun := "tools"
			if counts[c] == 1 {
				noun = "tool"
			}
			fmt.Fprintf(cio.stdout, "%s (%d %s)\n", c, counts[c], noun)
		}
		return 0
	}
	var found []*registered
	needle := strings.ToLower(value)
	for _, r := range ex.t.tools {
		switch mode {
		case "--category":
			if r.def.Category == value {
				found = append(found, r)
			}
		case "--tag":
			if slices.Contains(r.def.Tags, value) {
				found = append(found, r)
			}
		case "--search":
			if strings.Contains(strings.ToLower(r.def.Name+" "+r.def.Description), needle) {
				found = append(found, r)
			}
		}
	}
	if asJSON {
		out := make([]map[string]any, 0, len(found))
		for _, r := range found {
			m := map[string]any{"name": r.def.Name, "description": r.def.Description}
			if len(r.def.Tags) > 0 {
				m["tags"] = r.def.Tags
			}
			if r.def.Category != "" {
				m["category"] = r.def.Category
			}
			out = append(out, m)
		}
		writeJSONIndent(cio.stdout, out)
		return 0
	}
	for _, r := range found {
		fmt.Fprintf(cio.stdout, "%-20s %s\n", r.def.Name, r.def.Description)
	}
	return 0
}

func writeJSONIndent(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	w.Write(append(b, '\n'))
}
