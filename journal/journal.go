package journal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/cas"
)

// Errors returned by stores. Check them with errors.Is; most are wrapped in
// a typed error or a message that names the world.
var (
	// ErrConflict is returned (wrapped in a *ConflictError) when an append's
	// expected head is not the world's current head: another writer appended
	// first, or the caller's idea of the head is stale. Nothing is written.
	ErrConflict = errors.New("journal: head conflict")
	// ErrCorrupt is returned (wrapped in a *CorruptError) when stored records
	// do not decode, a seq is missing, or the hash chain is broken.
	ErrCorrupt = errors.New("journal: corrupt")
	// ErrClosed is returned when a store is used after Close.
	ErrClosed = errors.New("journal: store closed")
	// ErrNotFound is returned by Verify when the world has no records.
	ErrNotFound = errors.New("journal: world not found")
	// ErrInvalidWorld is returned (wrapped) when a world name breaks the
	// rules of ValidateWorld.
	ErrInvalidWorld = errors.New("journal: invalid world name")
	// ErrInvalidEntry is returned (wrapped) when an entry cannot be appended:
	// an empty, overlong or non-UTF-8 kind, or a payload over MaxPayloadSize.
	// Nothing of the append is written.
	ErrInvalidEntry = errors.New("journal: invalid entry")
	// ErrReadOnly is returned when appending to a store opened read-only.
	ErrReadOnly = errors.New("journal: store is read-only")
)

// Limits on what a journal holds.
const (
	// MaxWorldLen is the maximum length in bytes of a world name.
	MaxWorldLen = 128
	// MaxKindLen is the maximum length in bytes of a record kind.
	MaxKindLen = 256
	// MaxPayloadSize is the maximum size in bytes of one record's payload.
	// Big data belongs in the CAS; a record holds refs to it.
	MaxPayloadSize = 16 << 20
)

// Entry is what a caller appends: a record without its seq and chain.
type Entry struct {
	// Kind names the record type, e.g. "DomainEvent". It must be 1 to
	// MaxKindLen bytes of valid UTF-8.
	Kind string
	// Payload is the record's body, usually canonical CBOR. The journal
	// treats it as opaque bytes; an empty payload is allowed. Append does
	// not keep Payload after it returns.
	Payload []byte
}

// Record is a stored entry, as readers get it.
type Record struct {
	Seq     uint64  // position in the world's journal, from 1
	Kind    string  // the entry's kind
	Payload []byte  // the entry's payload (length 0 if it was empty)
	Prev    cas.Ref // hash of the previous record, or Genesis(world) for seq 1
	Hash    cas.Ref // BLAKE3 of this record's encoded bytes (see Encode)
}

// Head names the newest record of a world. The zero Head (Seq 0, zero
// Hash) is the head of a world without records.
//
// Head supports equality with ==.
type Head struct {
	Seq  uint64  // seq of the newest record; 0 if there is none
	Hash cas.Ref // hash of the newest record; the zero Ref if there is none
}

// String returns "seq N blake3:…" or "empty" for the zero Head.
func (h Head) String() string {
	if h == (Head{}) {
		return "empty"
	}
	return fmt.Sprintf("seq %d %s", h.Seq, h.Hash.Short())
}

// Appender appends records to a world's journal.
type Appender interface {
	// Append writes entries as the next records of world, with contiguous
	// seqs after expect, all in one transaction: when Append returns nil,
	// every entry is durable; when it returns an error, none was written
	// (except where the error says the outcome is unknown, e.g. an I/O
	// error during commit).
	//
	// expect must be the world's current head (the zero Head for a world
	// without records); otherwise Append writes nothing and returns a
	// *ConflictError. This fences writers: a world is written by one
	// stepper, which always knows its head. Append returns the new head.
	// With no entries it checks expect and returns it, writing nothing.
	//
	// If ctx is done before the append starts to commit, nothing is written
	// and Append returns ctx.Err(); once the commit has started, Append
	// waits for its outcome.
	Append(ctx context.Context, world string, expect Head, entries []Entry) (Head, error)
}

