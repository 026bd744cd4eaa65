package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/demiurge-dev/demiurge/cas"
)

// Status of a server, as ServerInfo.Status reports it.
const (
	StatusConnected = "connected" // up; its tools are listed
	StatusDied      = "died"      // it died; the next call restarts it (once)
	StatusFailed    = "failed"    // it never came up: its tools are unknown
	StatusDown      = "down"      // it died after its restart: its calls fail
	StatusClosed    = "closed"    // Set.Close closed it
)

// ErrServerDown is wrapped by the errors of calls to a server that is not
// up: one that failed to start, died after its one restart, or is closed.
var ErrServerDown = errors.New("mcp: server is down")

// conn is the connection to one server: its session, restarted once if
// the server dies.
type conn struct {
	cfg  Server
	opts *Options
	// life ends when the conn is closed: calls in flight are cancelled
	// then, so that Close never waits for them.
	life context.Context
	end  context.CancelFunc

	mu       sync.Mutex
	sess     *sdk.ClientSession
	died     chan struct{} // closed when sess ends
	stop     func()        // kills what is left of a stdio server
	status   string
	err      error // why the server is not up
	restarts int
	closed   bool
	stderr   *tail
	list     *ToolList
	listRef  cas.Ref
	skipped  []string // tools not offered, with why
	connTime time.Duration
	listTime time.Duration
}

// dial starts the server (or opens the HTTP session), initializes it and
// lists its tools. It does not touch c's state.
func (c *conn) dial(ctx context.Context) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
	defer cancel()
	start := time.Now()
	t, stop, err := c.transport(ctx)
	if err != nil {
		return nil, err
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "demiurge", Version: Version}, &sdk.ClientOptions{Logger: redactLogger(c.opts.Logger, c.cfg.Secrets)})
	sess, err := client.Connect(ctx, t, nil)
	if err != nil {
		stop()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("no answer to initialize within %s", c.opts.ConnectTimeout)
		}
		return nil, err
	}
	s := &session{sess: sess, stop: stop, connTime: time.Since(start)}
	start = time.Now()
	var listed []*sdk.Tool
	for tool, err := range sess.Tools(ctx, nil) {
		if err != nil {
			s.close()
			return nil, fmt.Errorf("list tools: %w", err)
		}
		listed = append(listed, tool)
	}
	s.listTime = time.Since(start)
	s.tools = listed
	if ir := sess.InitializeResult(); ir != nil {
		s.protocol = ir.ProtocolVersion
		if ir.ServerInfo != nil {
			s.info = *ir.ServerInfo
		}
	}
	return s, nil
}

// session is one live connection and what it listed.
type session struct {
	sess               *sdk.ClientSession
	stop               func()
	tools              []*sdk.Tool
	protocol           string
	info               sdk.Implementation
	connTime, listTime time.Duration
}

func (s *session) close() error {
	err := s.sess.Close()
	s.stop()
	return err
}

// transport returns a fresh transport to the server, and a function that
// kills what is left of it once its session is closed.
func (c *conn) transport(ctx context.Context) (sdk.Transport, func(), error) {
	nop := func() {}
	switch c.cfg.kind() {
	case "transport":
		t, err := c.cfg.Transport(ctx)
		return t, nop, err
	case "http":
		hc := &http.Client{Transport: &headerTransport{base: http.DefaultTransport, headers: c.cfg.Headers}}
		return &sdk.StreamableClientTransport{Endpoint: c.cfg.URL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nop, nil
	}
	cmd := exec.Command(c.cfg.Command, c.cfg.Args...)
	cmd.Dir = c.cfg.Dir
	cmd.Env = c.cfg.environ(c.opts.Getenv)
	cmd.Stderr = c.stderr
	newProcessGroup(cmd)
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: c.opts.Terminate}, func() { killProcessGroup(cmd) }, nil
}

// headerTransport adds the server's headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}

// start connects for the first time.
func (c *conn) start(ctx context.Context) {
	s, err := c.dial(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.status, c.err = StatusFailed, c.failure("start", err)
		return
	}
	if c.closed {
		s.close()
		return
	}
	c.adopt(s)
}

// adopt makes s the current session and watches for its end. c.mu is held.
func (c *conn) adopt(s *session) {
	died := make(chan struct{})
	c.sess, c.stop, c.died = s.sess, s.stop, died
	c.status, c.err = StatusConnected, nil
	c.connTime, c.listTime = s.connTime, s.listTime
	c.list = newToolList(&c.cfg, s)
	go func() {
		_ = s.sess.Wait()
		close(died)
	}()
}

// failure describes why the server is not up, with the end of what it
// wrote on stderr, secrets removed.
func (c *conn) failure(what string, err error) error {
	msg := fmt.Sprintf("MCP server %s (%s): %s: %v", c.cfg.Name, c.cfg.target(), what, err)
	if t := c.stderr.String(); t != "" {
		msg += "; its stderr ends: " + t
	}
	return fmt.Errorf("%w: %s", ErrServerDown, c.redact(msg))
}

// redact replaces the server's secrets in s.
func (c *conn) redact(s string) string { return redact(s, c.cfg.Secrets) }

func redact(s string, secrets []string) string {
	for _, v := range secrets {
		if v != "" && strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, secretNote)
		}
	}
	return s
}

