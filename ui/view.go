package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/replay"
)

// timelineView is what the timeline shows of a world.
type timelineView struct {
	World   string
	Head    uint64
	Chat    bool
	Turns   []turnView
	Running bool
	// Filter is what the page shows of the turns: one chat's, the failed
	// ones; Chats are the world's chats, for the filter's choices, and
	// Hidden counts the turns the filter leaves out.
	Filter Filter
	Chats  []string
	Hidden int
	// Form is the form token the Approve and Deny buttons carry; Decides
	// is whether the view answers calls (Options.Decide).
	Form    string
	Decides bool
	// Events is the address of the page's event stream.
	Events string
	// The session's totals.
	InputTokens, OutputTokens, CachedTokens uint64
	CostMicroUSD                            uint64
	CostUnknown                             bool
	Calls                                   int
	// Forks are where the world was forked from another (world.Fork);
	// ForksAfter those after the last turn.
	Forks, ForksAfter []session.Fork
	// Lines are the newest records of a world without chats.
	Lines []recordLine
	Older uint64 // records before Lines, if any
}

type turnView struct {
	*session.Turn
	Rounds []roundView
	Cost   string
	// ForkedBefore are the forks between the turn before and this one:
	// the turns before are the other world's.
	ForkedBefore []session.Fork
}

type roundView struct {
	N          int
	Compaction *modelView
	Model      *modelView
	Assistant  []string // what the round's reply said
	Calls      []callView
}

type modelView struct {
	World string
	*session.ModelCall
}

type callView struct {
	World, Chat string
	Form        string // the form token, for the Approve and Deny buttons
	Decides     bool   // the view answers calls that wait (Options.Decide)
	Back        string // the page's filter, to come back to after a decision
	Manifest    string // the manifest the approve command names (shell-quoted), or MANIFEST
	*session.ToolCall
	Args    string // indented when it is JSON
	Command string // the script of a bash call
	Diffs   []fileDiff
	// Preview is the first lines of the output; More, whether there are
	// more than it shows.
	Preview     string
	More        bool
	OutputLines int
}

// fileDiff is what a commit did to one path: a line diff for a text file.
type fileDiff struct {
	Workspace string
	Version   uint64
	session.Change
	Lines []diffLine
	Note  string // why there are no lines
}

type diffLine struct {
	Class string // add, del, hunk or ""
	Text  string
}

// Filter picks the turns a timeline shows: those of one chat (Chat, ""
// for all) and, with Failed, those where something failed (failed).
type Filter struct {
	Chat   string
	Failed bool
}

// filterOf reads a page's filter from its query: ?chat=ID&failed=1.
func filterOf(q url.Values) Filter {
	return Filter{Chat: q.Get("chat"), Failed: q.Get("failed") == "1"}
}

