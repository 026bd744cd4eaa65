package schema

import (
	"fmt"
	"strconv"
	"strings"
)

// Bounds of IEEE 754 decimal128, the range AIR's dec128 promises.
const (
	decMaxDigits = 34
	decMinExp    = -6176
	decMaxExp    = 6111
)

// canonicalDecimal parses a decimal literal ([+-]digits[.digits][e[+-]digits])
// and returns its one canonical text: no plus sign, no leading zeros in the
// integer part, no trailing zeros in the fraction, no "-0", and plain
// notation unless that would need more than 20 zeros, in which case it is
// "<digits>e<exp>" with an integer coefficient. So "0.20", "2e-1" and
// "+0.2" all become "0.2"; ".2" is rejected (digits must precede a point).
func canonicalDecimal(s string) (string, error) {
	orig := s
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%q is not a dec128 decimal (%s); want e.g. \"0.2\", \"-12.50\" or \"1e-9\"", clipText(orig), why)
	}
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	mant, expPart, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, hasPoint := strings.Cut(mant, ".")
	if intPart == "" || !allOf(intPart, isDigit) {
		return bad("digits must come first")
	}
	if hasPoint && (frac == "" || !allOf(frac, isDigit)) {
		return bad("digits must follow the point")
	}
	exp := int64(0)
	if hasExp {
		e, err := strconv.ParseInt(expPart, 10, 32)
		if err != nil || expPart == "" || expPart[0] == '+' && len(expPart) == 1 {
			return bad("bad exponent")
		}
		exp = e
	}
	// coefficient digits and exponent: value = digits × 10^exp
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= int64(len(frac))
	if digits == "" {
		return "0", nil
	}
	// drop trailing zeros into the exponent
	for strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		exp++
	}
	if len(digits) > decMaxDigits {
		return bad(fmt.Sprintf("more than %d significant digits", decMaxDigits))
	}
	if exp < decMinExp || exp > decMaxExp {
		return bad("exponent out of the dec128 range")
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	switch {
	case exp >= 0 && exp <= 20:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", int(exp)))
	case exp < 0 && -exp < int64(len(digits)):
		p := len(digits) + int(exp)
		b.WriteString(digits[:p])
		b.WriteByte('.')
		b.WriteString(digits[p:])
	case exp < 0 && -exp-int64(len(digits)) <= 20:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", int(-exp)-len(digits)))
		b.WriteString(digits)
	default:
		b.WriteString(digits)
		b.WriteByte('e')
		b.WriteString(strconv.FormatInt(exp, 10))
	}
	return b.String(), nil
}

func clipText(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
