package cas

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/fxamacker/cbor/v2"
	"github.com/zeebo/blake3"
)

// Algo names the hash function behind a Ref.
type Algo uint8

const (
	// AlgoNone is the algorithm of the zero Ref, which names nothing.
	AlgoNone Algo = iota
	// BLAKE3 is BLAKE3-256, the hash demiurge computes for every blob and node.
	BLAKE3
	// SHA256 marks ids found in AgentOS files ("sha256:<hex>"). demiurge
	// never computes them: they are opaque names, kept so that AIR written
	// for AgentOS loads unchanged.
	SHA256
)

// String returns the algorithm's prefix in a ref's text form.
func (a Algo) String() string {
	switch a {
	case BLAKE3:
		return "blake3"
	case SHA256:
		return "sha256"
	default:
		return "none"
	}
}

// Size is the length in bytes of a digest.
const Size = 32

// Ref names a blob or node by its hash. Its text form is
// "blake3:<64 lowercase hex>".
//
// Ref supports equality (with ==) and the ability to use it as a map key.
// The zero Ref is not Valid and names nothing.
type Ref struct {
	algo   Algo
	digest [Size]byte
}

// ErrInvalidRef is returned (wrapped) when a ref's text form does not parse.
var ErrInvalidRef = errors.New("cas: invalid ref")

// Sum returns the ref of raw bytes: their BLAKE3-256 hash.
func Sum(b []byte) Ref {
	return Ref{algo: BLAKE3, digest: blake3.Sum256(b)}
}

// RefFromDigest returns the ref with the given algorithm and digest.
func RefFromDigest(a Algo, digest [Size]byte) Ref {
	if a != BLAKE3 && a != SHA256 {
		return Ref{}
	}
	return Ref{algo: a, digest: digest}
}

// ParseRef parses the text form of a ref: "blake3:<64 lowercase hex>" or
// "sha256:<64 lowercase hex>". Errors wrap ErrInvalidRef and say what is
// wrong: the prefix, the number of digits, or the first bad digit.
func ParseRef(s string) (Ref, error) {
	if s == "" {
		return Ref{}, fmt.Errorf("%w: empty string, want blake3:<64 hex>", ErrInvalidRef)
	}
	prefix, hexDigest, ok := strings.Cut(s, ":")
	if !ok {
		return Ref{}, fmt.Errorf("%w %q: want blake3:<64 hex>", ErrInvalidRef, clip(s))
	}
	var algo Algo
	switch prefix {
	case "blake3":
		algo = BLAKE3
	case "sha256":
		algo = SHA256
	default:
		return Ref{}, fmt.Errorf("%w %q: unknown algorithm %q (want blake3 or sha256)", ErrInvalidRef, clip(s), clip(prefix))
	}
	if len(hexDigest) != 2*Size {
		return Ref{}, fmt.Errorf("%w %q: digest has %d hex digits, want %d", ErrInvalidRef, clip(s), len(hexDigest), 2*Size)
	}
	var r Ref
	for i := 0; i < len(hexDigest); i++ {
		c := hexDigest[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return Ref{}, fmt.Errorf("%w %q: digest must be lowercase hex, found %q at digit %d", ErrInvalidRef, clip(s), hexDigest[i:i+1], i+1)
		}
	}
	if _, err := hex.Decode(r.digest[:], []byte(hexDigest)); err != nil {
		return Ref{}, fmt.Errorf("%w %q: %v", ErrInvalidRef, clip(s), err)
	}
	r.algo = algo
	return r, nil
}

// MustParseRef is like ParseRef but panics if s does not parse. It is for
// constants: in tests and examples, and known refs written out.
func MustParseRef(s string) Ref {
	r, err := ParseRef(s)
	if err != nil {
		panic(err)
	}
	return r
}

// clip shortens s for error messages, so a huge bad input does not make a huge error.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// Valid reports whether r names something (it is not the zero Ref).
func (r Ref) Valid() bool { return r.algo == BLAKE3 || r.algo == SHA256 }

// Algo returns the hash algorithm of r.
func (r Ref) Algo() Algo { return r.algo }

// Digest returns the raw digest bytes of r.
func (r Ref) Digest() [Size]byte { return r.digest }

// String returns the text form of r, "blake3:<64 lowercase hex>", or
// "invalid" for the zero Ref.
func (r Ref) String() string {
	if !r.Valid() {
		return "invalid"
	}
	var buf [7 + 2*Size]byte
	n := copy(buf[:], r.algo.String())
	buf[n] = ':'
	n++
	hex.Encode(buf[n:], r.digest[:])
	return string(buf[:n+2*Size])
}

// AppendText implements encoding.TextAppender: it appends the text form
// of r to b, as MarshalText returns it.
func (r Ref) AppendText(b []byte) ([]byte, error) {
	if !r.Valid() {
		return nil, fmt.Errorf("%w: zero ref cannot be encoded", ErrInvalidRef)
	}
	b = append(b, r.algo.String()...)
	b = append(b, ':')
	return hex.AppendEncode(b, r.digest[:]), nil
}

// Short returns an abbreviated text form for humans: the algorithm and the
// first 12 hex digits.
func (r Ref) Short() string {
	s := r.String()
	if !r.Valid() {
		return s
	}
	return s[:len(r.algo.String())+1+12]
}

// MarshalText implements encoding.TextMarshaler: the text form.
func (r Ref) MarshalText() ([]byte, error) {
	if !r.Valid() {
		return nil, fmt.Errorf("%w: zero ref cannot be encoded", ErrInvalidRef)
	}
	return []byte(r.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseRef.
func (r *Ref) UnmarshalText(b []byte) error {
	p, err := ParseRef(string(b))
	if err != nil {
		return err
	}
	*r = p
	return nil
}

// MarshalCBOR encodes r as a CBOR text string in its text form, the form a
// hash takes in every AIR value.
func (r Ref) MarshalCBOR() ([]byte, error) {
	if !r.Valid() {
		return nil, fmt.Errorf("%w: zero ref cannot be encoded", ErrInvalidRef)
	}
	return modes().enc.Marshal(r.String())
}

// UnmarshalCBOR decodes a CBOR text string in a ref's text form.
func (r *Ref) UnmarshalCBOR(b []byte) error {
	var s string
	if err := modes().dec.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidRef, err)
	}
	return r.UnmarshalText([]byte(s))
}

var (
	_ cbor.Marshaler   = Ref{}
	_ cbor.Unmarshaler = (*Ref)(nil)
)
