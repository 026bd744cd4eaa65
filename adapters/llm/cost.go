package llm

import (
	"math"
	"math/bits"
	"strings"
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

// Prices maps model names to prices. A model is looked up by its exact
// name first, then by the longest key that is a prefix of it, so "gpt-5.2"
// prices "gpt-5.2-2025-12-11" too.
type Prices map[string]Price

// Lookup returns the price of model and whether there is one.
func (p Prices) Lookup(model string) (Price, bool) {
	if pr, ok := p[model]; ok {
		return pr, true
	}
	best, found := "", false
	for k := range p { // the longest matching key wins, so order does not matter
		if k != "" && strings.HasPrefix(model, k) && len(k) > len(best) {
			best, found = k, true
		}
	}
	if !found {
		return Price{}, false
	}
	return p[best], true
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
