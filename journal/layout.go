package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
	"go.etcd.io/bbolt"
)

// The layout of a journal inside a bbolt file, in top-level buckets:
//
//	journal          "format" -> "demiurge/journal/v2"
//	journal.log      8-byte big-endian position -> step header (see encodeStep)
//	                 position ++ 4-byte big-endian index -> record bytes
//	                 0xff ++ world name -> head seq (8, big-endian) ++ head
//	                 digest (32) ++ position of the world's last step (8)
//	journal.anchors  world name ++ 0x00 ++ 8-byte big-endian seq -> position
//	                 (8) of the step whose first record is seq
//
// The log is the journal of every world at once, in commit order: one step
// per append, at the next position, its header followed by its records. A
// step header names its world and the position of that world's step
// before it, so a world's steps form a linked list from its head back to
// its first step. Positions only grow, so an append writes at the right
// edge of one B+tree whatever world it belongs to, and a group commit of n
// worlds writes about the pages of its records, not the tail pages of n
// trees (which is what one bucket per world, format v1, cost). Positions
// are below 2^63, so every key starting with 0xff (a head entry) sorts
// after them: while the worlds are few their heads share the tail page
// that the records are appended to, and a commit writes no more pages than
// a raw put of the records.
//
// Anchors make reads from any seq cheap without an index entry per step:
// every step holding a seq s with (s-1) % anchorEvery == 0 (so the first
// step of every world) gets one. A reader walks back from the first anchor
// after where it starts (or from the head), never more than anchorEvery
// records. Anchors are an index: reads check every step they lead to, and
// a damaged anchor or link makes Read fall back to scanning the log.
var (
	bucketJournal = []byte("journal")
	bucketLog     = []byte("journal.log")
	bucketAnchors = []byte("journal.anchors")
	keyFormat     = []byte("format")
	formatV2      = []byte("demiurge/journal/v2")
	formatV1      = []byte("demiurge/journal/v1")
)

// headMark is the first byte of a head entry's key in the log bucket.
const headMark = 0xff

// maxPos bounds positions so that their keys sort before head entries.
const maxPos = 1<<63 - 1

// anchorEvery is the number of records between anchors of a world.
const anchorEvery = 128

// worldHeadSize is the size of a head entry.
const worldHeadSize = 8 + cas.Size + 8

// stepVersion is the first byte of every step header.
const stepVersion = 1

// stepPrevOff is the offset of the 8-byte prev position in a step: fixed,
// so a step can be encoded before its commit knows the position and
// patched in the transaction.
const stepPrevOff = 1

// encodeStep encodes the header of a step of world: n records from seq
// first.
//
//	version (1 byte, = 1)
//	prev position (8 bytes, big-endian; 0 for the world's first step)
//	uvarint len(world), world
//	uvarint first seq
//	uvarint record count (>= 1)
//
// The records follow it in the log under recordKey(pos, 0..n-1). The prev
// position is left 0; setStepPrev fills it in.
func encodeStep(world string, first uint64, n int) []byte {
	b := make([]byte, 1+8, 1+8+binary.MaxVarintLen64*3+len(world))
	b[0] = stepVersion
	b = binary.AppendUvarint(b, uint64(len(world)))
	b = append(b, world...)
	b = binary.AppendUvarint(b, first)
	return binary.AppendUvarint(b, uint64(n))
}

// setStepPrev sets the prev position of an encoded step header.
func setStepPrev(step []byte, prev uint64) {
	binary.BigEndian.PutUint64(step[stepPrevOff:], prev)
}

// stepHeader is a decoded step header.
type stepHeader struct {
	prev  uint64 // position of the world's step before this one; 0 if none
	world string
	first uint64 // seq of the first record
	n     uint64 // number of records, >= 1
}

// last returns the seq of the step's last record.
func (h *stepHeader) last() uint64 { return h.first + h.n - 1 }

