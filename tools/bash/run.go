package bash

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/tools"
	"github.com/demiurge-dev/demiurge/tools/bash/internal/budget"
	"github.com/demiurge-dev/demiurge/tools/bash/internal/shell"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// baseEnv is the environment of every script, before the Builder's (the
// interpreter sets PWD, IFS and OPTIND itself). PATH names no host
// directory: utilities and tools are found by name, and scripts of the
// workspace on it.
func (t *Tool) baseEnv() []string {
	return []string{"HOME=" + vfs.WorkspaceDir, "UID=1000", "EUID=1000", "GID=1000",
		"USER=" + t.user, "SHELL=/bin/bash", "PATH=/usr/local/bin:/usr/bin:/bin"}
}

// request is a decoded tools.Request.
type request struct {
	script  string
	timeout time.Duration // 0: the tool's limit
}

func decodeRequest(req tools.Request) (request, error) {
	out := request{script: req.Commands}
	if req.TimeoutMS < 0 {
		return out, fmt.Errorf("timeout_ms must be ≥ 0, got %d", req.TimeoutMS)
	}
	out.timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	if len(bytes.TrimSpace(req.Arguments)) == 0 {
		return out, nil
	}
	var args struct {
		Commands  *string `json:"commands"`
		TimeoutMS *int64  `json:"timeout_ms"`
	}
	dec := json.NewDecoder(bytes.NewReader(req.Arguments))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		return out, fmt.Errorf("tool arguments must be a JSON object {\"commands\": string, \"timeout_ms\": integer}: %v", err)
	}
	if args.Commands == nil && req.Commands == "" {
		return out, errors.New("`commands` is required")
	}
	if req.Commands == "" {
		out.script = *args.Commands
	}
	if args.TimeoutMS != nil && req.TimeoutMS == 0 {
		if *args.TimeoutMS < 0 {
			return out, fmt.Errorf("timeout_ms must be ≥ 0, got %d", *args.TimeoutMS)
		}
		out.timeout = time.Duration(*args.TimeoutMS) * time.Millisecond
	}
	return out, nil
}

// RunScript runs a script as Run does and also returns the trace of its
// tool calls. It never panics on input; the Response reports every
// failure.
func (t *Tool) RunScript(ctx context.Context, req tools.Request, opts RunOptions) Result {
	start := time.Now()
	st := newStatusSink(opts.Status)
	defer st.close()
	st.phase(tools.PhaseValidate, 0)
	res := t.run(ctx, req, opts, st)
	res.Duration = time.Since(start)
	st.phase(tools.PhaseComplete, 100)
	return res
}

// execution is the state of one run of a script: what the tool's
// commands (tools, utilities, help, discover) share.
type execution struct {
	t      *Tool
	lim    Limits
	now    func() time.Time
	fs     *vfs.FS
	cancel context.CancelCauseFunc
	budget *budget.Budget

	stdout, stderr *capWriter

	toolCalls atomic.Int64

	limitMu  sync.Mutex
	limitErr *limitError

	seed   uint64
	randMu sync.Mutex
	draws  map[uint64]uint64 // per command key: how many streams it took (random)

	seq     atomic.Int64
	traceMu sync.Mutex
	calls   []Call
	dropped int
}

// result assembles the Result; msg, if any, ends stderr whatever its cap.
func (ex *execution) result(code int, category, msg string) Result {
	if msg != "" {
		ex.stderr.appendAlways(msg)
	}
	ex.traceMu.Lock()
	calls := ex.calls
	dropped := ex.dropped
	ex.traceMu.Unlock()
	slices.SortFunc(calls, func(a, b Call) int { return a.Seq - b.Seq })
	return Result{
		Response: tools.Response{
			Stdout:          ex.stdout.String(),
			Stderr:          ex.stderr.String(),
			ExitCode:        code,
			Error:           category,
			StdoutTruncated: ex.stdout.truncated,
			StderrTruncated: ex.stderr.truncated,
		},
		Calls:        calls,
		TraceDropped: dropped,
		StdoutBytes:  ex.stdout.written(),
		StderrBytes:  ex.stderr.written(),
	}
}

// fail records a violated limit, stops the run and returns the error for
// the interpreter (which halts on it).
func (ex *execution) fail(format string, args ...any) error {
	le := &limitError{msg: fmt.Sprintf(format, args...)}
	ex.limitMu.Lock()
	if ex.limitErr == nil {
		ex.limitErr = le
	} else {
		le = ex.limitErr
	}
	ex.limitMu.Unlock()
	ex.cancel(le)
	return le
}

func (ex *execution) limit() *limitError {
	ex.limitMu.Lock()
	defer ex.limitMu.Unlock()
	return ex.limitErr
}