// Query is the filter as a query string ("" for none), "?" and all.
func (f Filter) Query() string {
	q := f.values()
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// values is the filter as query values.
func (f Filter) values() url.Values {
	q := url.Values{}
	if f.Chat != "" {
		q.Set("chat", f.Chat)
	}
	if f.Failed {
		q.Set("failed", "1")
	}
	return q
}

// WithChat returns the query of the filter with its chat set to chat
// ("" for every chat).
func (f Filter) WithChat(chat string) string { f.Chat = chat; return f.Query() }

// Toggled returns the query of the filter with Failed flipped.
func (f Filter) Toggled() string { f.Failed = !f.Failed; return f.Query() }

// failed reports whether something in a turn failed: the turn (an error,
// a guard's stop), one of its model calls, or one of its tool calls (an
// error, a timeout, a call rejected before it ran).
func failed(t *session.Turn) bool {
	if t.Outcome == "failed" || t.Outcome == "stopped" || t.Error != "" {
		return true
	}
	for _, r := range t.Rounds {
		for _, m := range []*session.ModelCall{r.Compaction, r.Model} {
			if m != nil && m.Error != "" {
				return true
			}
		}
		for _, c := range r.Calls {
			if callFailed(c) {
				return true
			}
		}
	}
	return false
}

// callFailed reports whether a tool call failed: an error, a timeout, or
// refused before it ran.
func callFailed(c *session.ToolCall) bool {
	return c.Status == "error" || c.Status == "timeout" || c.Rejected
}

// view builds the timeline of what the follower read, the turns filt
// picks.
func (f *follower) view(ctx context.Context, filt Filter) timelineView {
	v := timelineView{World: f.world, Head: f.last, Chat: f.sess.IsChat() || f.sess.ChatManifest(), Forks: f.sess.Forks(), Filter: filt}
	if !v.Chat {
		v.Lines = f.lines
		if len(v.Lines) > liveLines {
			v.Lines = v.Lines[len(v.Lines)-liveLines:]
		}
		if len(v.Lines) > 0 {
			v.Older = v.Lines[0].Seq - 1
		}
		return v
	}
	seen := map[string]bool{}
	for i, t := range f.sess.Turns() {
		if !seen[t.Chat] {
			seen[t.Chat] = true
			v.Chats = append(v.Chats, t.Chat)
		}
		if (filt.Chat != "" && t.Chat != filt.Chat) || (filt.Failed && !failed(t)) {
			v.Hidden++
			continue
		}
		tv := turnView{Turn: t}
		for _, fk := range v.Forks {
			if fk.Turns == i {
				tv.ForkedBefore = append(tv.ForkedBefore, fk)
			}
		}
		cost, unknown := t.Cost()
		tv.Cost = strings.TrimPrefix(costText(cost, unknown), "cost ") // "turn cost: unknown", as trace says
		v.CostMicroUSD += cost
		v.CostUnknown = v.CostUnknown || unknown
		v.Running = v.Running || t.Outcome == ""
		for i, r := range t.Rounds {
			rv := roundView{N: i + 1, Assistant: r.Assistant}
			if r.Compaction != nil {
				rv.Compaction = &modelView{f.world, r.Compaction}
			}
			if r.Model != nil {
				rv.Model = &modelView{f.world, r.Model}
			}
			for _, m := range []*session.ModelCall{r.Compaction, r.Model} {
				if m != nil {
					v.InputTokens += m.InputTokens
					v.OutputTokens += m.OutputTokens
					v.CachedTokens += m.CachedTokens
				}
			}
			for _, c := range r.Calls {
				cv := f.callView(ctx, c)
				cv.Chat = t.Chat
				rv.Calls = append(rv.Calls, cv)
				v.Calls++
			}
			tv.Rounds = append(tv.Rounds, rv)
		}
		if n := len(tv.Rounds); t.Outcome == "" && n > 0 && tv.Rounds[n-1].Model != nil && answered(tv.Rounds[n-1].Calls) {
			// The next round's request is out: say so.
			tv.Rounds = append(tv.Rounds, roundView{N: n + 1})
		}
		v.Turns = append(v.Turns, tv)
	}
	for _, fk := range v.Forks {
		if fk.Turns >= len(v.Turns) {
			v.ForksAfter = append(v.ForksAfter, fk)
		}
	}
	return v
}

func (f *follower) callView(ctx context.Context, c *session.ToolCall) callView {
	cv := callView{World: f.world, ToolCall: c, Args: indentJSON(c.Arguments)}
	cv.Preview, cv.More, cv.OutputLines = preview(c.Output)
	if c.Tool == "bash" {
		var a struct {
			Commands string `json:"commands"`
		}
		if json.Unmarshal([]byte(c.Arguments), &a) == nil {
			cv.Command = a.Commands
		}
	}
	for _, cm := range c.Commits {
		for _, ch := range cm.Changes {
			if ch.Kind == "dir" && dirOfAnother(ch.Path, cm.Changes) {
				continue // the paths under it say more
			}
			cv.Diffs = append(cv.Diffs, fileDiff{Workspace: cm.Workspace, Version: cm.Version, Change: ch})
			d := &cv.Diffs[len(cv.Diffs)-1]
			d.Lines, d.Note = f.fileDiff(ctx, ch)
		}
	}
	return cv
}

// answered reports whether a round made calls and each has its output.
func answered(calls []callView) bool {
	for _, c := range calls {
		if c.Status == "requested" || c.Status == "approval" {
			return false
		}
	}
	return len(calls) > 0
}

// dirOfAnother reports whether dir holds another changed path.
func dirOfAnother(dir string, changes []session.Change) bool {
	for _, c := range changes {
		if strings.HasPrefix(c.Path, dir+"/") {
			return true
		}
	}
	return false
}

// Previews show at most previewLines lines of a result, each cut at
// previewWidth bytes.
const (
	previewLines = 8
	previewWidth = 300
)

// preview is the first lines of a tool's output, each cut, whether it
// leaves anything out, and how many lines the output has.
func preview(out string) (string, bool, int) {
	out = strings.TrimRight(out, "\n")
	if out == "" {
		return "", false, 0
	}
	lines := strings.Split(out, "\n")
	more := len(lines) > previewLines
	shown := lines[:min(len(lines), previewLines)]
	for i, l := range shown {
		if len(l) > previewWidth {
			cut := previewWidth
			for cut > 0 && !utf8.RuneStart(l[cut]) {
				cut--
			}
			shown[i], more = l[:cut]+"…", true
		}
	}
	text := strings.Join(shown, "\n")
	if len(lines) > previewLines {
		text += "\n… " + pluralOf(len(lines)-previewLines, "more line")
	}
	return text, more, len(lines)
}

// maxDiffFile is the largest file whose changes the timeline shows line
// by line.
const maxDiffFile = 256 << 10

// fileDiff is the line diff of a changed file, or why there is none.
func (f *follower) fileDiff(ctx context.Context, ch session.Change) ([]diffLine, string) {
	if ch.Kind != "file" {
		return nil, ""
	}
	text := func(ref string) (string, string) {
		if ref == "" {
			return "", ""
		}
		r, err := cas.ParseRef(ref)
		if err != nil {
			return "", err.Error()
		}
		b, err := f.src.Get(ctx, r)
		switch {
		case err != nil:
			return "", err.Error()
		case len(b) > maxDiffFile:
			return "", fmt.Sprintf("%d bytes: too large to show here", len(b))
		case !utf8.Valid(b):
			return "", "not text"
		}
		return string(b), ""
	}
	old, note := text(ch.Old)
	if note != "" {
		return nil, note
	}
	now, note := text(ch.New)
	if note != "" {
		return nil, note
	}
	var lines []diffLine
	for _, l := range strings.Split(strings.TrimSuffix(replay.Diff("a/"+ch.Path, old, "b/"+ch.Path, now), "\n"), "\n") {
		switch {
		case l == "":
			continue
		case strings.HasPrefix(l, "---"), strings.HasPrefix(l, "+++"):
			continue
		case strings.HasPrefix(l, "@@"):
			lines = append(lines, diffLine{"hunk", l})
		case strings.HasPrefix(l, "+"):
			lines = append(lines, diffLine{"add", l})
		case strings.HasPrefix(l, "-"):
			lines = append(lines, diffLine{"del", l})
		default:
			lines = append(lines, diffLine{"", l})
		}
	}
	return lines, ""
}

// indentJSON indents s if it is JSON, else returns it as it is.
func indentJSON(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return s
	}
	return b.String()
}

