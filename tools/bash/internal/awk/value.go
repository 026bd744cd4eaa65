package awk

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// value is an awk value: a number, a string, a "strnum" (a string from
// input that looks like a number, which compares as one) or uninitialized.
type value struct {
	kind uint8
	s    string
	n    float64
}

const (
	kUninit uint8 = iota
	kNum
	kStr
	kStrNum
)

func num(n float64) value { return value{kind: kNum, n: n} }
func str(s string) value  { return value{kind: kStr, s: s} }
func boolean(b bool) value {
	if b {
		return value{kind: kNum, n: 1}
	}
	return value{kind: kNum}
}

// strnum makes the value of input text: a strnum when the whole text
// (blanks aside) is a number, else a string.
func strnum(s string) value {
	if n, ok := looksNumeric(s); ok {
		return value{kind: kStrNum, s: s, n: n}
	}
	return value{kind: kStr, s: s}
}

// looksNumeric reports whether s, blanks aside, is a decimal number
// (POSIX awk's "numeric string"; no hex, inf or nan).
func looksNumeric(s string) (float64, bool) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, false
	}
	i := 0
	if t[i] == '+' || t[i] == '-' {
		i++
	}
	digits := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
		digits++
	}
	if i < len(t) && t[i] == '.' {
		i++
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		j := i + 1
		if j < len(t) && (t[j] == '+' || t[j] == '-') {
			j++
		}
		if j < len(t) && t[j] >= '0' && t[j] <= '9' {
			for j < len(t) && t[j] >= '0' && t[j] <= '9' {
				j++
			}
			i = j
		}
	}
	if i != len(t) {
		return 0, false
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil {
		// Out of range: ParseFloat still returns ±Inf, which is right.
		return n, !math.IsNaN(n)
	}
	return n, true
}

// strToNum converts a string as awk does: the longest numeric prefix
// after leading blanks, 0 when there is none.
func strToNum(s string) float64 {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v') {
		i++
	}
	start := i
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			i = j
		}
	}
	n, _ := strconv.ParseFloat(s[start:i], 64)
	return n
}

func (v value) num() float64 {
	switch v.kind {
	case kNum, kStrNum:
		return v.n
	case kStr:
		return strToNum(v.s)
	}
	return 0
}

func (v value) bool() bool {
	switch v.kind {
	case kNum:
		return v.n != 0
	case kStr:
		return v.s != ""
	case kStrNum:
		return v.n != 0
	}
	return false
}

// formatNum renders a number as awk converts it to a string: integers as
// integers, others with format (CONVFMT or OFMT).
func formatNum(n float64, format string) string {
	if n == math.Trunc(n) && !math.IsInf(n, 0) {
		if n == 0 {
			return "0"
		}
		if math.Abs(n) < 1e15 {
			return strconv.FormatInt(int64(n), 10)
		}
		return strconv.FormatFloat(n, 'f', 0, 64)
	}
	switch {
	case math.IsNaN(n):
		if math.Signbit(n) {
			return "-nan"
		}
		return "+nan"
	case math.IsInf(n, 1):
		return "+inf"
	case math.IsInf(n, -1):
		return "-inf"
	}
	if format == "%.6g" {
		return formatG(n, 6, false, false)
	}
	return sprintfNum(format, n)
}

// cache of compiled dynamic regular expressions.
type regexCache map[string]*regexp.Regexp
