package serve

import (
	"bytes"
	"errors"
	"net/http"
	"sync"
	"time"
)

// sseWriter writes a Server-Sent Events stream: events, comments that keep
// the connection open while nothing happens, and the end. Each write has
// its deadline (Options.WriteTimeout): a client that stops reading is cut
// off. It is safe for concurrent use (the heartbeat writes beside the
// stream).
type sseWriter struct {
	s       *Server
	w       http.ResponseWriter
	rc      *http.ResponseController
	mu      sync.Mutex
	started bool
	quiet   bool  // the heartbeat is stopped: the handler is done with the stream
	err     error // the first failed write: the client is gone
	buf     bytes.Buffer
	timer   *time.Timer // the next heartbeat (a timer, not a goroutine, per stream)
}

// newSSE returns a stream on w whose heartbeat begins the response if the
// stream has not within startAfter (a stream that ends before, having sent
// nothing, may still answer otherwise: see close).
func (s *Server) newSSE(w http.ResponseWriter, startAfter time.Duration) *sseWriter {
	sw := &sseWriter{s: s, w: w, rc: http.NewResponseController(w)}
	sw.mu.Lock()
	sw.timer = time.AfterFunc(startAfter, sw.heartbeat)
	sw.mu.Unlock()
	return sw
}

// heartbeat sends a comment, and again every Heartbeat, while the stream
// is quiet.
func (sw *sseWriter) heartbeat() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.quiet {
		return
	}
	if !sw.started {
		sw.startLocked()
	}
	sw.writeLocked([]byte(": keep-alive\n\n"))
	sw.flushLocked()
	if sw.err == nil {
		sw.timer.Reset(sw.s.opts.Heartbeat)
	}
}

// start begins the response: the headers of an event stream.
func (sw *sseWriter) start() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if !sw.started {
		sw.startLocked()
		sw.flushLocked()
	}
}

func (sw *sseWriter) startLocked() {
	h := sw.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	sw.w.WriteHeader(http.StatusOK)
	sw.started = true
}

// writeLocked writes b, within the write deadline, to the response's
// buffer (flushed when it fills, and by flush).
func (sw *sseWriter) writeLocked(b []byte) {
	if sw.err != nil || len(b) == 0 {
		return
	}
	_ = sw.rc.SetWriteDeadline(time.Now().Add(sw.s.opts.WriteTimeout))
	if _, err := sw.w.Write(b); err != nil {
		sw.err = err
	}
}

// flushLocked sends what is buffered to the client.
func (sw *sseWriter) flushLocked() {
	if sw.err != nil {
		return
	}
	_ = sw.rc.SetWriteDeadline(time.Now().Add(sw.s.opts.WriteTimeout))
	if err := sw.rc.Flush(); err != nil {
		sw.err = err
	}
}

// flush sends what the events written since the last flush left in the
// response's buffer: a stream flushes once per batch of events that came
// together, not once per event.
func (sw *sseWriter) flush() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.started {
		sw.flushLocked()
	}
	return sw.err
}

// event writes one event (flush sends it); a failed write (the client
// went away, or stopped reading) is its error, and every later one's.
func (sw *sseWriter) event(id, typ string, data []byte) error {
	sw.buf.Reset()
	if id != "" {
		sw.buf.WriteString("id: ")
		sw.buf.WriteString(id)
		sw.buf.WriteByte('\n')
	}
	if typ != "" {
		sw.buf.WriteString("event: ")
		sw.buf.WriteString(typ)
		sw.buf.WriteByte('\n')
	}
	// The data is one line of JSON: no newline to split.
	sw.buf.WriteString("data: ")
	sw.buf.Write(data)
	sw.buf.WriteString("\n\n")
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if !sw.started {
		sw.startLocked()
	}
	sw.writeLocked(sw.buf.Bytes())
	return sw.err
}

// raw writes b as it is (a stream of another shape: OpenAI's).
func (sw *sseWriter) raw(b []byte) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if !sw.started {
		sw.startLocked()
	}
	sw.writeLocked(b)
	return sw.err
}

// close stops the heartbeat, and returns once it will write no more.
// With nothing sent, the stream has not begun: the caller may still
// answer otherwise (it returns false then).
func (sw *sseWriter) close() (started bool) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.quiet = true
	sw.timer.Stop()
	return sw.started
}

// fail ends a stream that began with an error event: {"error": {...}},
// the API's error shape; a stream the server hands over asks the client
// to come back in a second.
func (sw *sseWriter) fail(err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = serverError(err)
		if errors.Is(err, errHandedOver) {
			e = &apiError{Status: http.StatusServiceUnavailable, Type: typeBusy, Code: "shutting_down", Message: err.Error()}
		}
	}
	data, _ := jsonMarshal(map[string]*apiError{"error": e})
	if errors.Is(err, errHandedOver) {
		_ = sw.raw([]byte("retry: 1000\n\n"))
	}
	_ = sw.event("", "error", data)
	_ = sw.flush()
}
