package pgstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
)

// Fence is the lease a fenced commit is made under: the commit writes
// only if the world's lease is still Owner's with Token (see Acquire).
type Fence struct {
	Owner string
	Token int64
}

// InboxTaken marks an inbox message as taken by a commit: the message
// became the record at Seq, in the same transaction.
type InboxTaken struct {
	ID  int64
	Seq uint64
}

// CommitOptions are the extras of CommitWith.
type CommitOptions struct {
	// Fence, if not nil, makes the commit write only while the world's
	// lease is the one it names; otherwise it fails with a *LeaseError
	// and writes nothing.
	Fence *Fence
	// Taken are inbox messages that the commit's records hold: they are
	// marked taken in the same transaction.
	Taken []InboxTaken
}

// LeaseError reports a fenced commit refused because the world's lease
// changed hands.
type LeaseError struct {
	World string
	Fence Fence  // the lease the writer held
	Owner string // the lease's owner now ("" if free)
	Token int64  // the lease's token now
}

func (e *LeaseError) Error() string {
	return fmt.Sprintf("pgstore: world %s: lease lost: held by %q with token %d, the writer had %q token %d (another worker took the world over; nothing was written)",
		e.World, e.Owner, e.Token, e.Fence.Owner, e.Fence.Token)
}

// Unwrap makes errors.Is(err, ErrLeaseLost) true, and errors.Is(err,
// journal.ErrConflict): another writer owns the world's head now.
func (e *LeaseError) Unwrap() []error { return []error{ErrLeaseLost, journal.ErrConflict} }

// Commit implements world.Storage: it appends entries to world if its
// head is expect and stores blobs, in one transaction. It returns the new
// head; on any error, nothing is written (unless the error says the
// connection broke during the commit: then the outcome is unknown, and
// the journal says which).
func (s *Store) Commit(ctx context.Context, world string, expect journal.Head, entries []journal.Entry, blobs [][]byte) (journal.Head, error) {
	return s.commit(ctx, world, expect, entries, blobs, nil)
}

// CommitWith is Commit with a fence and inbox messages to mark taken, all
// in the same transaction.
func (s *Store) CommitWith(ctx context.Context, world string, expect journal.Head, entries []journal.Entry, blobs [][]byte, opts CommitOptions) (journal.Head, error) {
	return s.commit(ctx, world, expect, entries, blobs, &opts)
}

// commit is every write of records: one batch of statements sent at once
// and run by the server as one implicit transaction (pgx's SendBatch): the
// append function (which checks the fence and the head and raises if
// either is wrong, rolling back everything), the blobs, the inbox marks.
func (s *Store) commit(ctx context.Context, world string, expect journal.Head, entries []journal.Entry, blobs [][]byte, opts *CommitOptions) (journal.Head, error) {
	recs, next, err := journal.EncodeEntries(world, expect, entries)
	if err != nil {
		return journal.Head{}, err
	}
	if s.journal.closed.Load() || !s.enter() {
		return journal.Head{}, journal.ErrClosed
	}
	defer s.users.Done()
	if err := ctx.Err(); err != nil {
		return journal.Head{}, err
	}
	if s.readOnly {
		return journal.Head{}, journal.ErrReadOnly
	}
	if expect.Seq == 0 && expect != (journal.Head{}) {
		// No world has a head of seq 0 with a hash.
		actual, err := s.head(ctx, world)
		if err != nil {
			return journal.Head{}, err
		}
		return journal.Head{}, &journal.ConflictError{World: world, Expect: expect, Actual: actual}
	}
	n := len(recs)
	kinds := make([]string, n)
	payloads := make([][]byte, n)
	prevs := make([][]byte, n)
	hashes := make([][]byte, n)
	digests := make([][cas.Size]byte, 2*n)
	for i, r := range recs {
		kinds[i], payloads[i] = r.Kind, r.Payload
		digests[2*i], digests[2*i+1] = r.Prev.Digest(), r.Hash.Digest()
		prevs[i], hashes[i] = digests[2*i][:], digests[2*i+1][:]
	}
	var expHash []byte
	if expect.Seq > 0 {
		d := expect.Hash.Digest()
		expHash = d[:]
	}
	var owner *string
	var token *int64
	if opts != nil && opts.Fence != nil {
		owner, token = &opts.Fence.Owner, &opts.Fence.Token
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT demiurge_append($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		world, int64(expect.Seq), expHash, kinds, payloads, prevs, hashes, owner, token)
	queueBlobs(b, blobs)
	if opts != nil {
		for _, t := range opts.Taken {
			b.Queue(`UPDATE inbox SET seq = $2 WHERE id = $1 AND seq IS NULL AND error IS NULL`, t.ID, int64(t.Seq))
		}
	}
	// Once sent, the commit runs to its end: cancelling ctx now would
	// leave its outcome unknown.
	err = s.pool.SendBatch(context.WithoutCancel(ctx), b).Close()
	if err != nil {
		return journal.Head{}, s.commitError(ctx, world, expect, opts, err)
	}
	return next, nil
}

// commitError maps the error of a commit's batch.
func (s *Store) commitError(ctx context.Context, world string, expect journal.Head, opts *CommitOptions, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "DM001":
			actual, perr := parseHead(pgErr.Detail)
			if perr != nil {
				return fmt.Errorf("journal: world %s: head conflict, and the head %q does not parse: %w", world, pgErr.Detail, journal.ErrCorrupt)
			}
			return &journal.ConflictError{World: world, Expect: expect, Actual: actual}
		case "DM002":
			le := &LeaseError{World: world}
			if opts != nil && opts.Fence != nil {
				le.Fence = *opts.Fence
			}
			if owner, tok, ok := strings.Cut(pgErr.Detail, " "); ok {
				le.Owner = owner
				le.Token, _ = strconv.ParseInt(tok, 10, 64)
			}
			return le
		case "25006": // read_only_sql_transaction
			return journal.ErrReadOnly
		}
	}
	if isConnError(err) {
		return s.wrap(fmt.Errorf("journal: world %s: commit: the connection to %s failed, the outcome is unknown (the journal says whether the step is in): %w", world, s.name, err))
	}
	return s.wrap(fmt.Errorf("journal: world %s: commit: %s: %w", world, s.name, err))
}

