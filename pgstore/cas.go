package pgstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/zeebo/blake3"

	"github.com/demiurge-dev/demiurge/cas"
)

// CAS is a cas.Store in the tables cas_blobs (a row per blob: digest,
// size, and its bytes if it is at most ChunkSize) and cas_chunks (the
// bytes of larger blobs, ChunkSize a row). Get re-hashes what it reads;
// Reader and PutReader stream a blob of any size through ChunkSize of
// memory.
type CAS struct {
	s      *Store
	closed atomic.Bool
}

var _ cas.Store = (*CAS)(nil)

func (c *CAS) enter(ctx context.Context) error {
	if c.closed.Load() || !c.s.enter() {
		return cas.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		c.s.users.Done()
		return err
	}
	return nil
}

func (c *CAS) errorf(op string, ref cas.Ref, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return c.s.wrap(fmt.Errorf("cas: %s %s: %s: %w", op, ref, c.s.name, err))
}

// Put implements cas.Putter: one statement; a blob already stored is not
// written again.
func (c *CAS) Put(ctx context.Context, data []byte) (cas.Ref, error) {
	if err := c.enter(ctx); err != nil {
		return cas.Ref{}, err
	}
	defer c.s.users.Done()
	if c.s.readOnly {
		return cas.Ref{}, cas.ErrReadOnly
	}
	ref := cas.Sum(data)
	b := &pgx.Batch{}
	queueBlobs(b, [][]byte{data})
	if err := c.s.pool.SendBatch(context.WithoutCancel(ctx), b).Close(); err != nil {
		return cas.Ref{}, c.errorf("put", ref, err)
	}
	return ref, nil
}

// Get implements cas.Getter.
func (c *CAS) Get(ctx context.Context, ref cas.Ref) ([]byte, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.s.users.Done()
	if ref.Algo() != cas.BLAKE3 {
		return nil, fmt.Errorf("%w: %s", cas.ErrNotFound, ref)
	}
	d := ref.Digest()
	var size int64
	var data []byte
	err := c.s.pool.QueryRow(ctx, `SELECT size, data FROM cas_blobs WHERE digest = $1`, d[:]).Scan(&size, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", cas.ErrNotFound, ref)
	}
	if err != nil {
		return nil, c.errorf("get", ref, err)
	}
	if data == nil {
		if data, err = c.chunks(ctx, d[:], size); err != nil {
			return nil, c.errorf("get", ref, err)
		}
	}
	if got := cas.Sum(data); got != ref {
		return nil, &cas.CorruptError{Ref: ref, Got: got}
	}
	if int64(len(data)) != size {
		return nil, &cas.CorruptError{Ref: ref, Got: cas.Sum(data), Err: fmt.Errorf("its row says %d bytes, it has %d", size, len(data))}
	}
	return data, nil
}

// chunks reads the chunks of a large blob, in order.
func (c *CAS) chunks(ctx context.Context, digest []byte, size int64) ([]byte, error) {
	rows, err := c.s.pool.Query(ctx, `SELECT data FROM cas_chunks WHERE digest = $1 ORDER BY n`, digest)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]byte, 0, min(max(size, 0), 1<<30))
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		out = append(out, raw...)
	}
	return out, rows.Err()
}

// Has implements cas.Haser.
func (c *CAS) Has(ctx context.Context, ref cas.Ref) (bool, error) {
	if err := c.enter(ctx); err != nil {
		return false, err
	}
	defer c.s.users.Done()
	if ref.Algo() != cas.BLAKE3 {
		return false, nil
	}
	d := ref.Digest()
	var one int
	err := c.s.pool.QueryRow(ctx, `SELECT 1 FROM cas_blobs WHERE digest = $1`, d[:]).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, c.errorf("has", ref, err)
	}
	return true, nil
}

// Stat implements cas.Statter.
func (c *CAS) Stat(ctx context.Context, ref cas.Ref) (int64, error) {
	if err := c.enter(ctx); err != nil {
		return 0, err
	}
	defer c.s.users.Done()
	if ref.Algo() != cas.BLAKE3 {
		return 0, fmt.Errorf("%w: %s", cas.ErrNotFound, ref)
	}
	d := ref.Digest()
	var size int64
	err := c.s.pool.QueryRow(ctx, `SELECT size FROM cas_blobs WHERE digest = $1`, d[:]).Scan(&size)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: %s", cas.ErrNotFound, ref)
	}
	if err != nil {
		return 0, c.errorf("stat", ref, err)
	}
	return size, nil
}

