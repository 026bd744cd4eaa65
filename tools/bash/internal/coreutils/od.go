package coreutils

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// odType is one output type of od: a (named chars), c (chars), d, o, u,
// x (integers of size bytes) or f (floats).
type odType struct {
	kind byte
	size int
}

var odNames = []string{"nul", "soh", "stx", "etx", "eot", "enq", "ack", "bel", "bs", "ht", "nl", "vt", "ff", "cr", "so", "si",
	"dle", "dc1", "dc2", "dc3", "dc4", "nak", "syn", "etb", "can", "em", "sub", "esc", "fs", "gs", "rs", "us", "sp"}

// width is the printed width of one item (with its leading blanks).
func (t odType) width() int {
	switch t.kind {
	case 'a', 'c':
		return 4
	case 'o':
		return (t.size*8+2)/3 + 1
	case 'x':
		return t.size*2 + 1
	case 'u':
		return len(strconv.FormatUint(1<<(uint(t.size)*8)-1, 10)) + 1
	case 'd':
		return len(strconv.FormatUint(1<<(uint(t.size)*8-1), 10)) + 2
	case 'f':
		if t.size == 4 {
			return 16
		}
		return 25
	}
	return 4
}

// odCmd dumps bytes: od [-A d|o|x|n] [-t TYPE]... [-c -b -x -d -o] [-N
// COUNT] [-j SKIP] [-v] [-w WIDTH] [FILE]...
func odCmd(c *cmd, args []string) int {
	radix := byte('o')
	var types []odType
	limit, skip := int64(-1), int64(0)
	all := false
	width := 16
	parseType := func(v string) error {
		for v != "" {
			k := v[0]
			v = v[1:]
			t := odType{kind: k}
			switch k {
			case 'a', 'c':
				t.size = 1
			case 'd', 'o', 'u', 'x', 'f':
				t.size = 4
				if k == 'f' {
					t.size = 8
				}
				if v != "" {
					switch v[0] {
					case 'C':
						t.size, v = 1, v[1:]
					case 'S':
						t.size, v = 2, v[1:]
					case 'I':
						t.size, v = 4, v[1:]
					case 'L':
						t.size, v = 8, v[1:]
					case 'F':
						t.size, v = 4, v[1:]
					case 'D':
						t.size, v = 8, v[1:]
					default:
						j := 0
						for j < len(v) && v[j] >= '0' && v[j] <= '9' {
							j++
						}
						if j > 0 {
							n, _ := strconv.Atoi(v[:j])
							t.size, v = n, v[j:]
						}
					}
				}
				if k == 'f' && t.size != 4 && t.size != 8 || k != 'f' && t.size != 1 && t.size != 2 && t.size != 4 && t.size != 8 {
					return fmt.Errorf("invalid type size %d for %c", t.size, k)
				}
			default:
				return fmt.Errorf("invalid character '%c' in type string", k)
			}
			types = append(types, t)
		}
		return nil
	}
	num := func(v string) (int64, error) {
		mult := int64(1)
		switch {
		case strings.HasSuffix(v, "k") || strings.HasSuffix(v, "K"):
			mult, v = 1024, v[:len(v)-1]
		case strings.HasSuffix(v, "M"):
			mult, v = 1<<20, v[:len(v)-1]
		case strings.HasSuffix(v, "b"):
			mult, v = 512, v[:len(v)-1]
		}
		n, err := strconv.ParseInt(v, 0, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("invalid number %s", quote(v))
		}
		return n * mult, nil
	}
	files, st, ok := c.flags(args, "AtNjw", 1, func(f, v string) error {
		var err error
		switch f {
		case "-A", "--address-radix":
			if v != "d" && v != "o" && v != "x" && v != "n" {
				return fmt.Errorf("invalid output address radix '%s'; it must be one character from [doxn]", v)
			}
			radix = v[0]
		case "-t", "--format":
			err = parseType(v)
		case "-c":
			err = parseType("c")
		case "-b":
			err = parseType("o1")
		case "-x", "-h":
			err = parseType("x2")
		case "-d":
			err = parseType("u2")
		case "-o":
			err = parseType("o2")
		case "-i":
			err = parseType("dI")
		case "-l":
			err = parseType("dL")
		case "-N", "--read-bytes":
			limit, err = num(v)
		case "-j", "--skip-bytes":
			skip, err = num(v)
		case "-v", "--output-duplicates":
			all = true
		case "-w", "--width":
			var n int64
			n, err = num(v)
			if err == nil && (n < 1 || n > 1024) {
				err = fmt.Errorf("invalid width %s", quote(v))
			}
			width = int(n)
		default:
			return errUnknownFlag
		}
		return err
	})
	if !ok {
		return st
	}
	if len(types) == 0 {
		types = []odType{{kind: 'o', size: 2}}
	}
	if st, ok := c.operands(files); !ok {
		return st
	}
	if skip > 0 {
		if _, err := io.CopyN(io.Discard, c.in, skip); err != nil && err != io.EOF {
			return c.readErr(err)
		}
	}
	var in io.Reader = c.in
	if limit >= 0 {
		in = io.LimitReader(c.in, limit)
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return c.readErr(err)
	}
	addr := func(n int64) string {
		switch radix {
		case 'd':
			return fmt.Sprintf("%07d", n)
		case 'x':
			return fmt.Sprintf("%06x", n)
		case 'n':
			return ""
		}
		return fmt.Sprintf("%07o", n)
	}
	// GNU od pads the fields of the narrower types so that every type's
	// columns line up: pads[i] blanks are spread over type i's fields
	maxLine := 0
	for _, t := range types {
		maxLine = max(maxLine, width/t.size*t.width())
	}
	pads := make([]int, len(types))
	for i, t := range types {
		pads[i] = maxLine - width/t.size*t.width()
	}
	var prev string
	starred := false
	for off := 0; off < len(data); off += width {
		if c.stopped() {
			return c.errf(1, "interrupted")
		}
		chunk := data[off:min(off+width, len(data))]
		var lines []string
		for i, t := range types {
			lines = append(lines, odLine(t, chunk, width/t.size, pads[i]))
		}
		text := strings.Join(lines, "\n")
		if !all && text == prev && len(chunk) == width {
			if !starred {
				c.out.WriteString("*\n")
				starred = true
			}
			continue
		}
		prev, starred = text, false
		a := addr(skip + int64(off))
		pad := strings.Repeat(" ", len(a))
		for i, l := range lines {
			if i == 0 {
				c.out.WriteString(a + l + "\n")
			} else {
				c.out.WriteString(pad + l + "\n")
			}
		}
	}
	if radix != 'n' {
		c.out.WriteString(addr(skip+int64(len(data))) + "\n")
	}
	return c.done(0)
}

