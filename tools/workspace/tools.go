package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/internal/manpage"
)

// Version is the version of the workspace tools' implementation.
const Version = "0.1.0"

// Names of the workspace tools.
const (
	ToolList   = "workspace_list"
	ToolRead   = "workspace_read"
	ToolWrite  = "workspace_write"
	ToolEdit   = "workspace_edit"
	ToolRemove = "workspace_remove"
	ToolDiff   = "workspace_diff"
)

// Limits of the tools.
const (
	// MaxReadBytes bounds the text workspace_read returns; a longer file
	// or range is cut on a UTF-8 boundary, with a note of its size.
	MaxReadBytes = 50000
	// MaxWriteBytes bounds the content of workspace_write and the result
	// of workspace_edit.
	MaxWriteBytes = 16 << 20
	// MaxListEntries bounds the entries of one workspace_list page.
	MaxListEntries = 1000
	// MaxDiffChanges bounds the changes workspace_diff returns.
	MaxDiffChanges = 1000
)

// Error categories of tools.Response.Error.
const (
	ErrorInvalidArguments = "invalid_arguments" // the arguments do not fit the schema, or are inconsistent
	ErrorInvalidPath      = "invalid_path"      // a path escapes the workspace, is absolute, ...
	ErrorNotFound         = "not_found"         // the path or version does not exist
	ErrorNotDirectory     = "not_a_directory"   // a file where a directory is needed
	ErrorIsDirectory      = "is_a_directory"    // a directory where a file is needed
	ErrorNotEmpty         = "not_empty"         // removing a non-empty directory without recursive
	ErrorNoMatch          = "no_match"          // workspace_edit: old_string does not occur
	ErrorAmbiguousMatch   = "ambiguous_match"   // workspace_edit: old_string occurs more than once
	ErrorTooLarge         = "too_large"         // content over MaxWriteBytes
	ErrorTimeout          = "timeout"           // the call's deadline passed
	ErrorCancelled        = "cancelled"         // the caller cancelled the call
	ErrorInternal         = "internal"          // the store failed, or a tree is malformed
)

// Exit codes of the tools.
const (
	exitOK        = 0
	exitFailed    = 1   // the operation failed (not found, no match, ...)
	exitUsage     = 2   // invalid arguments or path
	exitTimeout   = 124 // the deadline passed
	exitCancelled = 130 // cancelled
)

// Tools returns the workspace tools over svc, in a fixed order:
// workspace_list, workspace_read, workspace_write, workspace_edit,
// workspace_remove, workspace_diff.
func Tools(svc *Service) []tools.Tool {
	out := make([]tools.Tool, len(specs))
	for i, sp := range specs {
		out[i] = &tool{spec: sp, svc: svc}
	}
	return out
}

// spec describes one tool.
type spec struct {
	name, short, desc, prompt string
	synopsis                  string
	input, output             func() json.RawMessage // built on first use: see schemaObject
	inputs                    []string               // INPUT section lines
	outputs                   []string               // OUTPUT section lines
	examples                  []string
	run                       func(c *call) tools.Response

	schemaOnce sync.Once
	schema     *jsonschema.Schema // compiled on first use: see inputSchema

	infoOnce sync.Once
	info     tools.Info // built on first use: see tool.Info
}

// inputSchema is the compiled input schema. It is compiled on the first
// call, not at package init, where compiling the six schemas cost every
// start of the demiurge binary ~5 ms (`demiurge sh -c true` included).
func (sp *spec) inputSchema() *jsonschema.Schema {
	sp.schemaOnce.Do(func() { sp.schema = compile(sp.name, sp.input()) })
	return sp.schema
}

// tool is one workspace tool.
type tool struct {
	spec *spec
	svc  *Service
}

var _ tools.InlineTool = (*tool)(nil)

// RunsInline reports whether a call can run inside the step of a world
// that asks for it (see tools.InlineTool): it can when the Service reads
// the world's versions through the call's context (CellHeadsContext), for
// a workspace tool writes nothing but blobs and never waits for the world
// to move on. With other Heads (CellHeads over World.State, say) it would
// wait for the world's lock, which the step holds.
func (t *tool) RunsInline(context.Context, tools.Request) bool {
	sa, ok := t.svc.heads.(stepAware)
	return ok && sa.readsThroughContext()
}

