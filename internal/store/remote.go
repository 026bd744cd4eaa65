package store

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
)

// remote reads a store through the process that writes it, over the
// socket that process serves (see serve).
type remote struct {
	dir string
	pid int
	// holder names the process ("demiurge serve"; "" if it does not say).
	holder string
	hc     *http.Client
	done   func() // releases the socket's address
}

// dialWriter connects to the process serving the store in dir. It returns
// an error wrapping ErrNoWriter when there is no socket, or a socket no
// process listens on (left by a writer that was killed).
func dialWriter(ctx context.Context, dir string) (*remote, error) {
	path := filepath.Join(dir, SocketName)
	if _, err := os.Lstat(path); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoWriter, err)
	}
	addr, done, err := sockAddr(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoWriter, err)
	}
	var d net.Dialer
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, err := d.DialContext(ctx, "unix", addr)
			if err != nil {
				if errors.Is(err, os.ErrPermission) { // a socket of another user's, for them alone
					return nil, otherUser(path, socketOwner(path), 0)
				}
				return nil, err
			}
			if !peerAllowed(c) { // a socket another user put in a directory others can write
				uid, pid := peerCred(c)
				_ = c.Close()
				return nil, otherUser(path, uid, pid)
			}
			return c, nil
		},
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
	}
	r := &remote{dir: dir, hc: &http.Client{Transport: tr}, done: func() { tr.CloseIdleConnections(); done() }}
	var info wireInfo
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := r.getJSON(ictx, "info", nil, &info); err != nil {
		r.close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, ErrOtherUser) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrNoWriter, path, err)
	}
	if info.Protocol != protocol {
		r.close()
		return nil, fmt.Errorf("%w: %s speaks read protocol %d, this demiurge %d (process %d writes the store with another version of demiurge)",
			ErrNoWriter, path, info.Protocol, protocol, info.PID)
	}
	r.pid, r.holder = info.PID, info.Command
	return r, nil
}

func (r *remote) close() { r.done() }

// otherUserError says that the process serving a store's socket runs as
// another user. It wraps ErrOtherUser.
type otherUserError struct {
	path     string
	uid, pid int // -1 and 0 when not known
}

func otherUser(path string, uid, pid int) *otherUserError {
	return &otherUserError{path: path, uid: uid, pid: pid}
}

func (e *otherUserError) Error() string {
	who, as := "another user", "that user"
	if e.uid >= 0 {
		who = fmt.Sprintf("uid %d", e.uid)
		if u, err := user.LookupId(strconv.Itoa(e.uid)); err == nil {
			who, as = fmt.Sprintf("user %s (uid %d)", u.Username, e.uid), u.Username
		}
	}
	proc := "a process"
	if e.pid > 0 {
		proc = fmt.Sprintf("process %d", e.pid)
	}
	return fmt.Sprintf("%v: %s of %s writes store %s, and its socket answers only that user: "+
		"run this command as %s, answer at that process's terminal, or wait until it has stopped",
		ErrOtherUser, proc, who, filepath.Dir(e.path), as)
}

func (e *otherUserError) Unwrap() error { return ErrOtherUser }

// gone wraps a transport error: the writer is no longer there.
func (r *remote) gone(err error) error {
	return fmt.Errorf("%w: process %d stopped serving store %s (%v)", ErrWriterGone, r.pid, r.dir, err)
}

// get sends a request and returns the response if its status is 200;
// otherwise it returns the error the writer sent, rebuilt.
func (r *remote) get(ctx context.Context, path string, q url.Values) (*http.Response, error) {
	u := "http://demiurge/v1/" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if oe := (*otherUserError)(nil); errors.As(err, &oe) {
			return nil, oe
		}
		return nil, r.gone(err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	var we wireError
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&we); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, r.gone(fmt.Errorf("%s: %s", path, resp.Status))
	}
	return nil, r.fromWire(we)
}

func (r *remote) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	resp, err := r.get(ctx, path, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return r.gone(err)
	}
	return nil
}

// remoteError is an error the writer's store returned, as the reader
// rebuilds it: the writer's message, and the sentinel it wrapped.
type remoteError struct {
	msg string
	is  error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.is }