// session returns the live session, restarting the server once if it
// died since its start. A server that failed to start, died after its
// restart, or is closed gives an error wrapping ErrServerDown.
func (c *conn) session(ctx context.Context) (*sdk.ClientSession, <-chan struct{}, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, nil, fmt.Errorf("%w: MCP server %s is closed", ErrServerDown, c.cfg.Name)
	}
	if c.sess == nil {
		return nil, nil, c.err
	}
	select {
	case <-c.died:
	default:
		return c.sess, c.died, nil
	}
	// The server died: reap it, then restart it once.
	exit := c.reap()
	if c.restarts >= 1 {
		c.status, c.err = StatusDown, c.failure("died again after its restart", exit)
		c.sess = nil
		c.opts.Logger.Warn("mcp: server down", "server", c.cfg.Name, "err", c.err)
		return nil, nil, c.err
	}
	c.restarts++
	c.opts.Logger.Warn("mcp: server died; restarting it once", "server", c.cfg.Name, "exit", c.redact(fmt.Sprint(exit)))
	s, err := c.dial(ctx)
	if err != nil {
		c.status, c.err = StatusDown, c.failure("died ("+fmt.Sprint(exit)+") and did not restart", err)
		c.sess = nil
		return nil, nil, c.err
	}
	before := c.list
	c.adopt(s)
	if before != nil && !before.sameTools(c.list) {
		c.opts.Logger.Warn("mcp: the server's tools changed when it restarted; the model still sees the first list", "server", c.cfg.Name)
	}
	if c.opts.Store != nil {
		if ref, err := c.list.store(ctx, c.opts.Store); err == nil {
			c.listRef = ref
		}
	}
	return c.sess, c.died, nil
}

// reap closes the dead session and returns how the server ended. c.mu is
// held.
func (c *conn) reap() error {
	err := c.sess.Close()
	c.stop()
	if err == nil {
		err = errors.New("the connection closed")
	}
	return err
}

// call calls a tool of the server. It returns the SDK's error for a call
// that failed at the protocol level; an error wrapping ErrServerDown when
// the server is not up or died during the call.
func (c *conn) call(ctx context.Context, tool string, args map[string]any) (*sdk.CallToolResult, error) {
	sess, died, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.life, cancel)
	defer stop()
	res, err := sess.CallTool(callCtx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err == nil {
		return res, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if c.life.Err() != nil {
		return nil, fmt.Errorf("%w: MCP server %s was closed during the call", ErrServerDown, c.cfg.Name)
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return nil, err // the server answered
	}
	// The connection failed: did the session end (the process exited, the
	// HTTP server lost the session)? The SDK notices in a goroutine.
	wait := 200 * time.Millisecond
	if errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		wait = time.Second
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-died:
	case <-t.C:
		return nil, err
	}
	c.mu.Lock()
	closed, restarts := c.closed, c.restarts
	c.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%w: MCP server %s was closed during the call", ErrServerDown, c.cfg.Name)
	}
	next := "it will be restarted for the next call"
	if restarts >= 1 {
		next = "it was restarted once already, so its tools are now unavailable"
	}
	return nil, fmt.Errorf("%w: MCP server %s died during the call (%s); %s", ErrServerDown, c.cfg.Name, c.redact(err.Error()), next)
}

// close ends the session for good.
func (c *conn) close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.end()
	sess, stop := c.sess, c.stop
	c.sess = nil
	if c.status == StatusConnected {
		c.status = StatusClosed
	}
	c.mu.Unlock()
	if sess == nil {
		return nil
	}
	err := sess.Close()
	stop()
	if benignClose(err) {
		return nil
	}
	return fmt.Errorf("close MCP server %s: %s", c.cfg.Name, c.redact(err.Error()))
}

// benignClose reports whether a session's Close error only says the
// server had to be signalled (servers that ignore the end of stdin) or had
// already gone: os.ErrProcessDone is the SDK's kill of a server that
// exited after the wait for it timed out (npx's servers, slow to go),
// which run printed as an error at every exit.
func benignClose(err error) bool {
	if err == nil {
		return true
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "signal: ") || strings.Contains(s, "file already closed") || errors.Is(err, sdk.ErrConnectionClosed) ||
		errors.Is(err, os.ErrProcessDone) || strings.Contains(s, os.ErrProcessDone.Error())
}

// tail keeps the last bytes written to it: a server's stderr, for error
// messages. It is safe for concurrent use.
type tail struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	dropped bool // bytes before buf were dropped
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) > t.max {
		p = p[len(p)-t.max:]
		t.dropped = true
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.dropped = true
	}
	return n, nil
}

// String returns the last lines kept, on one line, trimmed to a UTF-8
// boundary.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if i := bytes.IndexByte(b, '\n'); t.dropped && i >= 0 && i < len(b)-1 {
		b = b[i+1:] // a line cut at its start says little
	}
	for len(b) > 0 && b[0]&0xC0 == 0x80 {
		b = b[1:]
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "?"))
	lines := strings.Split(s, "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " ⏎ ")
}

// redactLogger returns l, with secrets replaced in the messages and text
// attributes it is given (what the SDK logs may quote a server).
func redactLogger(l *slog.Logger, secrets []string) *slog.Logger {
	if len(secrets) == 0 {
		return l
	}
	return slog.New(&redactHandler{h: l.Handler(), secrets: secrets})
}

type redactHandler struct {
	h       slog.Handler
	secrets []string
}

func (r *redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return r.h.Enabled(ctx, l) }

func (r *redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, redact(rec.Message, r.secrets), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(slog.String(a.Key, redact(a.Value.String(), r.secrets)))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r *redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = slog.String(a.Key, redact(a.Value.String(), r.secrets))
	}
	return &redactHandler{h: r.h.WithAttrs(red), secrets: r.secrets}
}

func (r *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{h: r.h.WithGroup(name), secrets: r.secrets}
}

// logger returns l or a logger that discards.
func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