// Info describes the tool; its help is written on the first call.
func (t *tool) Info() tools.Info {
	sp := t.spec
	sp.infoOnce.Do(func() {
		sp.info = tools.Info{
			Name:             sp.name,
			ShortDescription: sp.short,
			Description:      sp.desc,
			Help:             sp.help(),
			SystemPrompt:     sp.prompt,
			InputSchema:      sp.input(),
			OutputSchema:     sp.output(),
			Version:          Version,
		}
	})
	return sp.info
}

// OutputLimit is how much of a file workspace_read returns (0 for the
// other tools, whose output is small).
func (t *tool) OutputLimit() int {
	if t.spec.name == ToolRead {
		return MaxReadBytes
	}
	return 0
}

// help returns man-page style documentation.
func (sp *spec) help() string {
	var b strings.Builder
	manpage.Header(&b, sp.name, "Workspace Tools")
	section := func(name string, lines ...string) { manpage.Section(&b, name, lines...) }
	section("NAME", sp.name+" - "+sp.short)
	section("SYNOPSIS", sp.synopsis)
	section("DESCRIPTION", wrap(sp.desc, 70)...)
	section("INPUT", sp.inputs...)
	section("OUTPUT", sp.outputs...)
	section("EXAMPLES", sp.examples...)
	section("EXIT STATUS",
		"0      success",
		"1      the operation failed: not_found, not_a_directory, is_a_directory,",
		"       not_empty, no_match, ambiguous_match, too_large, internal",
		"2      invalid_arguments or invalid_path: fix the arguments and call again",
		"124    timeout; 130 cancelled")
	section("SEE ALSO", "workspace_list, workspace_read, workspace_write, workspace_edit,", "workspace_remove, workspace_diff")
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// wrap breaks text into lines of at most width bytes at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for w := range strings.FieldsSeq(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// Run runs the tool, reporting the validate, execute, output and complete
// phases.
func (t *tool) Run(ctx context.Context, req tools.Request, status tools.StatusFunc) tools.Response {
	report := func(s tools.Status) {
		if status != nil {
			status(s)
		}
	}
	if req.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	report(tools.Status{Phase: tools.PhaseValidate})
	a, err := parseArgs(t.spec.inputSchema(), req.Arguments)
	var resp tools.Response
	switch {
	case err != nil:
		resp = fail(t.spec.name, ErrorInvalidArguments, exitUsage, "%v. %s", err, hint(t.spec))
	case ctx.Err() != nil:
		resp = ctxFailure(t.spec.name, ctx.Err())
	default:
		// A change that was made is reported as made, even if ctx ends
		// meanwhile: its commit is in the recorder.
		c := &call{ctx: ctx, name: t.spec.name, svc: t.svc, args: a, workspace: a.str("workspace", effects.DefaultWorkspace)}
		report(tools.Status{Phase: tools.PhaseExecute})
		resp = t.spec.run(c)
	}
	if resp.Stdout != "" {
		report(tools.Stdout(resp.Stdout))
	}
	if resp.Stderr != "" {
		report(tools.Stderr(resp.Stderr))
	}
	report(tools.Status{Phase: tools.PhaseComplete})
	return resp
}

func hint(sp *spec) string {
	return "Synopsis: " + sp.synopsis
}

// fail returns an error response.
func fail(name, category string, code int, format string, args ...any) tools.Response {
	return tools.Response{Stderr: name + ": " + fmt.Sprintf(format, args...), ExitCode: code, Error: category}
}

func ctxFailure(name string, err error) tools.Response {
	if errors.Is(err, context.DeadlineExceeded) {
		return fail(name, ErrorTimeout, exitTimeout, "timed out before it was done; nothing was changed")
	}
	return fail(name, ErrorCancelled, exitCancelled, "cancelled")
}

// call is one execution of a tool.
type call struct {
	ctx       context.Context
	name      string
	svc       *Service
	args      args
	workspace string
}

// ok returns a response with v as JSON on stdout.
func (c *call) ok(v any) tools.Response {
	b, err := json.Marshal(v)
	if err != nil {
		return fail(c.name, ErrorInternal, exitFailed, "encode the output: %v", err)
	}
	return tools.Response{Stdout: string(b), ExitCode: exitOK}
}

// where names the workspace and version for messages.
func (c *call) where(version uint64) string {
	return fmt.Sprintf("workspace %q (version %d)", c.workspace, version)
}

// fromErr turns an error of the service or a tree operation into a
// response whose message says what failed, where, and how to fix it.
func (c *call) fromErr(err error, p string, version uint64) tools.Response {
	if c.ctx.Err() != nil {
		return ctxFailure(c.name, c.ctx.Err())
	}
	shown := p
	if shown == "" {
		shown = "the root"
	}
	var ee *EditError
	switch {
	case errors.Is(err, ErrInvalidWorkspace):
		return fail(c.name, ErrorInvalidArguments, exitUsage, "%v", strings.TrimPrefix(err.Error(), "workspace: "))
	case errors.Is(err, ErrInvalidPath):
		return fail(c.name, ErrorInvalidPath, exitUsage, "%s. Use a path relative to the workspace root, such as \"src/main.go\", without \"..\"", invalidPathText(err))
	case errors.Is(err, ErrUnknownVersion):
		return fail(c.name, ErrorNotFound, exitFailed, "%s. Leave out version for the newest one", strings.TrimPrefix(err.Error(), "workspace: unknown version: "))
	case errors.Is(err, ErrNotFound):
		msg := fmt.Sprintf("%s not found in %s", shown, c.where(version))
		if d := detail(err, ErrNotFound); d != "" {
			msg += ": " + d
		}
		return fail(c.name, ErrorNotFound, exitFailed, "%s. Use workspace_list to see what exists", msg)
	case errors.Is(err, ErrNotDir):
		return fail(c.name, ErrorNotDirectory, exitFailed, "%s in %s: %s. A file cannot hold entries; name a directory or the file itself", shown, c.where(version), detail(err, ErrNotDir))
	case errors.Is(err, ErrIsDir):
		return fail(c.name, ErrorIsDirectory, exitFailed, "%s is a directory in %s. Name a file, or use workspace_list to see the directory's entries", shown, c.where(version))
	case errors.Is(err, ErrNotEmpty):
		return fail(c.name, ErrorNotEmpty, exitFailed, "%s is a directory that is not empty in %s (%s). Set recursive to true to remove it with everything under it", shown, c.where(version), detail(err, ErrNotEmpty))
	case errors.As(err, &ee) && ee.Count == 0:
		return fail(c.name, ErrorNoMatch, exitFailed, "old_string not found in %s in %s. Read the file with workspace_read and copy the exact text to replace, including whitespace and line breaks", shown, c.where(version))
	case errors.As(err, &ee):
		return fail(c.name, ErrorAmbiguousMatch, exitFailed, "%s in %s in %s. Include more of the surrounding text in old_string to make it unique, or set replace_all to true to replace every occurrence", strings.TrimSuffix(ee.Error(), "; it must occur exactly once"), shown, c.where(version))
	case errors.Is(err, ErrEmptyOld):
		return fail(c.name, ErrorInvalidArguments, exitUsage, "old_string is empty. Give the exact text to replace; to write a whole file use workspace_write")
	case errors.Is(err, ErrSameText):
		return fail(c.name, ErrorInvalidArguments, exitUsage, "old_string and new_string are the same, so the edit would change nothing. Give the new text in new_string")
	case errors.Is(err, ErrBadRange):
		return fail(c.name, ErrorInvalidArguments, exitUsage, "%s in %s: %s. offset must be at most the file's size", shown, c.where(version), detail(err, ErrBadRange))
	}
	return fail(c.name, ErrorInternal, exitFailed, "%s in %s: %v", shown, c.where(version), err)
}

// detail returns what an error says beyond its sentinel: for "workspace:
// not found (a does not exist)" and ErrNotFound, "a does not exist".
func detail(err, sentinel error) string {
	msg := err.Error()
	if pe, ok := errors.AsType[*PathError](err); ok {
		msg = pe.Err.Error()
	}
	i := strings.Index(msg, sentinel.Error())
	if i < 0 {
		return ""
	}
	rest := strings.TrimLeft(msg[i+len(sentinel.Error()):], ": ")
	if strings.HasPrefix(rest, "(") && strings.HasSuffix(rest, ")") {
		rest = rest[1 : len(rest)-1]
	}
	return rest
}

// invalidPathText is the reason a path was refused, without prefixes.
func invalidPathText(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "workspace: invalid path: "); i >= 0 {
		return msg[i+len("workspace: invalid path: "):]
	}
	if i := strings.LastIndex(msg, "workspace: invalid path"); i >= 0 {
		return "invalid path" + msg[i+len("workspace: invalid path"):]
	}
	return msg
}

