package llm

import (
	"math"
	"math/bits"
)

// Price is what a model costs, in micro-USD (millionths of a dollar) per
// million tokens. $1.25 per million input tokens is Input: 1_250_000.
type Price struct {
	// Input is the price of prompt tokens that were not cached.
	Input uint64 `json:"input"`
	// CachedInput is the price of cached prompt tokens.
	CachedInput uint64 `json:"cached_input"`
	// Output is the price of completion tokens (reasoning included).
	Output uint64 `json:"output"`
}

// CostMicroUSD returns the cost of u at price p in micro-USD, rounded half
// up: uncached prompt tokens at Input, cached ones at CachedInput,
// completion tokens at Output. It saturates at the largest uint64 instead
// of overflowing.
func (p Price) CostMicroUSD(u TokenUsage) uint64 {
	cached := min(u.Cached, u.Prompt)
	// Sum in units of 1e-6 micro-USD (price per million × tokens), as a
	// 128-bit number, then divide by a million with rounding.
	var hi, lo uint64
	add := func(tokens, price uint64) {
		h, l := bits.Mul64(tokens, price)
		var carry uint64
		lo, carry = bits.Add64(lo, l, 0)
		hi, _ = bits.Add64(hi, h, carry)
	}
	add(u.Prompt-cached, p.Input)
	add(cached, p.CachedInput)
	add(u.Completion, p.Output)
	const million = 1_000_000
	var carry uint64
	lo, carry = bits.Add64(lo, million/2, 0)
	hi += carry
	if hi >= million { // the quotient would not fit in 64 bits
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, million)
	return q
}

// CentsFromMicroUSD converts micro-USD to cents, rounding half up.
func CentsFromMicroUSD(microUSD uint64) uint64 {
	const perCent = 10_000
	q := microUSD / perCent
	if microUSD%perCent >= perCent/2 {
		q++
	}
	return q
}
