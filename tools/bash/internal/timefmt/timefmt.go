// Package timefmt formats times with the conversions of C's strftime, for
// the utilities (date, find -printf) and the shell (printf %(fmt)T, the
// prompt's \D{fmt}) alike.
package timefmt

import (
	"strconv"
	"strings"
	"time"
)

// Strftime formats t as C's Strftime(3) does in glibc, which both date(1)
// and bash's printf %(fmt)T and \D{fmt} use: the conversions of date(1),
// with the flags - (no padding), _ (spaces) and 0 (zeros).
func Strftime(f string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		pad := byte(0) // 0 = default, '-' none, '_' space, '0' zero
		if f[i] == '-' || f[i] == '_' || f[i] == '0' {
			pad = f[i]
			if i+1 >= len(f) {
				b.WriteByte('%')
				b.WriteByte(pad)
				break
			}
			i++
		}
		num := func(v, width int, def byte) {
			p := def
			switch pad {
			case '_':
				p = ' '
			case '-', '0':
				p = pad
			}
			s := strconv.Itoa(v)
			if p != '-' {
				for len(s) < width {
					s = string(p) + s
				}
			}
			b.WriteString(s)
		}
		switch f[i] {
		case 'Y':
			num(t.Year(), 4, '0')
		case 'C':
			num(t.Year()/100, 2, '0')
		case 'y':
			num(t.Year()%100, 2, '0')
		case 'm':
			num(int(t.Month()), 2, '0')
		case 'd':
			num(t.Day(), 2, '0')
		case 'e':
			num(t.Day(), 2, ' ')
		case 'H':
			num(t.Hour(), 2, '0')
		case 'k':
			num(t.Hour(), 2, ' ')
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(h, 2, '0')
		case 'l':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(h, 2, ' ')
		case 'M':
			num(t.Minute(), 2, '0')
		case 'S':
			num(t.Second(), 2, '0')
		case 'N':
			b.WriteString(strconv.Itoa(1000000000 + t.Nanosecond())[1:])
		case 'j':
			num(t.YearDay(), 3, '0')
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			b.WriteString(strconv.Itoa(wd))
		case 'w':
			b.WriteString(strconv.Itoa(int(t.Weekday())))
		case 'U': // week of the year, Sunday first; days before the first Sunday are week 0
			num((t.YearDay()+6-int(t.Weekday()))/7, 2, '0')
		case 'W': // the same, Monday first
			num((t.YearDay()+6-(int(t.Weekday())+6)%7)/7, 2, '0')
		case 'V': // ISO 8601 week
			_, wk := t.ISOWeek()
			num(wk, 2, '0')
		case 'G': // ISO 8601 week-based year
			y, _ := t.ISOWeek()
			b.WriteString(strconv.Itoa(y))
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'P':
			if t.Hour() < 12 {
				b.WriteString("am")
			} else {
				b.WriteString("pm")
			}
		case 's':
			b.WriteString(strconv.FormatInt(t.Unix(), 10))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'z':
			b.WriteString(t.Format("-0700"))
		case ':':
			if i+1 < len(f) && f[i+1] == 'z' {
				i++
				b.WriteString(t.Format("-07:00"))
			} else {
				b.WriteString("%:")
			}
		case 'F':
			b.WriteString(Strftime("%Y-%m-%d", t))
		case 'T':
			b.WriteString(Strftime("%H:%M:%S", t))
		case 'R':
			b.WriteString(Strftime("%H:%M", t))
		case 'D':
			b.WriteString(Strftime("%m/%d/%y", t))
		case 'c':
			b.WriteString(Strftime("%a %b %e %H:%M:%S %Y", t))
		case 'x':
			b.WriteString(Strftime("%m/%d/%y", t))
		case 'X':
			b.WriteString(Strftime("%H:%M:%S", t))
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(f[i])
		}
	}
	return b.String()
}