// decodeStepHeader decodes a step header.
func decodeStepHeader(v []byte) (stepHeader, error) { return decodeStepHeaderOf(v, "") }

// decodeStepHeaderOf is decodeStepHeader for a reader of world: a step of
// world gets world's string as its name, so reading a world's steps makes
// no string.
func decodeStepHeaderOf(v []byte, world string) (stepHeader, error) {
	var h stepHeader
	if len(v) < 1+8 {
		return h, fmt.Errorf("step header is %d bytes, too short", len(v))
	}
	if v[0] != stepVersion {
		return h, fmt.Errorf("step version %d, want %d", v[0], stepVersion)
	}
	h.prev = binary.BigEndian.Uint64(v[stepPrevOff:])
	rest := v[1+8:]
	nameLen, rest, err := uvarint(rest, "world name length")
	if err != nil {
		return h, err
	}
	if nameLen == 0 || nameLen > MaxWorldLen || nameLen > uint64(len(rest)) {
		return h, fmt.Errorf("world name length %d out of range", nameLen)
	}
	if name := rest[:nameLen]; world != "" && string(name) == world {
		h.world = world
	} else {
		h.world = string(name)
	}
	rest = rest[nameLen:]
	if h.first, rest, err = uvarint(rest, "first seq"); err != nil {
		return h, err
	}
	if h.n, rest, err = uvarint(rest, "record count"); err != nil {
		return h, err
	}
	if h.first == 0 || h.n == 0 || h.n > 1<<32 || h.first > ^uint64(0)-h.n {
		return h, fmt.Errorf("first seq %d and record count %d out of range", h.first, h.n)
	}
	if len(rest) != 0 {
		return h, fmt.Errorf("%d bytes after the step header", len(rest))
	}
	return h, nil
}

// stepRecords calls fn with each record of the step h at pos, reading them
// with c, a cursor on the log. A record that is missing is a
// *stepFrameError.
func stepRecords(c *bbolt.Cursor, pos uint64, h stepHeader, fn func(seq uint64, rec []byte) error) error {
	k, v := c.Seek(recordKey(pos, 0))
	_, err := stepRecordsAt(c, k, v, pos, h, fn)
	return err
}

// stepRecordsAt is stepRecords with c already at the step's first record,
// k and v its key and value. It returns the key after the step's last
// record, where it leaves c.
func stepRecordsAt(c *bbolt.Cursor, k, v []byte, pos uint64, h stepHeader, fn func(seq uint64, rec []byte) error) (next []byte, err error) {
	var want [12]byte
	binary.BigEndian.PutUint64(want[:], pos)
	for i := range h.n {
		seq := h.first + i
		binary.BigEndian.PutUint32(want[8:], uint32(i))
		if !bytes.Equal(k, want[:]) || v == nil {
			return nil, &stepFrameError{seq: seq, err: fmt.Errorf("record %d of %d of the step at position %d is missing (found key %x)", i+1, h.n, pos, k)}
		}
		if err := fn(seq, v); err != nil {
			return nil, err
		}
		k, v = c.Next()
	}
	return k, nil
}

// stepFrameError is a record missing from its step.
type stepFrameError struct {
	seq uint64
	err error
}

func (e *stepFrameError) Error() string { return e.err.Error() }

func uvarint(b []byte, what string) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, fmt.Errorf("bad %s", what)
	}
	return v, b[n:], nil
}

// worldHead is a world's head entry in the log (its key 0xff ++ the
// world's name).
type worldHead struct {
	head Head
	pos  uint64 // position of the world's last step
}

func encodeWorldHead(h worldHead) []byte {
	b := make([]byte, 0, worldHeadSize)
	b = binary.BigEndian.AppendUint64(b, h.head.Seq)
	d := h.head.Hash.Digest()
	b = append(b, d[:]...)
	return binary.BigEndian.AppendUint64(b, h.pos)
}

