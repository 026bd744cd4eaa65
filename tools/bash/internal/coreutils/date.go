package coreutils

import (
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/timefmt"
)

// dateCmd prints the sandbox clock: date [-u] [-d @EPOCH|DATE] [-I[FMT]]
// [-R] [+FORMAT]. The time zone is always UTC: the host's zone is not
// visible in the sandbox.
func dateCmd(c *cmd, args []string) int {
	env := c.env
	now := time.Now
	if env.Now != nil {
		now = env.Now
	}
	t := now().UTC()
	format := "%a %b %e %H:%M:%S %Z %Y"
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-u" || a == "--utc" || a == "--universal":
		case a == "-d" || a == "--date" || strings.HasPrefix(a, "--date=") || (strings.HasPrefix(a, "-d") && len(a) > 2):
			var v string
			switch {
			case strings.HasPrefix(a, "--date="):
				v = a[len("--date="):]
			case len(a) > 2 && a[1] == 'd':
				v = a[2:]
			default:
				if i+1 >= len(args) {
					return c.errf(1, "option requires an argument -- 'd'")
				}
				i++
				v = args[i]
			}
			pt, err := parseDate(v, t)
			if err != nil {
				return c.errf(1, "invalid date '%s'", v)
			}
			t = pt
		case a == "-I" || a == "--iso-8601" || strings.HasPrefix(a, "-I") || strings.HasPrefix(a, "--iso-8601="):
			spec := strings.TrimPrefix(strings.TrimPrefix(a, "--iso-8601"), "-I")
			spec = strings.TrimPrefix(spec, "=")
			switch spec {
			case "", "date":
				format = "%Y-%m-%d"
			case "hours":
				format = "%Y-%m-%dT%H%:z"
			case "minutes":
				format = "%Y-%m-%dT%H:%M%:z"
			case "seconds":
				format = "%Y-%m-%dT%H:%M:%S%:z"
			case "ns":
				format = "%Y-%m-%dT%H:%M:%S,%N%:z"
			default:
				return c.errf(1, "invalid argument '%s' for '--iso-8601'", spec)
			}
		case a == "-R" || a == "--rfc-email":
			format = "%a, %d %b %Y %H:%M:%S %z"
		case strings.HasPrefix(a, "+"):
			format = a[1:]
		default:
			return c.errf(1, "invalid argument '%s'", a)
		}
	}
	c.out.WriteString(timefmt.Strftime(format, t))
	c.out.WriteByte('\n')
	return c.done(0)
}