// odLine formats one line's bytes as type t: a line has fields items,
// over which pad blanks are spread as GNU od's print functions do.
func odLine(t odType, chunk []byte, fields, pad int) string {
	var b strings.Builder
	w := t.width()
	remaining := pad
	for i, field := 0, fields; i < len(chunk); i, field = i+t.size, field-1 {
		extra := 0
		if field > 0 {
			next := pad * (field - 1) / fields
			extra, remaining = remaining-next, next
		}
		item := make([]byte, 8)
		copy(item, chunk[i:min(i+t.size, len(chunk))])
		var s string
		switch t.kind {
		case 'c':
			ch := item[0]
			switch ch {
			case 0:
				s = `\0`
			case '\a':
				s = `\a`
			case '\b':
				s = `\b`
			case '\f':
				s = `\f`
			case '\n':
				s = `\n`
			case '\r':
				s = `\r`
			case '\t':
				s = `\t`
			case '\v':
				s = `\v`
			default:
				if ch >= 32 && ch < 127 {
					s = string(ch)
				} else {
					s = fmt.Sprintf("%03o", ch)
				}
			}
		case 'a':
			ch := item[0] & 0x7f
			switch {
			case ch <= 32:
				s = odNames[ch]
			case ch == 127:
				s = "del"
			default:
				s = string(ch)
			}
		default:
			u := binary.LittleEndian.Uint64(item)
			if t.size < 8 {
				u &= 1<<(uint(t.size)*8) - 1
			}
			digits := w - 1
			switch t.kind {
			case 'o':
				s = fmt.Sprintf("%0*o", digits, u)
			case 'x':
				s = fmt.Sprintf("%0*x", digits, u)
			case 'u':
				s = strconv.FormatUint(u, 10)
			case 'd':
				sh := 64 - uint(t.size)*8
				v := int64(u<<sh) >> sh
				s = strconv.FormatInt(v, 10)
			case 'f':
				if t.size == 4 {
					s = odFloat(float64(math.Float32frombits(uint32(u))), 32)
				} else {
					s = odFloat(math.Float64frombits(u), 64)
				}
			}
		}
		b.WriteString(fmt.Sprintf("%*s", w+extra, s))
	}
	return b.String()
}

// odFloat formats a float as GNU od does (its ftoastr): %g with the
// fewest digits, from FLT_DIG or DBL_DIG (1 below the smallest normal
// number) up, that read back as the same value; inf, -inf, nan, -nan.
func odFloat(v float64, bits int) string {
	switch {
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case math.IsNaN(v):
		if math.Signbit(v) {
			return "-nan"
		}
		return "nan"
	}
	prec, smallest := 15, 0x1p-1022
	if bits == 32 {
		prec, smallest = 6, 0x1p-126
	}
	if math.Abs(v) < smallest {
		prec = 1
	}
	for ; prec < 17; prec++ {
		s := strconv.FormatFloat(v, 'g', prec, bits)
		if back, err := strconv.ParseFloat(s, bits); err == nil && back == v {
			return s
		}
	}
	return strconv.FormatFloat(v, 'g', 17, bits)
}