// loadWorldHead reads world's head entry. A world without one has no
// records, unless it has anchors: then its head entry was lost.
func loadWorldHead(tx *bbolt.Tx, world string) (worldHead, bool, error) {
	v := tx.Bucket(bucketLog).Get(headKey(world))
	if v == nil {
		if k, _ := tx.Bucket(bucketAnchors).Cursor().Seek(anchorPrefix(world)); k != nil && bytes.HasPrefix(k, anchorPrefix(world)) {
			return worldHead{}, false, corruptf(world, 0, "world %s has no head entry, but has records (anchor %x)", world, k)
		}
		return worldHead{}, false, nil
	}
	if len(v) != worldHeadSize {
		return worldHead{}, false, corruptf(world, 0, "head entry is %d bytes, want %d", len(v), worldHeadSize)
	}
	h := worldHead{
		head: Head{Seq: binary.BigEndian.Uint64(v), Hash: cas.RefFromDigest(cas.BLAKE3, [cas.Size]byte(v[8:8+cas.Size]))},
		pos:  binary.BigEndian.Uint64(v[8+cas.Size:]),
	}
	if h.head.Seq == 0 || h.pos == 0 {
		return worldHead{}, false, corruptf(world, 0, "head entry holds seq %d at position %d", h.head.Seq, h.pos)
	}
	return h, true, nil
}

func posKey(pos uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), pos)
}

func recordKey(pos uint64, i uint32) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(make([]byte, 0, 12), pos), i)
}

func headKey(world string) []byte {
	return append(append(make([]byte, 0, 1+len(world)), headMark), world...)
}

func anchorPrefix(world string) []byte {
	return append(append(make([]byte, 0, len(world)+1+8), world...), 0)
}

func anchorKey(world string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(anchorPrefix(world), seq)
}

// anchored reports whether the step holding seqs first..last gets an
// anchor.
func anchored(first, last uint64) bool {
	// The first multiple of anchorEvery at or after first-1, plus 1.
	next := (first-1+anchorEvery-1)/anchorEvery*anchorEvery + 1
	return next <= last
}

// errStepMissing is wrapped by getStep for a position without a step.
var errStepMissing = errors.New("missing")

// getStep returns the header of the step at pos in the log bucket.
func getStep(log *bbolt.Bucket, pos uint64) (stepHeader, error) {
	return seekStep(log.Cursor(), pos, "")
}

// seekStep is getStep with a cursor on the log, for a reader of world
// (see decodeStepHeaderOf); it leaves c at the step's header.
func seekStep(c *bbolt.Cursor, pos uint64, world string) (stepHeader, error) {
	var key [8]byte
	binary.BigEndian.PutUint64(key[:], pos)
	k, v := c.Seek(key[:])
	if !bytes.Equal(k, key[:]) || v == nil {
		return stepHeader{}, fmt.Errorf("the step at position %d is %w", pos, errStepMissing)
	}
	h, err := decodeStepHeaderOf(v, world)
	if err != nil {
		return stepHeader{}, fmt.Errorf("the step at position %d does not decode: %w", pos, err)
	}
	return h, nil
}

// checkTailStep checks that the step at the head's position is world's and
// ends at the head's seq, so an append never builds on a damaged tail.
func checkTailStep(tx *bbolt.Tx, world string, wh worldHead) error {
	h, err := getStep(tx.Bucket(bucketLog), wh.pos)
	if err != nil {
		return corruptf(world, wh.head.Seq, "the head is seq %d, but %v", wh.head.Seq, err)
	}
	if h.world != world {
		return corruptf(world, wh.head.Seq, "the head is seq %d at position %d, but that step belongs to world %q", wh.head.Seq, wh.pos, h.world)
	}
	if h.last() != wh.head.Seq {
		return corruptf(world, wh.head.Seq, "the head is seq %d, but the step at position %d holds records %d to %d", wh.head.Seq, wh.pos, h.first, h.last())
	}
	return nil
}