// parseDate understands what date -d is given: @EPOCH, "now", RFC 3339,
// YYYY-MM-DD[ HH:MM[:SS]], a time of day HH:MM[:SS], "Jan 2 2006" and
// "2 Jan 2006", followed by (or alone as) relative items: yesterday,
// today, tomorrow, midnight, noon, [+-]N unit [ago], next/last unit or
// weekday, and a weekday name (its next occurrence, today included).
// Units: second, minute, hour, day, week, fortnight, month, year
// (singular, plural, or abbreviated: sec, min, hr).
func parseDate(v string, now time.Time) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "now" || v == "" {
		return now, nil
	}
	if rest, ok := strings.CutPrefix(v, "@"); ok {
		secs, frac, _ := strings.Cut(rest, ".")
		s, err := strconv.ParseInt(secs, 10, 64)
		if err != nil {
			return time.Time{}, err
		}
		var ns int64
		if frac != "" {
			frac = (frac + "000000000")[:9]
			if ns, err = strconv.ParseInt(frac, 10, 64); err != nil {
				return time.Time{}, err
			}
		}
		return time.Unix(s, ns).UTC(), nil
	}
	if t, ok := absoluteDate(v, now); ok {
		return t, nil
	}
	words := strings.Fields(v)
	t := now
	i := 0
	// The longest leading run of words that is an absolute date.
	for n := min(len(words), 4); n > 0; n-- {
		if at, ok := absoluteDate(strings.Join(words[:n], " "), now); ok {
			t, i = at, n
			break
		}
	}
	type rel struct {
		n    int64
		unit string
	}
	var items []rel
	for i < len(words) {
		w := strings.ToLower(words[i])
		i++
		switch w {
		case "now", "today", "this":
			continue
		case "yesterday":
			items = append(items, rel{-1, "day"})
			continue
		case "tomorrow":
			items = append(items, rel{1, "day"})
			continue
		case "midnight":
			t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
			continue
		case "noon":
			t = time.Date(t.Year(), t.Month(), t.Day(), 12, 0, 0, 0, time.UTC)
			continue
		case "ago":
			if len(items) == 0 {
				return time.Time{}, io.ErrUnexpectedEOF
			}
			for k := range items {
				items[k].n = -items[k].n
			}
			continue
		case "utc", "gmt", "z", "+0000":
			continue
		}
		if hm, ok := timeOfDay(w); ok {
			t = time.Date(t.Year(), t.Month(), t.Day(), hm[0], hm[1], hm[2], 0, time.UTC)
			continue
		}
		if wd, ok := weekday(w); ok {
			d := (int(wd) - int(t.Weekday()) + 7) % 7
			t = t.AddDate(0, 0, d)
			continue
		}
		var n int64 = 1
		if w == "next" || w == "last" || w == "previous" {
			if w != "next" {
				n = -1
			}
			if i >= len(words) {
				return time.Time{}, io.ErrUnexpectedEOF
			}
			w = strings.ToLower(words[i])
			i++
			if wd, ok := weekday(w); ok {
				d := (int(wd) - int(t.Weekday()) + 7) % 7
				if n > 0 && d == 0 {
					d = 7
				}
				if n < 0 {
					d = -((int(t.Weekday()) - int(wd) + 7) % 7)
					if d == 0 {
						d = -7
					}
				}
				t = t.AddDate(0, 0, d)
				continue
			}
		} else if num, unit, ok := numberUnit(w); ok {
			n = num
			w = unit
			if w == "" {
				if i >= len(words) {
					return time.Time{}, io.ErrUnexpectedEOF
				}
				w = strings.ToLower(words[i])
				i++
			}
		} else if w == "+" || w == "-" {
			if i >= len(words) {
				return time.Time{}, io.ErrUnexpectedEOF
			}
			num, unit, ok := numberUnit(words[i])
			if !ok {
				return time.Time{}, io.ErrUnexpectedEOF
			}
			i++
			n = num
			if w == "-" {
				n = -n
			}
			w = unit
			if w == "" {
				if i >= len(words) {
					return time.Time{}, io.ErrUnexpectedEOF
				}
				w = strings.ToLower(words[i])
				i++
			}
		}
		unit, ok := dateUnit(w)
		if !ok {
			return time.Time{}, io.ErrUnexpectedEOF
		}
		items = append(items, rel{n, unit})
	}
	for _, it := range items {
		switch it.unit {
		case "year":
			t = t.AddDate(int(it.n), 0, 0)
		case "month":
			t = t.AddDate(0, int(it.n), 0)
		case "day":
			t = t.AddDate(0, 0, int(it.n))
		case "week":
			t = t.AddDate(0, 0, 7*int(it.n))
		case "fortnight":
			t = t.AddDate(0, 0, 14*int(it.n))
		case "hour":
			t = t.Add(time.Duration(it.n) * time.Hour)
		case "minute":
			t = t.Add(time.Duration(it.n) * time.Minute)
		case "second":
			t = t.Add(time.Duration(it.n) * time.Second)
		}
	}
	return t.UTC(), nil
}

// absoluteDate parses a whole string as a calendar date or time.
func absoluteDate(v string, now time.Time) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02 15:04",
		"2006-01-02T15:04", "2006-01-02", "2006/01/02", "01/02/2006", "Jan 2 2006", "January 2 2006", "2 Jan 2006",
		"2 January 2006", "Jan 2, 2006", "January 2, 2006", "Mon Jan 2 15:04:05 MST 2006", "Mon Jan _2 15:04:05 UTC 2006",
		"2006-01-02 15:04:05 -0700", time.RFC1123Z, time.RFC1123, "20060102"} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// timeOfDay parses HH:MM[:SS].
func timeOfDay(w string) ([3]int, bool) {
	parts := strings.Split(w, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return [3]int{}, false
	}
	var hm [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || (i == 0 && n > 23) || (i > 0 && n > 59) {
			return [3]int{}, false
		}
		hm[i] = n
	}
	return hm, true
}

func weekday(w string) (time.Weekday, bool) {
	for d := time.Sunday; d <= time.Saturday; d++ {
		name := strings.ToLower(d.String())
		if w == name || w == name[:3] || w == strings.TrimSuffix(name, "day") && len(w) >= 3 {
			return d, true
		}
	}
	return 0, false
}

// numberUnit splits "+3", "-2days" or "5" into a number and an attached
// unit ("" when the unit is the next word).
func numberUnit(w string) (int64, string, bool) {
	j := 0
	if j < len(w) && (w[j] == '+' || w[j] == '-') {
		j++
	}
	k := j
	for k < len(w) && w[k] >= '0' && w[k] <= '9' {
		k++
	}
	if k == j {
		return 0, "", false
	}
	n, err := strconv.ParseInt(w[:k], 10, 64)
	if err != nil {
		return 0, "", false
	}
	return n, strings.ToLower(w[k:]), true
}

// dateUnit names the unit of a relative item.
func dateUnit(w string) (string, bool) {
	w = strings.TrimSuffix(strings.ToLower(w), "s")
	switch w {
	case "year", "yr":
		return "year", true
	case "month", "mon":
		return "month", true
	case "week", "wk":
		return "week", true
	case "fortnight":
		return "fortnight", true
	case "day":
		return "day", true
	case "hour", "hr", "h":
		return "hour", true
	case "minute", "min", "m":
		return "minute", true
	case "second", "sec", "":
		return "second", true
	}
	return "", false
}