// iteratePage is how many blobs one query of Iterate lists.
const iteratePage = 1000

// Iterate implements cas.Iterator: a page of refs per query, so fn may
// call the store.
func (c *CAS) Iterate(ctx context.Context, fn func(ref cas.Ref, size int64) error) error {
	after := []byte{}
	for {
		if err := c.enter(ctx); err != nil {
			return err
		}
		rows, err := c.s.pool.Query(ctx, `SELECT digest, size FROM cas_blobs WHERE digest > $1 ORDER BY digest LIMIT $2`, after, iteratePage)
		type item struct {
			ref  cas.Ref
			size int64
		}
		var page []item
		if err == nil {
			for rows.Next() {
				var d []byte
				var size int64
				if err = rows.Scan(&d, &size); err != nil {
					break
				}
				ref, ok := refOf(d)
				if !ok {
					err = fmt.Errorf("%w: a blob row's digest is %d bytes, want %d", cas.ErrCorrupt, len(d), cas.Size)
					break
				}
				page = append(page, item{ref, size})
			}
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
		}
		c.s.users.Done()
		if err != nil {
			return c.errorf("iterate after", refOrZero(after), err)
		}
		for _, it := range page {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(it.ref, it.size); err != nil {
				return err
			}
		}
		if len(page) < iteratePage {
			return ctx.Err()
		}
		d := page[len(page)-1].ref.Digest()
		after = d[:]
	}
}

func refOrZero(d []byte) cas.Ref {
	r, _ := refOf(d)
	return r
}

// Close implements cas.Store: later calls of the CAS return
// cas.ErrClosed. It does not close the store's connections.
func (c *CAS) Close() error {
	c.closed.Store(true)
	return nil
}

