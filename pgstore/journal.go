package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
)

// Limits of one query of Read: records are read in chunks, each its own
// query, so no query stays open while fn runs.
const (
	readChunkRecords = 512
	readChunkBytes   = 1 << 20
)

// Journal is a journal.Store in the tables journal_records (a row per
// record: world, seq, kind, payload, prev, hash) and journal_heads (a row
// per world: its head's seq and hash). An append is one statement that
// checks the expected head and writes the records and the new head; a
// conflicting writer waits for the head row's lock and then fails with a
// *journal.ConflictError. Read re-encodes every record and checks it
// hashes to its stored hash, and checks the chain.
type Journal struct {
	s      *Store
	closed atomic.Bool
}

var _ journal.Store = (*Journal)(nil)

// enter checks that the journal can be used and registers a call.
func (j *Journal) enter(ctx context.Context) error {
	if j.closed.Load() || !j.s.enter() {
		return journal.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		j.s.users.Done()
		return err
	}
	return nil
}

// Append implements journal.Appender: one statement, one transaction.
func (j *Journal) Append(ctx context.Context, world string, expect journal.Head, entries []journal.Entry) (journal.Head, error) {
	return j.s.commit(ctx, world, expect, entries, nil, nil)
}

// Read implements journal.Reader.
func (j *Journal) Read(ctx context.Context, world string, from uint64, fn func(journal.Record) error) error {
	if err := journal.ValidateWorld(world); err != nil {
		return err
	}
	if err := j.enter(ctx); err != nil {
		return err
	}
	head, err := j.s.head(ctx, world)
	j.s.users.Done()
	if err != nil || head.Seq == 0 {
		return err
	}
	from = max(from, 1)
	if from > head.Seq {
		return nil
	}
	prev := journal.Genesis(world)
	if from > 1 {
		if prev, err = j.recordHash(ctx, world, from-1); err != nil {
			return err
		}
	}
	chk := journal.NewChecker(world, from, prev)
	// A record reaches fn once the link of the record after it (or the
	// head) confirms its hash.
	var held journal.Record
	holding := false
	var chunk []row
	for next := from; next <= head.Seq; {
		if err := j.enter(ctx); err != nil {
			return err
		}
		chunk, err = j.s.readChunk(ctx, world, next, head.Seq, chunk[:0])
		j.s.users.Done()
		if err != nil {
			return err
		}
		if len(chunk) == 0 {
			return &journal.CorruptError{World: world, Seq: next,
				Problem: fmt.Sprintf("record %d is missing (the head is seq %d)", next, head.Seq)}
		}
		for _, r := range chunk {
			rec, err := chk.Check(r.seq, r.record(), r.hash)
			if err != nil {
				return err
			}
			if holding {
				if err := deliver(ctx, fn, held); err != nil {
					return err
				}
			}
			held, holding = rec, true
			next = r.seq + 1
		}
		clear(chunk)
	}
	if err := chk.Finish(head); err != nil {
		return err
	}
	if holding {
		return deliver(ctx, fn, held)
	}
	return nil
}

func deliver(ctx context.Context, fn func(journal.Record) error, r journal.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return fn(r)
}

// row is a record as stored.
type row struct {
	seq     uint64
	kind    string
	payload []byte
	prev    cas.Ref
	hash    cas.Ref
}

func (r row) record() journal.Record {
	return journal.Record{Seq: r.seq, Kind: r.kind, Payload: r.payload, Prev: r.prev}
}

// refOf makes a BLAKE3 ref of a stored digest.
func refOf(b []byte) (cas.Ref, bool) {
	if len(b) != cas.Size {
		return cas.Ref{}, false
	}
	return cas.RefFromDigest(cas.BLAKE3, [cas.Size]byte(b)), true
}

