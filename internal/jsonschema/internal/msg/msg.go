// Package msg formats the messages of JSON Schema errors with numbers
// written as golang.org/x/text/message's English printer writes them
// ("1,234", "1×10²¹", "∞"), because the messages must be the same bytes as
// santhosh-tekuri/jsonschema's, which printed with it, and the chat
// reducer journals them. It does so without x/text/message, whose
// packages' inits and tables cost every start of the binary ~1 ms and
// ~120 page faults (docs/BENCHMARKS.md); TestEnglish holds it to the
// printer.
package msg

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Sprintf formats as fmt.Sprintf does, but integers (%d, %v) and floats
// (%v) as English writes them. Not for %T, which would name the wrapper.
func Sprintf(format string, args ...any) string {
	wrapped := make([]any, len(args))
	for i, a := range args {
		switch reflect.ValueOf(a).Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64:
			wrapped[i] = english{a}
		default:
			wrapped[i] = a
		}
	}
	return fmt.Sprintf(format, wrapped...)
}

// english is a number that %d and %v write as English does; other verbs
// (%q of a rune, %x) as fmt does.
type english struct{ v any }

func (e english) Format(f fmt.State, verb rune) {
	if verb != 'd' && verb != 'v' {
		fmt.Fprintf(f, fmt.FormatString(f, verb), e.v)
		return
	}
	rv := reflect.ValueOf(e.v)
	switch rv.Kind() {
	case reflect.Float32:
		if verb == 'v' {
			f.Write([]byte(Float(rv.Float(), 32)))
			return
		}
	case reflect.Float64:
		if verb == 'v' {
			f.Write([]byte(Float(rv.Float(), 64)))
			return
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := rv.Int()
		s := strconv.FormatUint(uint64(n), 10)
		if n < 0 {
			s = "-" + group(strconv.FormatUint(-uint64(n), 10))
		} else {
			s = group(s)
		}
		f.Write([]byte(s))
		return
	default: // unsigned
		f.Write([]byte(group(strconv.FormatUint(rv.Uint(), 10))))
		return
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), e.v)
}

// group puts a comma between every three digits of an integer's digits.
func group(digits string) string {
	if len(digits) <= 3 {
		return digits
	}
	var b strings.Builder
	first := len(digits) % 3
	if first == 0 {
		first = 3
	}
	b.WriteString(digits[:first])
	for i := first; i < len(digits); i += 3 {
		b.WriteByte(',')
		b.WriteString(digits[i : i+3])
	}
	return b.String()
}

// Float writes a float as the English printer's %v: the shortest digits
// that read back as v; as a decimal with grouped thousands when its
// exponent is from -4 to 5, else as a mantissa "×10" and the exponent in
// superscript digits (two at least); "∞", "-∞", "NaN"; -0 as "0".
func Float(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "∞"
	case math.IsInf(v, -1):
		return "-∞"
	case v == 0:
		return "0"
	}
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	// d.ddde±x: the shortest digits and the exponent.
	e := strconv.FormatFloat(v, 'e', -1, bits)
	mant, expText, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expText)
	if exp < -4 || exp >= 6 {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		return sign + m + "×10" + superscript(exp)
	}
	point := exp + 1 // digits before the decimal point
	var whole, frac string
	switch {
	case point <= 0:
		whole, frac = "0", strings.Repeat("0", -point)+digits
	case point >= len(digits):
		whole = digits + strings.Repeat("0", point-len(digits))
	default:
		whole, frac = digits[:point], digits[point:]
	}
	s := sign + group(whole)
	if frac != "" {
		s += "." + frac
	}
	return s
}

var superDigits = [...]string{"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"}

// superscript writes an exponent in superscript digits, two at least.
func superscript(exp int) string {
	var b strings.Builder
	if exp < 0 {
		b.WriteString("⁻")
		exp = -exp
	}
	d := strconv.Itoa(exp)
	if len(d) < 2 {
		d = "0" + d
	}
	for _, c := range d {
		b.WriteString(superDigits[c-'0'])
	}
	return b.String()
}

// Quote returns s in single quotes, escaped as Go escapes a string, with
// double quotes left bare and single quotes escaped: 'a "b" \'c\' d'.
func Quote(s string) string {
	s = fmt.Sprintf("%q", s)
	s = strings.ReplaceAll(s, `\"`, `"`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s[1:len(s)-1] + "'"
}
