package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
)

// SocketName is the name of the unix socket, in the store directory,
// through which the process that writes a store serves reads to other
// processes (see "Reading while another process writes" in the package
// documentation).
const SocketName = "demiurge.sock"

// protocol is the version of the read protocol; the paths carry it.
const protocol = 1

// Limits of one page of records the server sends: a reader asks for the
// next page from the seq after the last.
const (
	pageRecords = 512
	pageBytes   = 4 << 20
)

// maxWait bounds how long the server holds a wait request open; the
// reader asks again.
const maxWait = 30 * time.Second

// waitBatch is the least time the server holds a wait request before
// answering it: a reader that follows a world committing without pause
// then reads the commits of waitBatch at once, a few rounds a second,
// instead of one round (and the writer's work for it) per commit. A
// commit after a longer quiet is answered at once.
const waitBatch = 50 * time.Millisecond

// server serves reads of a store opened read-write to other processes,
// over the unix socket SocketName in the store directory. It answers from
// what the journal has made durable only (journal.Bolt.Committed).
type server struct {
	s      *Store
	ln     net.Listener
	http   *http.Server
	path   string // the socket's path
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // requests being served
	pid    int            // this process

	// mu orders a request's wg.Add before close's wg.Wait: a request
	// that finds the server closed is not counted (WaitGroup wants every
	// Add from zero to happen before Wait).
	mu     sync.Mutex
	closed bool

	// approvals handles the decisions other processes send (see
	// HandleApprovals); nil or a nil handler refuses them.
	approvals atomic.Pointer[ApprovalHandler]
}

// serve starts serving reads of s. It binds the socket under a temporary
// name, restricts it to the user (0600) and renames it into place, so
// that no reader ever reaches a socket with other permissions. A socket
// already there was left by a writer that died: this process holds the
// store's lock, so no other process serves it.
func serve(s *Store) (*server, error) {
	path := filepath.Join(s.dir, SocketName)
	tmp := filepath.Join(s.dir, fmt.Sprintf(".%s.%d", SocketName, os.Getpid()))
	_ = os.Remove(tmp)
	addr, done, err := sockAddr(tmp)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", addr)
	done()
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // it is renamed: Close removes it by name
	if err := os.Chmod(tmp, 0o600); err != nil {
		_ = ln.Close()
		_ = os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = ln.Close()
		_ = os.Remove(tmp)
		return nil, err
	}
	sv := &server{s: s, ln: peerListener{ln}, path: path, pid: os.Getpid()}
	sv.ctx, sv.cancel = context.WithCancel(context.Background())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/info", sv.info)
	mux.HandleFunc("GET /v1/worlds", sv.worlds)
	mux.HandleFunc("GET /v1/head", sv.head)
	mux.HandleFunc("GET /v1/records", sv.records)
	mux.HandleFunc("GET /v1/wait", sv.wait)
	mux.HandleFunc("GET /v1/blob", sv.blob)
	mux.HandleFunc("POST /v1/blobs", sv.blobMany)
	mux.HandleFunc("GET /v1/stat", sv.stat)
	mux.HandleFunc("GET /v1/blobs", sv.blobs)
	mux.HandleFunc("POST /v1/approval", sv.approval) // the one request that leads to a write: see HandleApprovals
	sv.http = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sv.mu.Lock()
			if sv.closed {
				sv.mu.Unlock()
				writeError(w, journal.ErrClosed)
				return
			}
			sv.wg.Add(1)
			sv.mu.Unlock()
			defer sv.wg.Done()
			mux.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return sv.ctx },
		ConnContext:       withPeer,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() { _ = sv.http.Serve(sv.ln) }()
	return sv, nil
}

// close stops serving: no new request is taken, requests being served
// end (a wait at once), and the socket file is removed. It returns once
// no request uses the store any more.
func (sv *server) close() {
	sv.mu.Lock()
	sv.closed = true
	sv.mu.Unlock()
	sv.cancel()
	_ = sv.http.Close()
	sv.wg.Wait()
	_ = os.Remove(sv.path)
}

