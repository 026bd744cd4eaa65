package llm

import (
	"math"
	"math/bits"
)

// Price is what a model costs, in micro-USD (millionths of a dollar) per
// million tokens. $1.25 per million input tokens is Input: 1_250_000.
type Price struct {
	// Input is the price of input tokens neither read from nor written
	// to the provider's cache.
	Input uint64 `json:"input"`
	// CachedInput is the price of input tokens read from the cache; 0
	// means the model has no cache discount (they cost Input).
	CachedInput uint64 `json:"cached_input"`
	// CacheWrite is the price of input tokens written to the cache
	// (Anthropic charges 1.25× the input price); 0 means writes cost
	// Input.
	CacheWrite uint64 `json:"cache_write"`
	// Output is the price of output tokens (reasoning included).
	Output uint64 `json:"output"`
}

// CostMicroUSD returns the cost of u at price p in micro-USD, rounded half
// up: input tokens read from the cache at CachedInput, those written to it
// at CacheWrite, the others at Input, output tokens at Output. Cache
// counts larger than the input are capped at it. It saturates at the
// largest uint64 instead of overflowing.
func (p Price) CostMicroUSD(u TokenUsage) uint64 {
	read := min(u.CacheRead, u.Input)
	write := min(u.CacheWrite, u.Input-read)
	readPrice, writePrice := p.CachedInput, p.CacheWrite
	if readPrice == 0 {
		readPrice = p.Input
	}
	if writePrice == 0 {
		writePrice = p.Input
	}
	// Sum in units of 1e-6 micro-USD (price per million × tokens), as a
	// 128-bit number, then divide by a million with rounding.
	var hi, lo uint64
	add := func(tokens, price uint64) {
		h, l := bits.Mul64(tokens, price)
		var carry uint64
		lo, carry = bits.Add64(lo, l, 0)
		hi, _ = bits.Add64(hi, h, carry)
	}
	add(u.Input-read-write, p.Input)
	add(read, readPrice)
	add(write, writePrice)
	add(u.Output, p.Output)
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
