// Package budget is the memory budget of one script of the bash tool: the
// bytes its shell variables, expansions and utility buffers hold. Every
// holder charges what it keeps before keeping it and releases it when it
// lets go; a charge that would pass the limit fails, and the script ends
// with "resource limit exceeded: memory budget exceeded (N bytes)".
//
// The budget counts what the script holds, not the Go heap: garbage not
// yet collected, and the constant cost of the interpreter and the
// utilities' code, come on top. A holder charges a conservative size
// (the bytes plus a per-item overhead) so that the process stays within
// the budget plus a small constant.
//
// A nil *Budget is unlimited: its methods do nothing and never fail, so
// code can charge unconditionally.
package budget

import (
	"fmt"
	"sync/atomic"
)

// Budget is the memory one script may hold. It is safe for concurrent use
// (the stages of a pipeline charge the same budget).
type Budget struct {
	limit    int64
	used     atomic.Int64
	peak     atomic.Int64
	exceeded atomic.Bool
	onExceed func(err error)
}

// New returns a budget of limit bytes. onExceed, if set, is called once,
// with the error, the first time a charge fails (the bash tool stops the
// script there).
func New(limit int64, onExceed func(err error)) *Budget {
	return &Budget{limit: limit, onExceed: onExceed}
}

// OnExceed sets what is called, once, when a charge first fails (it
// replaces New's onExceed; set it before the budget is used).
func (b *Budget) OnExceed(f func(err error)) {
	if b != nil {
		b.onExceed = f
	}
}

// ExceededError is the error of a charge past the limit.
type ExceededError struct {
	Limit int64
}

func (e *ExceededError) Error() string {
	return fmt.Sprintf("memory budget exceeded (%d bytes)", e.Limit)
}

// Charge records n more bytes held; it fails, charging nothing, when the
// total would pass the limit. n ≤ 0 always succeeds.
func (b *Budget) Charge(n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	used := b.used.Add(n)
	if used > b.limit {
		b.used.Add(-n)
		return b.fail()
	}
	for {
		p := b.peak.Load()
		if used <= p || b.peak.CompareAndSwap(p, used) {
			break
		}
	}
	return nil
}

// Check fails as Charge would for n more bytes, charging nothing: for a
// value about to be made and dropped at once.
func (b *Budget) Check(n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	if b.used.Load()+n > b.limit {
		return b.fail()
	}
	return nil
}

func (b *Budget) fail() error {
	err := &ExceededError{Limit: b.limit}
	if b.exceeded.CompareAndSwap(false, true) && b.onExceed != nil {
		b.onExceed(err)
	}
	return err
}

// Release records n bytes no longer held.
func (b *Budget) Release(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.used.Add(-n)
}

// Used is the bytes held now.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Peak is the most bytes held at once so far.
func (b *Budget) Peak() int64 {
	if b == nil {
		return 0
	}
	return b.peak.Load()
}

// Limit is the budget's size; 0 for a nil (unlimited) budget.
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}

// Exceeded reports whether a charge has failed.
func (b *Budget) Exceeded() bool {
	return b != nil && b.exceeded.Load()
}

// Meter is one holder's running charge: a buffer that grows charges as it
// grows, and Close releases all of it. The zero Meter (nil Budget) is
// unlimited. A Meter is not safe for concurrent use.
type Meter struct {
	b *Budget
	n int64
}

// NewMeter returns a meter charging b.
func (b *Budget) NewMeter() *Meter { return &Meter{b: b} }

// Grow charges n more bytes to the meter's budget.
func (m *Meter) Grow(n int64) error {
	if err := m.b.Charge(n); err != nil {
		return err
	}
	if n > 0 {
		m.n += n
	}
	return nil
}

// Set makes the meter's charge n bytes (charging or releasing the
// difference); the charge is unchanged when it fails.
func (m *Meter) Set(n int64) error {
	switch {
	case n > m.n:
		return m.Grow(n - m.n)
	case n < m.n:
		m.b.Release(m.n - n)
		m.n = n
	}
	return nil
}

// Held is the meter's charge.
func (m *Meter) Held() int64 { return m.n }

// Close releases the meter's whole charge.
func (m *Meter) Close() {
	m.b.Release(m.n)
	m.n = 0
}