// peerListener accepts only connections of processes of this user.
type peerListener struct{ net.Listener }

func (l peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if peerAllowed(c) {
			return c, nil
		}
		_ = c.Close()
	}
}

// wireHead is a journal.Head on the wire.
type wireHead struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash,omitempty"`
}

func toWire(h journal.Head) wireHead {
	if h.Seq == 0 {
		return wireHead{}
	}
	return wireHead{Seq: h.Seq, Hash: h.Hash.String()}
}

func (w wireHead) head() (journal.Head, error) {
	if w.Seq == 0 {
		return journal.Head{}, nil
	}
	ref, err := cas.ParseRef(w.Hash)
	if err != nil {
		return journal.Head{}, fmt.Errorf("head %d: %w", w.Seq, err)
	}
	return journal.Head{Seq: w.Seq, Hash: ref}, nil
}

// wireError is an error on the wire: its message, and the kind of error
// the reader rebuilds so that errors.Is and errors.As see what the
// writer's store returned.
type wireError struct {
	Error string `json:"error"`
	Kind  string `json:"kind"`
	Ref   string `json:"ref,omitempty"` // a corrupt blob: its ref
	Got   string `json:"got,omitempty"` // and what its bytes hash to
}

// Kinds of wireError.
const (
	kindNotFound     = "not_found"     // cas.ErrNotFound
	kindCorruptBlob  = "corrupt_blob"  // cas.ErrCorrupt
	kindCorrupt      = "corrupt"       // journal.ErrCorrupt
	kindInvalidWorld = "invalid_world" // journal.ErrInvalidWorld
	kindInvalid      = "invalid"       // a bad request
	kindClosed       = "closed"        // the writer is closing the store
	kindNoApprovals  = "no_approvals"  // ErrNoApprovals
	kindNotWaiting   = "not_waiting"   // ErrNotWaiting
	kindNotRunning   = "not_running"   // ErrNotRunning
	kindOther        = "other"
)

func errorToWire(err error) (int, wireError) {
	we := wireError{Error: err.Error(), Kind: kindOther}
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrNoApprovals):
		we.Kind, status = kindNoApprovals, http.StatusNotImplemented
	case errors.Is(err, ErrNotWaiting):
		we.Kind, status = kindNotWaiting, http.StatusConflict
	case errors.Is(err, ErrNotRunning):
		we.Kind, status = kindNotRunning, http.StatusNotFound
	case errors.Is(err, journal.ErrClosed), errors.Is(err, cas.ErrClosed):
		we.Kind, status = kindClosed, http.StatusServiceUnavailable
	case errors.Is(err, journal.ErrInvalidWorld):
		we.Kind, status = kindInvalidWorld, http.StatusBadRequest
	case errors.Is(err, errInvalid):
		we.Kind, status = kindInvalid, http.StatusBadRequest
	case errors.Is(err, cas.ErrNotFound):
		we.Kind, status = kindNotFound, http.StatusNotFound
	case errors.Is(err, journal.ErrCorrupt):
		we.Kind = kindCorrupt
	case errors.Is(err, cas.ErrCorrupt):
		we.Kind = kindCorruptBlob
		if ce, ok := errors.AsType[*cas.CorruptError](err); ok && ce.Got.Valid() {
			we.Ref, we.Got = ce.Ref.String(), ce.Got.String()
		}
	}
	return status, we
}

// errInvalid marks a request the server cannot read.
var errInvalid = errors.New("invalid request")

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInvalid, fmt.Sprintf(format, args...))
}

