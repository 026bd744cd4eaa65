package msg

import (
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// TestEnglish: Sprintf writes what x/text's English printer writes, for
// the verbs and values the error messages use.
func TestEnglish(t *testing.T) {
	p := message.NewPrinter(language.English)
	check := func(format string, args ...any) {
		t.Helper()
		if got, want := Sprintf(format, args...), p.Sprintf(format, args...); got != want {
			t.Errorf("Sprintf(%q, %v) = %q, want %q", format, args, got, want)
		}
	}
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 0.1, 0.0001, 0.00012345, 1e-5, 1e-7, 999999, 999999.5,
		1e6, -1e6, 123456.789, 1234567.5, 1e21, 1e300, 1e-300, 5e-324, math.MaxFloat64, -2500.25, 100, 1e5,
		0.30000000000000004, 12345678901234567890, math.Inf(1), math.Inf(-1), math.NaN(), 3.14159, 1.0 / 3}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		floats = append(floats, math.Float64frombits(r.Uint64()), r.NormFloat64()*math.Pow(10, float64(r.IntN(40)-20)), float64(r.IntN(2000000)-1000000)/float64(1+r.IntN(1000)))
	}
	for _, f := range floats {
		check("minimum: got %v, want %v", f, -f)
	}
	ints := []int64{0, 1, -1, 999, 1000, -1000, 999999, 1000000, math.MaxInt64, math.MinInt64}
	for range 20000 {
		ints = append(ints, r.Int64N(1<<uint(r.IntN(62)+1))*int64(1-2*r.IntN(2)))
	}
	for _, n := range ints {
		check("minLength: got %d, want %d", int(n), n)
		check("min %d items required to match contains schema, but matched %d items at %v", n, int32(n), "1 2")
	}
	check("items at %d and %d are equal", uint64(math.MaxUint64), uint8(7))
	check("invalid character %q", 'a')
	check("unit %q out of order", byte('Y'))
	check("invalid character %q in build identifier", rune(0x1F600))
	check("must have %d elements", 5)
	check("%s is not valid %s: %v", "'x'", "uuid", "y")
	check("both %s and %s resolve to %q causing reference cycle", "/a", "", "mem:///x#")
	check("got %s, want %s", "string", "integer")
	check("float32 %v", float32(1.5e7))
}