// Reader reads a world's journal.
type Reader interface {
	// Read calls fn with each record of world whose seq is >= from, in
	// ascending seq order (from 0 means from 1), verifying the hash chain
	// as it goes: each record must decode, carry the seq it is stored
	// under, and name the hash of the record before it (or Genesis(world))
	// as its prev, and the last one must match the head. The link into
	// record from is checked; earlier records are not read.
	//
	// fn sees a record only once the record after it (or the head, for the
	// last) has been found to name its hash, so a record changed in place
	// never reaches fn. At the first bad record or link Read returns a
	// *CorruptError naming the world and seq; fn has then seen every record
	// before it that a link confirmed. Read stops at and returns the first
	// error fn returns, and returns ctx.Err() if ctx is done between
	// records. A world without records reads as empty.
	// Records appended during Read may or may not be visited. fn may keep
	// the Record; its Payload is not shared with the store.
	Read(ctx context.Context, world string, from uint64, fn func(Record) error) error

	// Head returns the newest record's seq and hash, or the zero Head if
	// world has no records.
	Head(ctx context.Context, world string) (Head, error)
}

// Lister lists the worlds of a store.
type Lister interface {
	// Worlds returns the names of the worlds that have at least one record,
	// sorted in ascending byte order. A world whose records are damaged is
	// listed (Read, Head and Verify say what is wrong with it); if the
	// store names a world it cannot list, Worlds returns the others with an
	// error wrapping ErrCorrupt.
	Worlds(ctx context.Context) ([]string, error)
}

// Store is a journal of many worlds: every backend implements it, and
// journaltest.Test checks the contract. Close stops the store; pending
// appends finish first, later calls return ErrClosed, and a second Close
// returns nil.
type Store interface {
	Appender
	Reader
	Lister
	io.Closer
}

// ConflictError reports an append whose expected head was not the world's
// head.
type ConflictError struct {
	World  string
	Expect Head // the head the caller expected
	Actual Head // the world's head when the append was applied
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("journal: world %s: head conflict: expected %v, head is %v", e.World, e.Expect, e.Actual)
}

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// CorruptError reports the first bad record of a world.
type CorruptError struct {
	World string // the world whose journal is corrupt
	Seq   uint64 // the seq where the problem was found; 0 if it is the world's head entry
	// Problem says what is wrong, e.g. "hash chain broken at seq 7: …" or
	// "record 7 does not decode: …".
	Problem string
	// Err, if not nil, is the error behind the problem: a
	// *cas.BoltDamageError when bbolt met a damaged page of the file.
	Err error
}

func (e *CorruptError) Error() string {
	if e.World == "" {
		return "journal: " + e.Problem
	}
	return fmt.Sprintf("journal: world %s: %s", e.World, e.Problem)
}

// Unwrap makes errors.Is(err, ErrCorrupt) true, and errors.Is and As see
// Err.
func (e *CorruptError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrCorrupt}
	}
	return []error{ErrCorrupt, e.Err}
}

func corruptf(world string, seq uint64, format string, args ...any) *CorruptError {
	return &CorruptError{World: world, Seq: seq, Problem: fmt.Sprintf(format, args...)}
}

// ValidateWorld reports whether name may name a world: 1 to MaxWorldLen
// bytes of ASCII letters, digits, '.', '_' and '-', starting with a letter
// or digit. Such a name is safe as a file name, a URL path segment, a
// shell word and a database key without quoting. The error wraps
// ErrInvalidWorld.
func ValidateWorld(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty (want letters, digits, '.', '_' or '-')", ErrInvalidWorld)
	}
	if len(name) > MaxWorldLen {
		return fmt.Errorf("%w %.40q…: %d bytes, at most %d allowed", ErrInvalidWorld, name, len(name), MaxWorldLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case (c == '.' || c == '_' || c == '-') && i > 0:
		default:
			r, _ := utf8.DecodeRuneInString(name[i:])
			if i == 0 && (c == '.' || c == '_' || c == '-') {
				return fmt.Errorf("%w %q: must start with a letter or digit", ErrInvalidWorld, name)
			}
			return fmt.Errorf("%w %q: character %q at byte %d not allowed (want letters, digits, '.', '_' or '-')", ErrInvalidWorld, name, r, i)
		}
	}
	return nil
}