// random is the entropy of one utility call (Env.Random, read by shuf):
// a ChaCha8 stream keyed by the run's seed, the command's line and
// arguments, and how many times that command ran before. A call's stream
// thus depends on the call and on what ran before it on the same line
// with the same arguments, not on the timing of other commands, so the
// stages of a pipeline draw the same numbers whatever order they start in.
func (ex *execution) random(c *shell.Command) io.Reader {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00", c.Line)
	for _, a := range c.Args {
		h.Write([]byte(a))
		h.Write([]byte{0})
	}
	key := h.Sum64()
	ex.randMu.Lock()
	if ex.draws == nil {
		ex.draws = map[uint64]uint64{}
	}
	n := ex.draws[key]
	ex.draws[key] = n + 1
	ex.randMu.Unlock()
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[0:], ex.seed)
	binary.LittleEndian.PutUint64(seed[8:], key)
	binary.LittleEndian.PutUint64(seed[16:], n)
	copy(seed[24:], "demiurge")
	return rand.NewChaCha8(seed)
}

// cmdIO is the standard streams of one command.
type cmdIO struct {
	stdin          io.Reader // nil: nothing attached
	stdout, stderr io.Writer
}

// suggest returns the command closest to name when it is close enough
// to be a typo of it, or "".
func (ex *execution) suggest(name string) string {
	if len(name) > 40 || len(name) < 2 {
		return ""
	}
	limit := 1
	if len(name) > 7 {
		limit = 2
	}
	best, bestDist := "", limit+1
	try := func(c string) {
		if len(c) < 2 {
			return
		}
		if d := osaDistance(name, c); d > 0 && d < bestDist {
			best, bestDist = c, d
		}
	}
	for _, r := range ex.t.tools {
		try(r.def.Name)
	}
	for _, c := range sandboxCommands() {
		try(c)
	}
	return best
}

// osaDistance is the edit distance of two short strings where swapping
// two neighbours counts as one edit (optimal string alignment).
func osaDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(rb) > 64 || len(ra) > 64 {
		return 1 << 10
	}
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// statusSink serializes status reports and stops them once Run returns.
type statusSink struct {
	mu     sync.Mutex
	fn     tools.StatusFunc
	closed bool
}

func newStatusSink(fn tools.StatusFunc) *statusSink { return &statusSink{fn: fn} }

func (s *statusSink) phase(phase string, pct float64) {
	if s.fn == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.fn(tools.Status{Phase: phase, PercentComplete: &pct})
	}
}

func (s *statusSink) chunk(kind, data string) {
	if s.fn == nil || data == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if kind == "stdout" {
		s.fn(tools.Stdout(data))
	} else {
		s.fn(tools.Stderr(data))
	}
}

func (s *statusSink) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// capWriter keeps at most max bytes, flags truncation, streams what it
// keeps, and never fails a write (the script goes on).
type capWriter struct {
	mu        sync.Mutex
	buf       []byte
	max       int
	total     int // bytes written, kept or not
	truncated bool
	closed    bool
	stream    string
	sink      *statusSink
	// partial is the streamed line not yet ended by a newline: output is
	// streamed a line at a time.
	partial []byte
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	w.total += len(p)
	keep := p
	if w.truncated {
		keep = nil // once cut, the rest is counted, not kept
	} else if room := w.max - len(w.buf); len(p) > room {
		// Cut on a UTF-8 boundary: never half a character.
		cut := max(room, 0)
		for cut > 0 && !utf8.RuneStart(p[cut]) {
			cut--
		}
		keep = p[:cut]
		w.truncated = true
	}
	if len(keep) > 0 {
		w.buf = append(w.buf, keep...)
		w.stream1(keep)
	}
	return len(p), nil
}

// stream1 streams output a line at a time; the caller holds w.mu.
func (w *capWriter) stream1(p []byte) {
	if w.sink == nil || w.sink.fn == nil {
		return
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.sink.chunk(w.stream, string(w.partial[:i+1]))
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) == 0 {
		w.partial = nil
	}
}

// flushPartial streams a last line that has no newline; the caller
// holds w.mu.
func (w *capWriter) flushPartial() {
	if len(w.partial) > 0 {
		w.sink.chunk(w.stream, string(w.partial))
		w.partial = nil
	}
}

func (w *capWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.flushPartial()
	w.mu.Unlock()
}

// appendAlways appends a final message regardless of the cap.
func (w *capWriter) appendAlways(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, s...)
	w.flushPartial()
	w.sink.chunk(w.stream, s)
}

// written returns how many bytes the script wrote, kept or not.
func (w *capWriter) written() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total
}

func (w *capWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}
