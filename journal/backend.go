package journal

import "github.com/demiurge-dev/demiurge/cas"

// Helpers for backends in other packages (a database, say), so that they
// check and chain records exactly as this package's own backends do.

// EncodeEntries checks world and entries as Append does (errors wrap
// ErrInvalidWorld or ErrInvalidEntry) and returns them as the records that
// would follow expect in world: seqs from expect.Seq+1, each record's Prev
// the hash of the one before (Genesis(world) for seq 1) and its Hash the
// BLAKE3 of its encoding. It also returns the head after the last of them.
// The records' Payloads alias the entries'. A backend stores them if and
// only if expect is still the world's head when it writes them.
func EncodeEntries(world string, expect Head, entries []Entry) ([]Record, Head, error) {
	if err := ValidateWorld(world); err != nil {
		return nil, Head{}, err
	}
	if err := validateEntries(entries); err != nil {
		return nil, Head{}, err
	}
	encoded, next, err := encodeEntries(world, expect, entries)
	if err != nil {
		return nil, Head{}, err
	}
	recs := make([]Record, len(encoded))
	prev := expect.Hash
	if expect.Seq == 0 {
		prev = Genesis(world)
	}
	for i, b := range encoded {
		rec, err := DecodeRecord(b)
		if err != nil { // a bug: encodeEntries wrote it
			return nil, Head{}, corruptf(world, expect.Seq+uint64(i)+1, "record %d does not decode after encoding: %v", expect.Seq+uint64(i)+1, err)
		}
		rec.Payload = entries[i].Payload
		if rec.Payload == nil {
			rec.Payload = []byte{}
		}
		if rec.Prev.Digest() != prev.Digest() {
			return nil, Head{}, corruptf(world, rec.Seq, "record %d encoded with prev %s, want %s (a bug)", rec.Seq, rec.Prev, prev)
		}
		prev = rec.Hash
		recs[i] = rec
	}
	return recs, next, nil
}

// Checker verifies the records of one world as a backend reads them in
// seq order, with the messages of this package's backends: a missing or
// repeated seq, a record whose encoding does not hash to the hash stored
// with it, or a broken link is a *CorruptError. Records read from seq
// from must be checked in order, starting with record from.
type Checker struct {
	c *chain
}

// NewChecker starts checking world at record from, whose prev must be
// prev: Genesis(world) if from is 1, else the hash of record from-1.
func NewChecker(world string, from uint64, prev cas.Ref) *Checker {
	return &Checker{c: newChain(world, from, prev)}
}

// Check verifies the next record: r, stored under seq, with hash the hash
// the backend stored for it (its encoding must hash to it). It returns the
// record with its Hash set.
func (k *Checker) Check(seq uint64, r Record, hash cas.Ref) (Record, error) {
	c := k.c
	if seq != c.next {
		if seq > c.next {
			return Record{}, corruptf(c.world, c.next, "record %d is missing (the next stored record is %d)", c.next, seq)
		}
		return Record{}, corruptf(c.world, seq, "record %d stored out of order after %d", seq, c.next-1)
	}
	if r.Seq != seq {
		return Record{}, corruptf(c.world, seq, "record stored as seq %d holds seq %d", seq, r.Seq)
	}
	b, err := r.Encode()
	if err != nil {
		return Record{}, corruptf(c.world, seq, "record %d does not encode: %v", seq, err)
	}
	r.Hash = cas.Sum(b)
	if r.Hash != hash {
		return Record{}, corruptf(c.world, seq, "record %d hashes to %s, the store says %s (the record was altered)", seq, r.Hash, hash)
	}
	if r.Prev != c.last {
		return Record{}, brokenLink(c.world, seq, r.Prev, c.last)
	}
	c.last = r.Hash
	c.next++
	return r, nil
}

// Finish checks, once every stored record up to the world's head has been
// checked, that the last one is the head.
func (k *Checker) Finish(head Head) error { return k.c.finish(head) }

// Next returns the seq the next record must have.
func (k *Checker) Next() uint64 { return k.c.next }