// validateEntries checks every entry before anything is written.
func validateEntries(entries []Entry) error {
	for i, e := range entries {
		if err := validateKind(e.Kind); err != nil {
			return fmt.Errorf("%w %d: %v", ErrInvalidEntry, i, err)
		}
		if len(e.Payload) > MaxPayloadSize {
			return fmt.Errorf("%w %d (kind %q): payload is %d bytes, at most %d allowed (store big data in the CAS and journal its ref)",
				ErrInvalidEntry, i, e.Kind, len(e.Payload), MaxPayloadSize)
		}
	}
	return nil
}

func validateKind(kind string) error {
	switch {
	case kind == "":
		return errors.New("empty kind")
	case len(kind) > MaxKindLen:
		return fmt.Errorf("kind is %d bytes, at most %d allowed", len(kind), MaxKindLen)
	case !utf8.ValidString(kind):
		return fmt.Errorf("kind %q is not valid UTF-8", kind)
	}
	return nil
}

// genesisDomain prefixes the world name in the hash that the first record
// of a world names as its prev.
const genesisDomain = "demiurge/journal/v1\x00"

// Genesis returns the prev of the first record of world: the BLAKE3 of
// "demiurge/journal/v1\x00" followed by the world name. It binds a chain to
// its world, so records moved to another world break the chain.
func Genesis(world string) cas.Ref {
	b := make([]byte, 0, len(genesisDomain)+len(world))
	b = append(b, genesisDomain...)
	b = append(b, world...)
	return cas.Sum(b)
}

// Verify reads the whole journal of world from seq 1 and checks it without
// trusting the store: every seq from 1 on is present once, every record
// re-encodes to bytes that hash to its Hash, and every prev names the hash
// of the record before it (Genesis(world) for seq 1). It returns the head
// it verified up to, an error wrapping ErrNotFound if the world has no
// records, or the first problem as a *CorruptError ("hash chain broken at
// seq N", "record N does not decode", "record N is missing").
func Verify(ctx context.Context, r Reader, world string) (Head, error) {
	if err := ValidateWorld(world); err != nil {
		return Head{}, err
	}
	start, err := r.Head(ctx, world)
	if err != nil {
		return Head{}, err
	}
	if start.Seq == 0 {
		return Head{}, fmt.Errorf("%w: %s has no records", ErrNotFound, world)
	}
	var got Head
	prev := Genesis(world)
	err = r.Read(ctx, world, 1, func(rec Record) error {
		want := got.Seq + 1
		if rec.Seq != want {
			if rec.Seq > want {
				return corruptf(world, want, "record %d is missing (the next record is %d)", want, rec.Seq)
			}
			return corruptf(world, rec.Seq, "record %d read again after record %d", rec.Seq, got.Seq)
		}
		b, err := rec.Encode()
		if err != nil {
			return corruptf(world, rec.Seq, "record %d does not encode: %v", rec.Seq, err)
		}
		if h := cas.Sum(b); h != rec.Hash {
			return corruptf(world, rec.Seq, "record %d hashes to %s, the store says %s", rec.Seq, h, rec.Hash)
		}
		if rec.Prev != prev {
			return brokenLink(world, rec.Seq, rec.Prev, prev)
		}
		prev = rec.Hash
		got = Head{Seq: rec.Seq, Hash: rec.Hash}
		return nil
	})
	if err != nil {
		return got, err
	}
	if got.Seq < start.Seq {
		return got, corruptf(world, got.Seq+1, "head is seq %d, but the records end at seq %d", start.Seq, got.Seq)
	}
	return got, nil
}

// brokenLink reports record seq naming prev where want was expected.
func brokenLink(world string, seq uint64, prev, want cas.Ref) *CorruptError {
	if seq == 1 {
		return corruptf(world, seq, "hash chain broken at seq 1: prev is %s, but the genesis hash of world %s is %s (record moved from another world?)",
			prev, world, want)
	}
	return corruptf(world, seq, "hash chain broken at seq %d: prev is %s, but record %d hashes to %s (record %d or %d was altered)",
		seq, prev, seq-1, want, seq-1, seq)
}
