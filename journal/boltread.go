package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/bbolt"
)

// logReader reads one world's records out of the log for Bolt.Read, a
// chunk at a time, each chunk in its own read transaction (steps are never
// changed once written, so positions found in one transaction stay good).
//
// It follows the world's links: from the first anchor after the seq it
// needs next (or from the head) back to that seq, then forward through the
// positions it collected. If a link or anchor is damaged it switches to
// scanning the log from the last step it delivered, which finds every good
// record of the world in order whatever the links say, and reports the
// first bad record, or else the damaged link.
type logReader struct {
	world string
	from  uint64

	started bool
	head    worldHead    // the head when the read started
	c       *chain       // nil until the record before from is known
	lastPos uint64       // position of the last step read; 0 if none
	queue   []queuedStep // the steps to read next, by ascending position
	arena   []byte       // where payloads are copied out of the file

	scan    bool          // following the links failed: scan the log
	linkErr *CorruptError // why the links failed
	skipped string        // in a scan, the first step that did not decode

	// verified is set once every record read has been checked up to the
	// head: each is confirmed by the link of the next one, the last by
	// the head (only the index may be damaged then).
	verified bool
}

// logCursor is a cursor on the log that knows when it is at a step's
// header.
type logCursor struct {
	*bbolt.Cursor
	atStep uint64 // the position of the step whose header the cursor is at; 0 if unknown
}

// queuedStep is a step found by refill: its position and header (steps
// never change once written, so a header read in one transaction holds in
// the next).
type queuedStep struct {
	pos uint64
	h   stepHeader
}

// arenaSize is the size of the blocks payloads are copied into: one
// allocation for the payloads of many records.
const arenaSize = 64 << 10

// chunk appends the next records to out. done reports that the world's
// records are exhausted and checked against the head.
func (r *logReader) chunk(tx *bbolt.Tx, out *[]Record) (done bool, err error) {
	log := tx.Bucket(bucketLog)
	cur := &logCursor{Cursor: log.Cursor()} // one cursor for the chunk: steps are read in key order
	if !r.started {
		r.started = true
		wh, ok, err := loadWorldHead(tx, r.world)
		if err != nil || !ok {
			return true, err
		}
		r.head = wh
		if r.from > wh.head.Seq {
			return true, checkTailStep(tx, r.world, wh)
		}
	}
	size := 0
	full := func() bool { return len(*out) >= readChunkRecords || size >= readChunkBytes }
	if r.scan {
		return r.scanChunk(log, out, &size, full)
	}
	for !full() {
		if len(r.queue) == 0 {
			if r.c != nil && r.c.next > r.head.head.Seq {
				err := r.c.finish(r.head.head)
				r.verified = err == nil
				return true, err
			}
			if err := r.refill(tx, cur); err != nil {
				var ce *CorruptError
				if !errors.As(err, &ce) {
					return true, err
				}
				r.scan, r.linkErr, r.queue = true, ce, nil
				return r.scanChunk(log, out, &size, full)
			}
		}
		q := r.queue[0]
		r.queue = r.queue[1:]
		if err := r.step(cur, q.pos, q.h, out, &size); err != nil {
			return true, err
		}
	}
	return false, nil
}

// nextSeq returns the seq the reader needs next.
func (r *logReader) nextSeq() uint64 {
	if r.c != nil {
		return r.c.next
	}
	return max(r.from-1, 1)
}

// refill fills the queue with the positions of the next steps: it walks
// back from the first anchor after the seq needed next (or from the head)
// to the step holding that seq. A damaged link is a *CorruptError.
func (r *logReader) refill(tx *bbolt.Tx, cur *logCursor) error {
	need := r.nextSeq()
	pos, wantFirst, wantLast := r.head.pos, uint64(0), r.head.head.Seq
	prefix := anchorPrefix(r.world)
	if k, v := tx.Bucket(bucketAnchors).Cursor().Seek(anchorKey(r.world, need+1)); k != nil && bytes.HasPrefix(k, prefix) {
		if len(k) != len(prefix)+8 || len(v) != 8 {
			return corruptf(r.world, need, "anchor %x of world %s is damaged (value %x)", k, r.world, v)
		}
		if seq := binary.BigEndian.Uint64(k[len(prefix):]); seq <= r.head.head.Seq {
			pos, wantFirst, wantLast = binary.BigEndian.Uint64(v), seq, 0
		}
	}
	// at is the seq the step at pos should hold, for error messages: the
	// head, the anchor's seq, or the first seq of the step linking to it
	// (from position from); what names the link that led to pos.
	at, from := r.head.head.Seq, uint64(0)
	if wantFirst != 0 {
		at = wantFirst
	}
	what := func() string {
		switch {
		case from != 0:
			return fmt.Sprintf("link before record %d (from position %d)", at, from)
		case wantFirst != 0:
			return fmt.Sprintf("link from the anchor to record %d", at)
		}
		return fmt.Sprintf("link from the head entry to record %d", at)
	}
	stack := r.queue[:0]
	for {
		cur.atStep = 0
		h, err := seekStep(cur.Cursor, pos, r.world)
		if err == nil {
			cur.atStep = pos
		}
		if err != nil {
			return corruptf(r.world, at, "%s broken: %v", what(), err)
		}
		switch {
		case h.world != r.world:
			return corruptf(r.world, at, "%s broken: the step at position %d belongs to world %q", what(), pos, h.world)
		case wantFirst != 0 && h.first != wantFirst, wantLast != 0 && h.last() != wantLast:
			return corruptf(r.world, at, "%s broken: the step at position %d holds records %d to %d", what(), pos, h.first, h.last())
		}
		stack = append(stack, queuedStep{pos, h})
		if h.first <= need {
			break
		}
		if h.prev == 0 || h.prev >= pos {
			return corruptf(r.world, h.first, "link before record %d broken: the step at position %d links to position %d", h.first, pos, h.prev)
		}
		at, from = h.first, pos
		pos, wantFirst, wantLast = h.prev, 0, h.first-1
	}
	slices.Reverse(stack)
	r.queue = stack
	return nil
}