// path reads and cleans the path argument named name.
func (c *call) path(name string) (string, *tools.Response) {
	raw := c.args.str(name, "")
	p, err := CleanPath(raw)
	if err != nil {
		r := fail(c.name, ErrorInvalidPath, exitUsage, "%s %q: %s. Use a path relative to the workspace root, such as \"src/main.go\", without \"..\"", name, raw, invalidPathText(err))
		return "", &r
	}
	return p, nil
}

// version returns the tree to read: the version argument, or the newest.
func (c *call) version() (uint64, cas.Ref, *tools.Response) {
	v, given, err := c.args.uint("version")
	if err != nil {
		r := fail(c.name, ErrorInvalidArguments, exitUsage, "%v", err)
		return 0, cas.Ref{}, &r
	}
	if !given {
		h, err := c.head()
		if err != nil {
			r := c.fromErr(err, "", 0)
			return 0, cas.Ref{}, &r
		}
		return h.Version, h.Root, nil
	}
	root, err := c.root(v)
	if err != nil {
		r := c.fromErr(err, "", v)
		return 0, cas.Ref{}, &r
	}
	return v, root, nil
}

// head returns the newest version of the call's workspace: its View's,
// when the context holds one (see Service.WithView), else the Service's.
func (c *call) head() (Head, error) {
	if v := c.svc.view(c.ctx, c.workspace); v != nil {
		return v.Head(c.ctx)
	}
	return c.svc.Head(c.ctx, c.workspace)
}