// Reader returns a reader of the blob ref that reads it a chunk at a
// time, one query each, so a blob of any size streams through ChunkSize
// bytes of memory. It returns an error wrapping cas.ErrNotFound if the
// store does not hold ref. The bytes are hashed as they are read: a blob
// whose bytes do not hash to ref ends with a *cas.CorruptError instead of
// io.EOF, so only a read that reached io.EOF read good bytes. The caller
// closes the reader; ctx bounds every read.
func (c *CAS) Reader(ctx context.Context, ref cas.Ref) (io.ReadCloser, error) {
	size, err := c.Stat(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &blobReader{c: c, ctx: ctx, ref: ref, size: size, h: blake3.New()}, nil
}

type blobReader struct {
	c    *CAS
	ctx  context.Context
	ref  cas.Ref
	size int64
	h    *blake3.Hasher
	buf  []byte // what is left of the current chunk
	next int32  // the next chunk to read
	read int64  // bytes read so far
	err  error  // sticky
}

func (r *blobReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	for len(r.buf) == 0 {
		if r.read >= r.size {
			r.err = r.finish()
			return 0, r.err
		}
		if err := r.fill(); err != nil {
			r.err = err
			return 0, err
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// fill reads the next chunk (or the whole small blob).
func (r *blobReader) fill() error {
	if err := r.c.enter(r.ctx); err != nil {
		return err
	}
	defer r.c.s.users.Done()
	d := r.ref.Digest()
	var data []byte
	var err error
	if r.size <= ChunkSize {
		err = r.c.s.pool.QueryRow(r.ctx, `SELECT data FROM cas_blobs WHERE digest = $1`, d[:]).Scan(&data)
	} else {
		err = r.c.s.pool.QueryRow(r.ctx, `SELECT data FROM cas_chunks WHERE digest = $1 AND n = $2`, d[:], r.next).Scan(&data)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &cas.CorruptError{Ref: r.ref, Got: r.sum(), Err: fmt.Errorf("chunk %d of a %d-byte blob is missing", r.next, r.size)}
	}
	if err != nil {
		return r.c.errorf("read", r.ref, err)
	}
	if len(data) == 0 || r.read+int64(len(data)) > r.size {
		return &cas.CorruptError{Ref: r.ref, Got: r.sum(), Err: fmt.Errorf("chunk %d holds %d bytes; the blob is %d, %d read", r.next, len(data), r.size, r.read)}
	}
	_, _ = r.h.Write(data)
	r.next++
	r.read += int64(len(data))
	r.buf = data
	return nil
}

func (r *blobReader) sum() cas.Ref {
	var d [cas.Size]byte
	r.h.Sum(d[:0])
	return cas.RefFromDigest(cas.BLAKE3, d)
}

// finish checks the hash at the end of the blob.
func (r *blobReader) finish() error {
	if got := r.sum(); got != r.ref {
		return &cas.CorruptError{Ref: r.ref, Got: got}
	}
	return io.EOF
}

func (r *blobReader) Close() error {
	if r.err == nil {
		r.err = errors.New("pgstore: blob reader closed")
	}
	return nil
}

// PutReader stores the bytes of rd as one blob and returns its ref and
// size, holding ChunkSize bytes in memory at a time: the chunks are
// written as they are read, under a temporary key, and renamed to the
// blob's digest at the end, all in one transaction. A blob already stored
// is not written again.
func (c *CAS) PutReader(ctx context.Context, rd io.Reader) (cas.Ref, int64, error) {
	if err := c.enter(ctx); err != nil {
		return cas.Ref{}, 0, err
	}
	defer c.s.users.Done()
	if c.s.readOnly {
		return cas.Ref{}, 0, cas.ErrReadOnly
	}
	first := make([]byte, ChunkSize+1)
	n, err := io.ReadFull(rd, first)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return cas.Ref{}, 0, fmt.Errorf("cas: put: read: %w", err)
	}
	if n <= ChunkSize {
		ref, err := c.Put(ctx, first[:n])
		return ref, int64(n), err
	}
	tx, err := c.s.pool.Begin(ctx)
	if err != nil {
		return cas.Ref{}, 0, c.errorf("put", cas.Ref{}, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	tmp := make([]byte, cas.Size+1) // 33 bytes: never a digest
	_, _ = rand.Read(tmp)
	h := blake3.New()
	var size int64
	put := func(idx int32, chunk []byte) error {
		_, _ = h.Write(chunk)
		size += int64(len(chunk))
		_, err := tx.Exec(ctx, `INSERT INTO cas_chunks (digest, n, data) VALUES ($1, $2, $3)`, tmp, idx, chunk)
		return err
	}
	if err := put(0, first[:ChunkSize]); err != nil {
		return cas.Ref{}, 0, c.errorf("put", cas.Ref{}, err)
	}
	carry := first[ChunkSize:n] // the byte read ahead
	buf := make([]byte, ChunkSize)
	for idx := int32(1); ; idx++ {
		k := copy(buf, carry)
		carry = nil
		m, err := io.ReadFull(rd, buf[k:])
		if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			return cas.Ref{}, 0, fmt.Errorf("cas: put: read: %w", err)
		}
		chunk := buf[:k+m]
		if len(chunk) == 0 {
			break
		}
		if err := put(idx, chunk); err != nil {
			return cas.Ref{}, 0, c.errorf("put", cas.Ref{}, err)
		}
		if len(chunk) < ChunkSize {
			break
		}
	}
	var d [cas.Size]byte
	h.Sum(d[:0])
	ref := cas.RefFromDigest(cas.BLAKE3, d)
	tag, err := tx.Exec(ctx, `INSERT INTO cas_blobs (digest, size, data) VALUES ($1, $2, NULL) ON CONFLICT DO NOTHING`, d[:], size)
	if err != nil {
		return cas.Ref{}, 0, c.errorf("put", ref, err)
	}
	if tag.RowsAffected() == 0 {
		return ref, size, nil // stored already: the rollback drops our chunks
	}
	if _, err := tx.Exec(ctx, `UPDATE cas_chunks SET digest = $2 WHERE digest = $1`, tmp, d[:]); err != nil {
		return cas.Ref{}, 0, c.errorf("put", ref, err)
	}
	if err := tx.Commit(context.WithoutCancel(ctx)); err != nil {
		return cas.Ref{}, 0, c.errorf("put", ref, err)
	}
	return ref, size, nil
}

// Store returns the store the CAS belongs to.
func (c *CAS) Store() *Store { return c.s }