// step checks and delivers the records of the step h at pos, reading
// them with cur, a cursor on the log.
func (r *logReader) step(cur *logCursor, pos uint64, h stepHeader, out *[]Record, size *int) error {
	if r.c == nil && r.from == 1 {
		r.c = newChain(r.world, 1, Genesis(r.world))
	}
	if r.c != nil && h.first != r.c.next {
		if h.first > r.c.next {
			return r.corrupt(r.c.next, "record %d is missing (the next stored record is %d, at position %d)", r.c.next, h.first, pos)
		}
		return r.corrupt(r.c.next, "records %d to %d are stored again at position %d (want record %d)", h.first, h.last(), pos, r.c.next)
	}
	// The cursor is usually at this step's header already (the step before
	// it in the log was the one read last, or refill left it there): then
	// its records are the next keys, and no seek is needed.
	var k, v []byte
	if cur.atStep == pos {
		k, v = cur.Next()
	} else {
		k, v = cur.Seek(recordKey(pos, 0))
	}
	cur.atStep = 0
	next, err := stepRecordsAt(cur.Cursor, k, v, pos, h, func(seq uint64, v []byte) error {
		if r.c == nil { // the first step read, from > 1: find record from-1
			if seq < r.from-1 {
				return nil
			}
			rec, err := DecodeRecord(v)
			if err != nil {
				return r.corrupt(seq, "record %d does not decode: %v", seq, err)
			}
			if rec.Seq != seq {
				return r.corrupt(seq, "record stored as seq %d holds seq %d", seq, rec.Seq)
			}
			r.c = newChain(r.world, r.from, rec.Hash)
			return nil
		}
		rec, err := r.c.check(seq, v)
		if err != nil {
			return r.note(err)
		}
		rec.Payload = r.copyOut(rec.Payload) // v lives in the mmap only during tx
		*out = append(*out, rec)
		*size += len(v)
		return nil
	})
	if err == nil {
		// Where stepRecordsAt left the cursor: the key after the step's
		// last record.
		if len(next) == 8 {
			cur.atStep = binary.BigEndian.Uint64(next)
		}
	}
	var fe *stepFrameError
	if errors.As(err, &fe) {
		return r.corrupt(fe.seq, "record %d is missing: %v", fe.seq, fe.err)
	}
	if err != nil {
		return err
	}
	if r.c == nil {
		return r.corrupt(r.from-1, "record %d is missing (the step at position %d holds records %d to %d)", r.from-1, pos, h.first, h.last())
	}
	r.lastPos = pos
	return nil
}

// copyOut copies a payload out of the file into the reader's arena. The
// copy's capacity is its length, so appending to it cannot write over the
// next payload.
func (r *logReader) copyOut(p []byte) []byte {
	if len(p) > arenaSize/4 {
		return append(make([]byte, 0, len(p)), p...)
	}
	if cap(r.arena)-len(r.arena) < len(p) {
		r.arena = make([]byte, 0, arenaSize)
	}
	n := len(r.arena)
	r.arena = append(r.arena, p...)
	return r.arena[n:len(r.arena):len(r.arena)]
}

// scanChunk reads on by scanning the log from the last step delivered,
// taking the steps of the world in turn.
func (r *logReader) scanChunk(log *bbolt.Bucket, out *[]Record, size *int, full func() bool) (bool, error) {
	cur := log.Cursor()
	rc := &logCursor{Cursor: log.Cursor()} // step's own, not to move cur
	for k, v := cur.Seek(posKey(r.lastPos + 1)); k != nil && k[0] != headMark; k, v = cur.Next() {
		if full() {
			return false, nil
		}
		if len(k) == 12 {
			continue // a record: its step's header came first
		}
		if len(k) != 8 {
			r.skip(fmt.Sprintf("key %x in the log is neither a step nor a record", k))
			continue
		}
		pos := binary.BigEndian.Uint64(k)
		h, err := decodeStepHeader(v)
		if err != nil {
			r.skip(fmt.Sprintf("the step at position %d does not decode: %v", pos, err))
			r.lastPos = pos
			continue
		}
		if h.world != r.world || h.first > r.head.head.Seq || (r.c == nil && r.from > 1 && h.last() < r.from-1) {
			r.lastPos = pos
			continue
		}
		if err := r.step(rc, pos, h, out, size); err != nil {
			return true, err
		}
	}
	if r.c == nil {
		return true, r.corrupt(r.nextSeq(), "record %d is missing (no step of world %s holds it)", r.nextSeq(), r.world)
	}
	if err := r.c.finish(r.head.head); err != nil {
		return true, r.note(err)
	}
	r.verified = true
	return true, r.linkErr
}

func (r *logReader) skip(note string) {
	if r.skipped == "" {
		r.skipped = note
	}
}

// corrupt returns a *CorruptError at seq, noting a step the scan skipped.
func (r *logReader) corrupt(seq uint64, format string, args ...any) error {
	return r.note(corruptf(r.world, seq, format, args...))
}

// note adds to a *CorruptError found in a scan the first step it could
// not decode, which may be where the damage is.
func (r *logReader) note(err error) error {
	var ce *CorruptError
	if r.skipped != "" && errors.As(err, &ce) {
		ce.Problem += " (" + r.skipped + ")"
	}
	return err
}
