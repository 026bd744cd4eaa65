package coreutils

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// seqCmd prints a sequence of numbers: seq [-s SEP] [-w] [-f FORMAT]
// [FIRST [INCR]] LAST.
func seqCmd(c *cmd, args []string) int {
	sep := "\n"
	width := false
	userFormat := ""
	var nums []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-s" || a == "--separator":
			if i+1 >= len(args) {
				return c.errf(1, "option requires an argument -- 's'")
			}
			sep = args[i+1]
			i++
		case strings.HasPrefix(a, "-s") && len(a) > 2:
			sep = a[2:]
		case a == "-w" || a == "--equal-width":
			width = true
		case a == "-f" || a == "--format":
			if i+1 >= len(args) {
				return c.errf(1, "option requires an argument -- 'f'")
			}
			userFormat = args[i+1]
			i++
		case strings.HasPrefix(a, "--format="):
			userFormat = strings.TrimPrefix(a, "--format=")
		case strings.HasPrefix(a, "-f") && len(a) > 2:
			userFormat = a[2:]
		default:
			nums = append(nums, a)
		}
	}
	if len(nums) < 1 || len(nums) > 3 {
		return c.errf(1, "usage: seq [-s SEP] [-w] [-f FORMAT] [FIRST [INCREMENT]] LAST")
	}
	vals := make([]float64, len(nums))
	prec := 0
	for i, s := range nums {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) {
			return c.errf(1, "invalid floating point argument: '%s'", s)
		}
		vals[i] = f
		if j := strings.IndexByte(s, '.'); j >= 0 && !strings.ContainsAny(s, "eE") {
			prec = max(prec, len(s)-j-1)
		}
	}
	first, incr, last := 1.0, 1.0, vals[len(vals)-1]
	switch len(vals) {
	case 2:
		first = vals[0]
	case 3:
		first, incr = vals[0], vals[1]
	}
	if incr == 0 {
		return c.errf(1, "invalid Zero increment value: '%s'", nums[1])
	}
	format := func(v float64) string {
		return strconv.FormatFloat(v, 'f', prec, 64)
	}
	if userFormat != "" {
		if width {
			return c.errf(1, "format string may not be specified when printing equal width strings")
		}
		if !seqFormatOK(userFormat) {
			return c.errf(1, "format %s has no %% directive or more than one, or not a floating point one (%%f, %%g, %%e)", quote(userFormat))
		}
		format = func(v float64) string { return fmt.Sprintf(userFormat, v) }
	}
	w := 0
	if width {
		w = max(len(format(first)), len(format(last)))
	}
	n := 0
	for i := 0; ; i++ {
		v := first + float64(i)*incr
		if (incr > 0 && v > last+1e-9*math.Abs(incr)) || (incr < 0 && v < last-1e-9*math.Abs(incr)) {
			break
		}
		if i&1023 == 1023 && c.stopped() {
			return c.errf(1, "interrupted")
		}
		if n > 0 {
			c.out.WriteString(sep)
		}
		s := format(v)
		if w > 0 && len(s) < w {
			if strings.HasPrefix(s, "-") {
				s = "-" + strings.Repeat("0", w-len(s)) + s[1:]
			} else {
				s = strings.Repeat("0", w-len(s)) + s
			}
		}
		c.out.WriteString(s)
		n++
	}
	if n > 0 {
		c.out.WriteByte('\n')
	}
	return c.done(0)
}

// seqFormatOK reports whether f has exactly one printf directive, a
// floating point one (flags, width and precision allowed), as seq -f
// requires; %% is a percent sign.
func seqFormatOK(f string) bool {
	n := 0
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		if i+1 < len(f) && f[i+1] == '%' {
			i++
			continue
		}
		j := i + 1
		for j < len(f) && strings.IndexByte("-+ #0123456789.", f[j]) >= 0 {
			j++
		}
		if j >= len(f) || strings.IndexByte("feEgGaA", f[j]) < 0 {
			return false
		}
		n++
		i = j
	}
	return n == 1
}