func writeError(w http.ResponseWriter, err error) {
	status, we := errorToWire(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(we)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func queryUint(r *http.Request, name string) (uint64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, invalidf("%s=%q is not a number", name, s)
	}
	return n, nil
}

func queryRef(r *http.Request) (cas.Ref, error) {
	ref, err := cas.ParseRef(r.URL.Query().Get("ref"))
	if err != nil {
		return cas.Ref{}, invalidf("%v", err)
	}
	return ref, nil
}

// wireInfo says who serves.
type wireInfo struct {
	Protocol int `json:"protocol"`
	PID      int `json:"pid"`
	// Command names the process ("demiurge serve"), for one that finds
	// the store locked (LockedError); "" from a demiurge older than it.
	Command string `json:"command,omitempty"`
}

func (sv *server) info(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, wireInfo{Protocol: protocol, PID: sv.pid, Command: sv.s.holder})
}

// worlds lists the worlds with durable records.
func (sv *server) worlds(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	j := sv.s.journal
	names, err := j.Worlds(ctx)
	if err != nil && names == nil {
		writeError(w, err)
		return
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		h, herr := j.Committed(ctx, n)
		if herr != nil || h.Seq > 0 { // a damaged world is listed, as Worlds lists it
			out = append(out, n)
		}
	}
	res := struct {
		Worlds []string   `json:"worlds"`
		Error  *wireError `json:"error,omitempty"`
	}{Worlds: out}
	if err != nil {
		_, we := errorToWire(err)
		res.Error = &we
	}
	writeJSON(w, res)
}