// readChunk reads the records of world from seq from to at most to,
// fewer than readChunkRecords and about readChunkBytes (at least one).
func (s *Store) readChunk(ctx context.Context, world string, from, to uint64, out []row) ([]row, error) {
	rows, err := s.pool.Query(ctx, `
		WITH c AS (
			SELECT seq, sum(octet_length(payload)) OVER (ORDER BY seq) AS run
			FROM journal_records WHERE world = $1 AND seq >= $2 AND seq <= $3
			ORDER BY seq LIMIT $4)
		SELECT r.seq, r.kind, r.payload, r.prev, r.hash
		FROM journal_records r JOIN c ON r.seq = c.seq
		WHERE r.world = $1 AND (c.run <= $5 OR c.seq = $2)
		ORDER BY r.seq`, world, int64(from), int64(to), readChunkRecords, readChunkBytes)
	if err != nil {
		return out, s.readError(world, err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var r row
		var prev, hash []byte
		if err := rows.Scan(&seq, &r.kind, &r.payload, &prev, &hash); err != nil {
			return out, s.readError(world, err)
		}
		r.seq = uint64(seq)
		if r.payload == nil {
			r.payload = []byte{}
		}
		var ok1, ok2 bool
		r.prev, ok1 = refOf(prev)
		r.hash, ok2 = refOf(hash)
		if !ok1 || !ok2 {
			return out, &journal.CorruptError{World: world, Seq: r.seq,
				Problem: fmt.Sprintf("record %d: prev or hash is not %d bytes (%d, %d)", r.seq, cas.Size, len(prev), len(hash))}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return out, s.readError(world, err)
	}
	return out, nil
}

// recordHash returns the hash of record seq of world, checking that the
// record's encoding hashes to it.
func (j *Journal) recordHash(ctx context.Context, world string, seq uint64) (cas.Ref, error) {
	if err := j.enter(ctx); err != nil {
		return cas.Ref{}, err
	}
	defer j.s.users.Done()
	chunk, err := j.s.readChunk(ctx, world, seq, seq, nil)
	if err != nil {
		return cas.Ref{}, err
	}
	if len(chunk) == 0 {
		return cas.Ref{}, &journal.CorruptError{World: world, Seq: seq, Problem: fmt.Sprintf("record %d is missing", seq)}
	}
	r := chunk[0]
	b, err := r.record().Encode()
	if err != nil {
		return cas.Ref{}, &journal.CorruptError{World: world, Seq: seq, Problem: fmt.Sprintf("record %d does not encode: %v", seq, err)}
	}
	if got := cas.Sum(b); got != r.hash {
		return cas.Ref{}, &journal.CorruptError{World: world, Seq: seq,
			Problem: fmt.Sprintf("record %d hashes to %s, the store says %s (the record was altered)", seq, got, r.hash)}
	}
	return r.hash, nil
}

// Head implements journal.Reader.
func (j *Journal) Head(ctx context.Context, world string) (journal.Head, error) {
	if err := journal.ValidateWorld(world); err != nil {
		return journal.Head{}, err
	}
	if err := j.enter(ctx); err != nil {
		return journal.Head{}, err
	}
	defer j.s.users.Done()
	return j.s.head(ctx, world)
}

func (s *Store) head(ctx context.Context, world string) (journal.Head, error) {
	var seq int64
	var hash []byte
	err := s.pool.QueryRow(ctx, `SELECT seq, hash FROM journal_heads WHERE world = $1`, world).Scan(&seq, &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return journal.Head{}, nil
	}
	if err != nil {
		return journal.Head{}, s.readError(world, err)
	}
	ref, ok := refOf(hash)
	if !ok || seq <= 0 {
		return journal.Head{}, &journal.CorruptError{World: world, Problem: fmt.Sprintf("the head row is damaged: seq %d, hash of %d bytes", seq, len(hash))}
	}
	return journal.Head{Seq: uint64(seq), Hash: ref}, nil
}

// Worlds implements journal.Lister: the worlds with a head row.
func (j *Journal) Worlds(ctx context.Context) ([]string, error) {
	if err := j.enter(ctx); err != nil {
		return nil, err
	}
	defer j.s.users.Done()
	rows, err := j.s.pool.Query(ctx, `SELECT world FROM journal_heads ORDER BY world`)
	if err != nil {
		return nil, j.s.readError("", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, j.s.readError("", err)
	}
	var bad error
	good := names[:0]
	for _, n := range names {
		if err := journal.ValidateWorld(n); err != nil {
			if bad == nil {
				bad = &journal.CorruptError{Problem: fmt.Sprintf("head row %q is not named for a valid world: %v", n, err)}
			}
			continue
		}
		good = append(good, n)
	}
	return good, bad
}

// Close implements journal.Store: later calls of the journal return
// journal.ErrClosed. It does not close the store's connections (Close the
// Store for that).
func (j *Journal) Close() error {
	j.closed.Store(true)
	return nil
}

// readError wraps an error of a read.
func (s *Store) readError(world string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if world == "" {
		return s.wrap(fmt.Errorf("journal: %s: %w", s.name, err))
	}
	return s.wrap(fmt.Errorf("journal: world %s: %s: %w", world, s.name, err))
}

// Store returns the store the journal belongs to.
func (j *Journal) Store() *Store { return j.s }
