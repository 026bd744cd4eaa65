package introspect

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Mode is how fresh a read must be.
type Mode uint8

// The consistency modes.
const (
	// ModeHead reads the world as it is now.
	ModeHead Mode = iota
	// ModeExact reads the world as it was at a journal height.
	ModeExact
	// ModeAtLeast reads the world as it is now, once its journal has
	// reached a height.
	ModeAtLeast
)

// Consistency is a read's freshness: "head", "exact:<height>" or
// "at_least:<height>", where a height is a journal seq.
//
// Consistency supports equality with ==; the zero value is "head".
type Consistency struct {
	Mode   Mode
	Height uint64 // Exact and AtLeast: the journal height
}

// ErrBadConsistency is returned (wrapped) by ParseConsistency for text
// that is not a consistency.
var ErrBadConsistency = errors.New("introspect: bad consistency")

// consistencyForms names the accepted forms, for error messages and docs.
const consistencyForms = `"head", "exact:<height>" or "at_least:<height>" (a height is a journal seq, a decimal number, e.g. "exact:12")`

// ParseConsistency parses "head", "exact:<height>" or "at_least:<height>",
// the height a decimal journal seq without sign or spaces. Any other text
// is an error wrapping ErrBadConsistency that names the accepted forms.
func ParseConsistency(s string) (Consistency, error) {
	if s == "head" {
		return Consistency{}, nil
	}
	mode, num, ok := strings.Cut(s, ":")
	var c Consistency
	switch {
	case !ok:
		return Consistency{}, fmt.Errorf("%w %q: want %s", ErrBadConsistency, clip(s), consistencyForms)
	case mode == "exact":
		c.Mode = ModeExact
	case mode == "at_least":
		c.Mode = ModeAtLeast
	default:
		return Consistency{}, fmt.Errorf("%w %q: unknown mode %q; want %s", ErrBadConsistency, clip(s), clip(mode), consistencyForms)
	}
	if num == "" {
		return Consistency{}, fmt.Errorf("%w %q: the height is missing; want %s", ErrBadConsistency, clip(s), consistencyForms)
	}
	for i := 0; i < len(num); i++ {
		if num[i] < '0' || num[i] > '9' {
			return Consistency{}, fmt.Errorf("%w %q: height %q is not a decimal number; want %s", ErrBadConsistency, clip(s), clip(num), consistencyForms)
		}
	}
	h, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return Consistency{}, fmt.Errorf("%w %q: height %s is out of range (at most %d)", ErrBadConsistency, clip(s), clip(num), uint64(1<<64-1))
	}
	c.Height = h
	return c, nil
}

// String returns the text form that ParseConsistency reads back.
func (c Consistency) String() string {
	switch c.Mode {
	case ModeExact:
		return "exact:" + strconv.FormatUint(c.Height, 10)
	case ModeAtLeast:
		return "at_least:" + strconv.FormatUint(c.Height, 10)
	}
	return "head"
}

// clip shortens text quoted in error messages.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