// fromWire rebuilds an error the writer sent.
func (r *remote) fromWire(we wireError) error {
	switch we.Kind {
	case kindClosed:
		return r.gone(errors.New(we.Error))
	case kindNotFound:
		return &remoteError{we.Error, cas.ErrNotFound}
	case kindCorruptBlob:
		ref, rerr := cas.ParseRef(we.Ref)
		got, gerr := cas.ParseRef(we.Got)
		if rerr == nil && gerr == nil {
			return &cas.CorruptError{Ref: ref, Got: got}
		}
		return &remoteError{we.Error, cas.ErrCorrupt}
	case kindCorrupt:
		return &remoteError{we.Error, journal.ErrCorrupt}
	case kindInvalidWorld:
		return &remoteError{we.Error, journal.ErrInvalidWorld}
	case kindNoApprovals:
		return &remoteError{we.Error, ErrNoApprovals}
	case kindNotWaiting:
		return &remoteError{we.Error, ErrNotWaiting}
	case kindNotRunning:
		return &remoteError{we.Error, ErrNotRunning}
	}
	return &remoteError{we.Error, nil}
}

func (r *remote) worlds(ctx context.Context) ([]string, error) {
	var res struct {
		Worlds []string   `json:"worlds"`
		Error  *wireError `json:"error"`
	}
	if err := r.getJSON(ctx, "worlds", nil, &res); err != nil {
		return nil, err
	}
	if res.Error != nil {
		return res.Worlds, r.fromWire(*res.Error)
	}
	return res.Worlds, nil
}

func (r *remote) head(ctx context.Context, world string) (journal.Head, error) {
	if err := journal.ValidateWorld(world); err != nil {
		return journal.Head{}, err
	}
	var wh wireHead
	if err := r.getJSON(ctx, "head", url.Values{"world": {world}}, &wh); err != nil {
		return journal.Head{}, err
	}
	h, err := wh.head()
	if err != nil {
		return journal.Head{}, r.gone(err)
	}
	return h, nil
}

// wait returns the world's durable head once it is past seq after, or
// when the writer's wait ends (about maxWait) with the head as it is.
func (r *remote) wait(ctx context.Context, world string, after uint64) (journal.Head, error) {
	if err := journal.ValidateWorld(world); err != nil {
		return journal.Head{}, err
	}
	q := url.Values{"world": {world}, "after": {strconv.FormatUint(after, 10)}, "wait_ms": {strconv.FormatInt(maxWait.Milliseconds(), 10)}}
	var wh wireHead
	if err := r.getJSON(ctx, "wait", q, &wh); err != nil {
		return journal.Head{}, err
	}
	h, err := wh.head()
	if err != nil {
		return journal.Head{}, r.gone(err)
	}
	return h, nil
}

// maxFrame bounds one record's bytes on the wire: a payload at its limit
// and the record's other fields.
const maxFrame = journal.MaxPayloadSize + 4096

// read calls fn with the world's durable records from seq from, checking
// the chain again as they arrive: each record decodes, carries the seq
// expected and links to the one before (and the first, when prev is
// valid, to prev). It reads up to the durable head as the writer saw it
// at the first page, a page a request. It returns the last record given
// to fn (the zero Record if none).
func (r *remote) read(ctx context.Context, world string, from uint64, prev cas.Ref, fn func(journal.Record) error) (last journal.Record, err error) {
	if err := journal.ValidateWorld(world); err != nil {
		return last, err
	}
	from = max(from, 1)
	if from == 1 {
		prev = journal.Genesis(world)
	}
	var to uint64 // the head of the first page
	for {
		q := url.Values{"world": {world}, "from": {strconv.FormatUint(from, 10)}}
		if to != 0 {
			q.Set("to", strconv.FormatUint(to, 10))
		}
		tr, n, err := r.page(ctx, q, world, &from, &prev, &last, fn)
		if err != nil {
			return last, err
		}
		if tr.Error != nil {
			return last, r.fromWire(*tr.Error)
		}
		h, err := tr.Head.head()
		if err != nil {
			return last, r.gone(err)
		}
		if to == 0 {
			to = h.Seq
		}
		if last.Seq == h.Seq && last.Seq != 0 && last.Hash != h.Hash {
			return last, &remoteError{fmt.Sprintf("journal: world %s: record %d is %s, but the head says %s", world, last.Seq, last.Hash, h.Hash), journal.ErrCorrupt}
		}
		if !tr.More || n == 0 || from > to {
			return last, nil
		}
	}
}