func (sv *server) head(w http.ResponseWriter, r *http.Request) {
	h, err := sv.s.journal.Committed(r.Context(), r.URL.Query().Get("world"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, toWire(h))
}

// recordsTrailer ends a page of records.
type recordsTrailer struct {
	Head  wireHead   `json:"head"` // the durable head the page was read against
	More  bool       `json:"more"` // the page is full: ask again from the seq after its last record
	Error *wireError `json:"error,omitempty"`
}

// errPageFull stops a read at a page's limits.
var errPageFull = errors.New("page full")

// records sends the durable records of a world from seq from, up to seq
// to (0: the durable head), a page at most: each record's stored bytes
// (journal.Record.Encode) after its length as a uvarint, then a zero
// length and the trailer in JSON. The reader checks the chain again.
func (sv *server) records(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	world := q.Get("world")
	from, err := queryUint(r, "from")
	if err != nil {
		writeError(w, err)
		return
	}
	to, err := queryUint(r, "to")
	if err != nil {
		writeError(w, err)
		return
	}
	j := sv.s.journal
	h, err := j.Committed(ctx, world)
	if err != nil {
		writeError(w, err)
		return
	}
	limit := h.Seq
	if to != 0 && to < limit {
		limit = to
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	var tr recordsTrailer
	tr.Head = toWire(h)
	n, size := 0, 0
	var frame []byte
	err = j.Read(ctx, world, max(from, 1), func(rec journal.Record) error {
		if rec.Seq > limit {
			return errPageFull // not more: the page reached its end
		}
		if n >= pageRecords || size >= pageBytes {
			tr.More = true
			return errPageFull
		}
		b, err := rec.Encode()
		if err != nil {
			return err
		}
		frame = binary.AppendUvarint(frame[:0], uint64(len(b)))
		frame = append(frame, b...)
		if _, err := w.Write(frame); err != nil {
			return err
		}
		n, size = n+1, size+len(b)
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		if ctx.Err() != nil {
			return // the reader left
		}
		_, we := errorToWire(err)
		tr.Error = &we
	}
	end, _ := json.Marshal(tr)
	frame = binary.AppendUvarint(frame[:0], 0)
	_, _ = w.Write(append(frame, end...))
}

// wait answers once the world's durable head is past seq after (and
// waitBatch has passed since the request came), or after wait_ms
// milliseconds (at most maxWait) with the head as it is.
func (sv *server) wait(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	world := r.URL.Query().Get("world")
	after, err := queryUint(r, "after")
	if err != nil {
		writeError(w, err)
		return
	}
	ms, err := queryUint(r, "wait_ms")
	if err != nil {
		writeError(w, err)
		return
	}
	start := time.Now()
	d := min(time.Duration(ms)*time.Millisecond, maxWait)
	timer := time.NewTimer(d)
	defer timer.Stop()
	j := sv.s.journal
	for {
		changed := j.Changed() // before Committed: a commit between them is not missed
		h, err := j.Committed(ctx, world)
		if err != nil {
			writeError(w, err)
			return
		}
		if h.Seq > after {
			if rest := waitBatch - time.Since(start); rest > 0 {
				t := time.NewTimer(rest)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					writeError(w, journal.ErrClosed)
					return
				}
				if h, err = j.Committed(ctx, world); err != nil {
					writeError(w, err)
					return
				}
			}
			writeJSON(w, toWire(h))
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			writeJSON(w, toWire(h))
			return
		case <-ctx.Done():
			writeError(w, journal.ErrClosed)
			return
		}
	}
}

func (sv *server) blob(w http.ResponseWriter, r *http.Request) {
	ref, err := queryRef(r)
	if err != nil {
		writeError(w, err)
		return
	}
	b, err := sv.s.cas.Get(r.Context(), ref)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// maxMany bounds the refs of one blobMany request, and manyBytes the
// blobs' bytes it sends (the reader asks again for the rest).
const (
	maxMany   = 1024
	manyBytes = 16 << 20
)

// Entries of a blobMany answer: a kind byte, a uvarint length, bytes.
const (
	manyBlob     = 'b' // the blob's bytes
	manyNotFound = 'n' // nothing
	manySkipped  = 's' // not sent: the answer is full
	manyError    = 'e' // a wireError in JSON
)

// blobMany sends the blobs named in the request body (one ref a line, at
// most maxMany), in order, each as an entry: one round trip for the
// blobs of many records.
func (sv *server) blobMany(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxMany*80))
	if err != nil {
		writeError(w, invalidf("%v", err))
		return
	}
	var refs []cas.Ref
	for line := range strings.Lines(string(body)) {
		ref, err := cas.ParseRef(strings.TrimSpace(line))
		if err != nil {
			writeError(w, invalidf("%v", err))
			return
		}
		refs = append(refs, ref)
	}
	if len(refs) > maxMany {
		writeError(w, invalidf("%d refs, at most %d", len(refs), maxMany))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	var entry []byte
	sent := 0
	for _, ref := range refs {
		kind, b := byte(manySkipped), []byte(nil)
		if sent < manyBytes {
			var err error
			switch b, err = sv.s.cas.Get(r.Context(), ref); {
			case err == nil:
				kind = manyBlob
				sent += len(b)
			case errors.Is(err, cas.ErrNotFound):
				kind = manyNotFound
			default:
				_, we := errorToWire(err)
				kind = manyError
				b, _ = json.Marshal(we)
			}
		}
		entry = append(entry[:0], kind)
		entry = binary.AppendUvarint(entry, uint64(len(b)))
		if _, err := w.Write(append(entry, b...)); err != nil {
			return
		}
	}
}

func (sv *server) stat(w http.ResponseWriter, r *http.Request) {
	ref, err := queryRef(r)
	if err != nil {
		writeError(w, err)
		return
	}
	n, err := sv.s.cas.Stat(r.Context(), ref)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, struct {
		Size int64 `json:"size"`
	}{n})
}

// wireBlob is one line of the blobs listing; the last line has End set,
// or Error.
type wireBlob struct {
	Ref   string     `json:"ref,omitempty"`
	Size  int64      `json:"size,omitempty"`
	End   bool       `json:"end,omitempty"`
	Error *wireError `json:"error,omitempty"`
}

// blobs lists every blob as JSON lines, as cas.Bolt.Iterate walks them
// (in short read transactions, none open while a line is sent).
func (sv *server) blobs(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	err := sv.s.cas.Iterate(r.Context(), func(ref cas.Ref, size int64) error {
		return enc.Encode(wireBlob{Ref: ref.String(), Size: size})
	})
	last := wireBlob{End: true}
	if err != nil {
		if r.Context().Err() != nil {
			return
		}
		_, we := errorToWire(err)
		last = wireBlob{Error: &we}
	}
	_ = enc.Encode(last)
}