// root returns the tree of a version of the call's workspace, from the
// store; the version a View would become, which the store does not have,
// is the View's tree.
func (c *call) root(version uint64) (cas.Ref, error) {
	root, err := c.svc.Root(c.ctx, c.workspace, version)
	if v := c.svc.view(c.ctx, c.workspace); v != nil && errors.Is(err, ErrUnknownVersion) {
		h, herr := v.Head(c.ctx)
		if herr == nil && !h.Recorded && h.Version == version {
			return h.Root, nil
		}
	}
	return root, err
}

// update changes the call's workspace: its View, when the context holds
// one (nothing is committed then), else the Service's newest version.
func (c *call) update(fn UpdateFunc) (Head, bool, error) {
	if v := c.svc.view(c.ctx, c.workspace); v != nil {
		return v.Update(c.ctx, fn)
	}
	return c.svc.Update(c.ctx, c.workspace, fn)
}

// cutUTF8 returns the longest prefix of b of at most n bytes that does not
// end inside a valid UTF-8 sequence.
func cutUTF8(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	i := n
	for k := 0; k < utf8.UTFMax-1 && i > 0 && !utf8.RuneStart(b[i]); k++ {
		i--
	}
	if i == n || !utf8.RuneStart(b[i]) {
		return b[:n]
	}
	// The rune starting at i runs past n if it is valid and long enough.
	if r, size := utf8.DecodeRune(b[i:]); r == utf8.RuneError && size <= 1 || i+size <= n {
		return b[:n]
	}
	return b[:i]
}

// startUTF8 moves a start offset forward past the continuation bytes of a
// character it falls inside (at most three).
func startUTF8(b []byte, start int) int {
	for k := 0; k < utf8.UTFMax-1 && start < len(b) && !utf8.RuneStart(b[start]); k++ {
		start++
	}
	return start
}