// page reads one page of records; see read.
func (r *remote) page(ctx context.Context, q url.Values, world string, from *uint64, prev *cas.Ref, last *journal.Record, fn func(journal.Record) error) (tr recordsTrailer, n int, err error) {
	resp, err := r.get(ctx, "records", q)
	if err != nil {
		return tr, 0, err
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	broken := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return r.gone(fmt.Errorf("reading records of world %s: %w", world, err))
	}
	for {
		size, err := binary.ReadUvarint(br)
		if err != nil {
			return tr, n, broken(err)
		}
		if size == 0 {
			break
		}
		if size > maxFrame {
			return tr, n, broken(fmt.Errorf("a record of %d bytes", size))
		}
		b := make([]byte, size)
		if _, err := io.ReadFull(br, b); err != nil {
			return tr, n, broken(err)
		}
		rec, err := journal.DecodeRecord(b)
		switch {
		case err != nil:
			return tr, n, &remoteError{fmt.Sprintf("journal: world %s: record %d does not decode: %v", world, *from, err), journal.ErrCorrupt}
		case rec.Seq != *from:
			return tr, n, &remoteError{fmt.Sprintf("journal: world %s: got record %d, want %d", world, rec.Seq, *from), journal.ErrCorrupt}
		case prev.Valid() && rec.Prev != *prev:
			return tr, n, &remoteError{fmt.Sprintf("journal: world %s: hash chain broken at seq %d: it links to %s, the record before is %s", world, rec.Seq, rec.Prev, *prev), journal.ErrCorrupt}
		}
		if err := fn(rec); err != nil {
			return tr, n, err
		}
		*last, *prev, *from = rec, rec.Hash, rec.Seq+1
		n++
	}
	if err := json.NewDecoder(io.LimitReader(br, 1<<20)).Decode(&tr); err != nil {
		return tr, n, broken(err)
	}
	return tr, n, nil
}

func (r *remote) get1(ctx context.Context, ref cas.Ref) ([]byte, error) {
	if ref.Algo() != cas.BLAKE3 {
		return nil, fmt.Errorf("%w: %s", cas.ErrNotFound, ref) // a SHA256 ref is never held
	}
	resp, err := r.get(ctx, "blob", url.Values{"ref": {ref.String()}})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, r.gone(err)
	}
	if got := cas.Sum(b); got != ref {
		return nil, &cas.CorruptError{Ref: ref, Got: got, Err: errors.New("as the writer sent it")}
	}
	return b, nil
}

// getMany gets blobs in one request; see Live.GetMany. A blob the answer
// had no room for is left nil with ok false.
func (r *remote) getMany(ctx context.Context, refs []cas.Ref, blobs [][]byte, done []bool) error {
	var body strings.Builder
	for _, ref := range refs {
		body.WriteString(ref.String())
		body.WriteByte('\n')
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://demiurge/v1/blobs", strings.NewReader(body.String()))
	if err != nil {
		return err
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return r.gone(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var we wireError
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&we); err != nil {
			return r.gone(fmt.Errorf("blobs: %s", resp.Status))
		}
		return r.fromWire(we)
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	broken := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return r.gone(fmt.Errorf("reading blobs: %w", err))
	}
	for i, ref := range refs {
		kind, err := br.ReadByte()
		if err != nil {
			return broken(err)
		}
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return broken(err)
		}
		if n > maxFrame*4 {
			return broken(fmt.Errorf("an entry of %d bytes", n))
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return broken(err)
		}
		switch kind {
		case manyBlob:
			if got := cas.Sum(b); got != ref {
				return &cas.CorruptError{Ref: ref, Got: got, Err: errors.New("as the writer sent it")}
			}
			blobs[i], done[i] = b, true
		case manyNotFound:
			done[i] = true
		case manySkipped:
		case manyError:
			var we wireError
			if err := json.Unmarshal(b, &we); err != nil {
				return broken(err)
			}
			return r.fromWire(we)
		default:
			return broken(fmt.Errorf("an entry of kind %q", kind))
		}
	}
	return nil
}

func (r *remote) stat(ctx context.Context, ref cas.Ref) (int64, error) {
	if ref.Algo() != cas.BLAKE3 {
		return 0, fmt.Errorf("%w: %s", cas.ErrNotFound, ref)
	}
	var res struct {
		Size int64 `json:"size"`
	}
	if err := r.getJSON(ctx, "stat", url.Values{"ref": {ref.String()}}, &res); err != nil {
		return 0, err
	}
	return res.Size, nil
}

// iterate calls fn with each blob the writer's store lists. fn runs
// while the response is read: it should be quick.
func (r *remote) iterate(ctx context.Context, fn func(cas.Ref, int64) error) error {
	resp, err := r.get(ctx, "blobs", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var wb wireBlob
		if err := dec.Decode(&wb); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return r.gone(err)
		}
		switch {
		case wb.Error != nil:
			return r.fromWire(*wb.Error)
		case wb.End:
			return nil
		}
		ref, err := cas.ParseRef(wb.Ref)
		if err != nil {
			return r.gone(err)
		}
		if err := fn(ref, wb.Size); err != nil {
			return err
		}
	}
}