// costText formats a cost in micro-USD, or says it is unknown, as the
// command line does.
func costText(microUSD uint64, unknown bool) string {
	switch {
	case unknown && microUSD == 0:
		return "cost unknown"
	case unknown:
		return fmt.Sprintf("$%.4f + unknown", float64(microUSD)/1e6)
	}
	return fmt.Sprintf("$%.4f", float64(microUSD)/1e6)
}

// finishText says how a reply ended, for people.
func finishText(f string) string {
	switch {
	case f == "refusal":
		return "refused"
	case f == "length":
		return "cut off by the output token limit"
	case f == "content_filter":
		return "cut off by a content filter"
	case strings.HasPrefix(f, "incomplete"):
		return "cut off by the provider (" + f + ")"
	}
	return f
}

// duration formats milliseconds as Go does a duration, to a precision
// that fits it.
func duration(ms float64) string {
	d := time.Duration(ms * float64(time.Millisecond))
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// refPattern matches a ref's text form.
var refPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(blake3|sha256):[0-9a-f]{64}`) })

// linkRefs escapes text for HTML and links every ref in it that names a
// blob of the store to the blob's page. Other refs (an intent's hash, a
// record's, a state a replay derived and did not store) stay text.
func (s *Server) linkRefs(ctx context.Context, text string) template.HTML {
	esc := template.HTMLEscapeString(text)
	held := map[string]bool{}
	return template.HTML(refPattern().ReplaceAllStringFunc(esc, func(text string) string {
		ok, seen := held[text]
		if !seen {
			ref, err := cas.ParseRef(text)
			ok = err == nil && s.has(ctx, ref)
			held[text] = ok
		}
		if !ok {
			return text
		}
		return `<a class="ref" href="/blob/` + text + `">` + text + `</a>`
	}))
}

// has reports whether the store holds ref, or the last divergence kept
// it.
func (s *Server) has(ctx context.Context, ref cas.Ref) bool {
	if _, ok := s.keptBlob(ref); ok {
		return true
	}
	if h, ok := s.src.(cas.Haser); ok {
		ok, err := h.Has(ctx, ref)
		return ok && err == nil
	}
	_, err := s.src.Get(ctx, ref)
	return err == nil
}

// pluralOf is n and noun, in the plural unless n is 1: "1 line", "2
// lines".
func pluralOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprint(n, " ", noun, "s")
}

var funcs = template.FuncMap{
	"duration": duration,
	"cost":     costText,
	"finish":   finishText,
	"short": func(s string) string {
		if r, err := cas.ParseRef(s); err == nil {
			return r.Short()
		}
		return s
	},
	"path":   url.PathEscape,
	"words":  func(s string) string { return strings.ReplaceAll(s, "_", " ") },
	"plural": pluralOf,
	"int":    func(n uint64) int { return int(min(n, 1<<31)) },
	"inc":    func(i int) int { return i + 1 },
	"firstline": func(s string) string {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			return s[:i] + " …"
		}
		return s
	},
	"forknote": forkNote,
	"side": func(l, lkind, r, rkind string, rows []sideRow) any {
		return struct {
			L, LKind, R, RKind string
			Rows               []sideRow
		}{l, lkind, r, rkind, rows}
	},
	"time": func(ns uint64) string {
		return time.Unix(0, int64(ns)).UTC().Format("2006-01-02 15:04:05 UTC")
	},
}

// forkNote says which turns around a fork's line are the other world's:
// those above, but for the turns the fork was made in, which go on in
// this world; and, if below, those below are this world's own. It is ""
// when there is nothing to say: no turns around the line.
func forkNote(fk session.Fork, below bool) string {
	var open []string
	for _, t := range fk.Open {
		open = append(open, fmt.Sprintf("turn %d of chat %s", t.RequestID, t.Chat))
	}
	goes := "goes"
	if len(open) > 1 {
		goes = "go"
	}
	var parts []string
	switch {
	case fk.Turns > len(fk.Open) && len(open) > 0:
		parts = append(parts, fmt.Sprintf("the turns above are %s's, but for %s, which %s on in this world", fk.From, strings.Join(open, " and "), goes))
	case fk.Turns > 0 && len(open) > 0:
		parts = append(parts, fmt.Sprintf("%s above began in %s and %s on in this world", strings.Join(open, " and "), fk.From, goes))
	case fk.Turns > 0:
		parts = append(parts, fmt.Sprintf("the turns above are %s's", fk.From))
	}
	switch {
	case below && len(parts) > 0:
		parts = append(parts, "those below are this world's own")
	case below:
		parts = append(parts, "the turns below are this world's own")
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
}