// parseHead parses the DETAIL of a head conflict: "seq hexhash".
func parseHead(detail string) (journal.Head, error) {
	seqText, hashText, _ := strings.Cut(detail, " ")
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if err != nil {
		return journal.Head{}, err
	}
	if seq == 0 {
		return journal.Head{}, nil
	}
	h, err := hex.DecodeString(hashText)
	if err != nil {
		return journal.Head{}, err
	}
	ref, ok := refOf(h)
	if !ok {
		return journal.Head{}, fmt.Errorf("hash of %d bytes", len(h))
	}
	return journal.Head{Seq: seq, Hash: ref}, nil
}

// ChunkSize is the size of the chunks a blob larger than it is kept in
// (table cas_chunks); smaller blobs are one row of cas_blobs.
const ChunkSize = 1 << 20

// blobRow is a blob to insert.
type blobRow struct {
	digest [cas.Size]byte
	data   []byte
}

// queueBlobs queues the statements that store blobs: their chunks first
// (for large ones), then every blob's row, each in ascending digest order
// so that concurrent commits storing the same blobs take their locks in
// one order.
func queueBlobs(b *pgx.Batch, blobs [][]byte) {
	if len(blobs) == 0 {
		return
	}
	rows := make([]blobRow, 0, len(blobs))
	for _, data := range blobs {
		rows = append(rows, blobRow{digest: cas.Sum(data).Digest(), data: data})
	}
	slices.SortFunc(rows, func(a, b blobRow) int { return bytes.Compare(a.digest[:], b.digest[:]) })
	rows = slices.CompactFunc(rows, func(a, b blobRow) bool { return a.digest == b.digest })
	digests := make([][]byte, len(rows))
	sizes := make([]int64, len(rows))
	datas := make([][]byte, len(rows))
	var cDigests, cDatas [][]byte
	var cNs []int32
	for i := range rows {
		r := &rows[i]
		digests[i], sizes[i] = r.digest[:], int64(len(r.data))
		if len(r.data) <= ChunkSize {
			datas[i] = r.data
			if datas[i] == nil {
				datas[i] = []byte{}
			}
			continue
		}
		for n, off := int32(0), 0; off < len(r.data); n, off = n+1, off+ChunkSize {
			cDigests = append(cDigests, r.digest[:])
			cNs = append(cNs, n)
			cDatas = append(cDatas, r.data[off:min(off+ChunkSize, len(r.data))])
		}
	}
	if len(cDigests) > 0 {
		b.Queue(`INSERT INTO cas_chunks (digest, n, data) SELECT * FROM unnest($1::bytea[], $2::integer[], $3::bytea[])
			ON CONFLICT DO NOTHING`, cDigests, cNs, cDatas)
	}
	b.Queue(`INSERT INTO cas_blobs (digest, size, data) SELECT * FROM unnest($1::bytea[], $2::bigint[], $3::bytea[])
		ON CONFLICT DO NOTHING`, digests, sizes, datas)
}

// Storage is the store as a world runs on it (world.Storage): its CAS,
// its journal, and Commit.
type Storage struct {
	s *Store
}

// Storage returns the store as a world's storage.
func (s *Store) Storage() *Storage { return &Storage{s: s} }

// CAS returns the store's CAS.
func (st *Storage) CAS() cas.Store { return st.s.cas }

// Journal returns the store's journal.
func (st *Storage) Journal() journal.Store { return st.s.journal }

// Commit is Store.Commit.
func (st *Storage) Commit(ctx context.Context, world string, expect journal.Head, entries []journal.Entry, blobs [][]byte) (journal.Head, error) {
	return st.s.commit(ctx, world, expect, entries, blobs, nil)
}
