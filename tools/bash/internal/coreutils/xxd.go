package coreutils

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/escape"
)

// xxdCmd makes a hex dump or reverses one: xxd [-p -i -b -u -a -r -c COLS
// -g BYTES -l LEN -s [+-]SEEK -o OFF -n NAME] [INFILE [OUTFILE]].
func xxdCmd(c *cmd, args []string) int {
	var plain, include, bits, upper, autoskip, reverse, decimal bool
	cols, group, limit, seek, offset := -1, -1, int64(-1), int64(0), int64(0)
	seekFromEnd := false
	name := ""
	intArg := func(v string) (int64, error) {
		n, err := strconv.ParseInt(v, 0, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid number %s", quote(v))
		}
		return n, nil
	}
	files, st, ok := c.flags(args, "cglson", 1, func(f, v string) error {
		var err error
		var n int64
		switch f {
		case "-p", "-ps", "-postscript", "-plain", "--plain":
			plain = true
		case "-i", "-include", "--include":
			include = true
		case "-b", "-bits", "--bits":
			bits = true
		case "-u", "--upper":
			upper = true
		case "-a", "-autoskip", "--autoskip":
			autoskip = true
		case "-r", "-revert", "--revert":
			reverse = true
		case "-d", "--decimal":
			decimal = true
		case "-c", "-cols", "--cols":
			n, err = intArg(v)
			if err == nil && (n < 0 || n > 256) {
				err = fmt.Errorf("invalid number of columns (max. 256)")
			}
			cols = int(n)
		case "-g", "-groupsize", "--groupsize":
			n, err = intArg(v)
			if err == nil && n < 0 {
				err = fmt.Errorf("invalid group size")
			}
			group = int(n)
		case "-l", "-len", "--len":
			limit, err = intArg(v)
			if limit < 0 {
				limit = 0
			}
		case "-s", "-seek", "--seek":
			s := strings.TrimPrefix(v, "+")
			if strings.HasPrefix(s, "-") {
				seekFromEnd, s = true, s[1:]
			}
			seek, err = intArg(s)
		case "-o", "-offset", "--offset":
			offset, err = intArg(v)
		case "-n", "-name", "--name":
			name = v
		default:
			return errUnknownFlag
		}
		return err
	})
	if !ok {
		return st
	}
	if len(files) > 2 {
		return c.errf(1, "too many arguments\nUsage:\n       xxd [options] [infile [outfile]]")
	}
	in := "-"
	if len(files) > 0 {
		in = files[0]
	}
	data, err := c.readFile(in)
	if err != nil {
		if isStdin(in) {
			return c.readErr(err)
		}
		return c.errf(2, "%s: %s", in, why(err))
	}
	var outFile string
	if len(files) == 2 && files[1] != "-" {
		outFile = files[1]
	}
	var out strings.Builder
	w := &out
	if reverse {
		b, err := xxdReverse(string(data), plain, cols)
		if err != nil {
			return c.errf(1, "%v", err)
		}
		return c.xxdFinish(outFile, b)
	}
	if seekFromEnd {
		seek = int64(len(data)) - seek
	}
	seek = min(max(seek, 0), int64(len(data)))
	data = data[seek:]
	if limit >= 0 && limit < int64(len(data)) {
		data = data[:limit]
	}
	hexDigits := "0123456789abcdef"
	if upper {
		hexDigits = "0123456789ABCDEF"
	}
	hexByte := func(b byte) string { return string([]byte{hexDigits[b>>4], hexDigits[b&15]}) }
	switch {
	case plain:
		if cols < 0 {
			cols = 30
		}
		if cols == 0 {
			cols = 30
		}
		for i := 0; i < len(data); i += cols {
			for _, b := range data[i:min(i+cols, len(data))] {
				w.WriteString(hexByte(b))
			}
			w.WriteByte('\n')
		}
	case include:
		if cols <= 0 {
			cols = 12
		}
		ident := name
		if ident == "" && !isStdin(in) {
			ident = xxdIdent(in)
		}
		if ident != "" {
			fmt.Fprintf(w, "unsigned char %s[] = {\n", ident)
		}
		for i := 0; i < len(data); i += cols {
			w.WriteString("  ")
			end := min(i+cols, len(data))
			for j := i; j < end; j++ {
				w.WriteString("0x" + hexByte(data[j]))
				if j < len(data)-1 {
					w.WriteByte(',')
					if j < end-1 {
						w.WriteByte(' ')
					}
				}
			}
			w.WriteByte('\n')
		}
		if ident != "" {
			fmt.Fprintf(w, "};\nunsigned int %s_len = %d;\n", ident, len(data))
		}
	default:
		if cols < 0 {
			cols = 16
			if bits {
				cols = 6
			}
		}
		if cols == 0 {
			cols = 16
		}
		if group < 0 {
			group = 2
			if bits {
				group = 1
			}
		}
		unit := 2
		if bits {
			unit = 8
		}
		width := cols * unit
		if group > 0 {
			width += (cols + group - 1) / group
		}
		var prevLine []byte
		starred := false
		for i := 0; i < len(data); i += cols {
			if i&0xffff == 0 && c.stopped() {
				return c.errf(1, "interrupted")
			}
			chunk := data[i:min(i+cols, len(data))]
			if autoskip && isZeros(chunk) && len(chunk) == cols && i+cols < len(data) && prevLine != nil && isZeros(prevLine) {
				if !starred {
					w.WriteString("*\n")
					starred = true
				}
				continue
			}
			starred = false
			prevLine = chunk
			addr := seek + offset + int64(i)
			if decimal {
				fmt.Fprintf(w, "%08d: ", addr)
			} else if upper {
				fmt.Fprintf(w, "%08X: ", addr)
			} else {
				fmt.Fprintf(w, "%08x: ", addr)
			}
			n := 0
			for j, b := range chunk {
				if bits {
					s := strconv.FormatUint(uint64(b), 2)
					w.WriteString(strings.Repeat("0", 8-len(s)) + s)
				} else {
					w.WriteString(hexByte(b))
				}
				n += unit
				if group > 0 && (j+1)%group == 0 {
					w.WriteByte(' ')
					n++
				}
			}
			if group > 0 && len(chunk)%group != 0 {
				w.WriteByte(' ')
				n++
			}
			w.WriteString(strings.Repeat(" ", width-n+1))
			for _, b := range chunk {
				if b >= 32 && b < 127 {
					w.WriteByte(b)
				} else {
					w.WriteByte('.')
				}
			}
			w.WriteByte('\n')
			if w.Len() > 1<<16 && outFile == "" {
				c.out.WriteString(w.String())
				w.Reset()
			}
		}
	}
	return c.xxdFinish(outFile, []byte(out.String()))
}

// xxdFinish writes the result to OUTFILE, or stdout.
func (c *cmd) xxdFinish(outFile string, b []byte) int {
	if outFile != "" {
		if !c.writeFile(outFile, b) {
			return c.done(2)
		}
		return c.done(0)
	}
	c.out.Write(b)
	return c.done(0)
}

func isZeros(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// xxdIdent is the C name -i gives a file: what is not a letter or digit
// becomes '_', and a leading digit gets "__" before it.
func xxdIdent(p string) string {
	b := []byte(p)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9') {
			b[i] = '_'
		}
	}
	s := string(b)
	if s != "" && s[0] >= '0' && s[0] <= '9' {
		s = "__" + s
	}
	return s
}

// xxdReverse turns a dump back into bytes: with plain, every pair of hex
// digits (anything else skipped); otherwise lines "OFFSET: HEX... ASCII",
// each put at its offset.
func xxdReverse(text string, plain bool, cols int) ([]byte, error) {
	var out []byte
	if plain {
		var digits []byte
		for i := 0; i < len(text); i++ {
			if escape.IsHex(text[i]) {
				digits = append(digits, text[i])
			}
		}
		if len(digits)%2 == 1 {
			digits = digits[:len(digits)-1]
		}
		out = make([]byte, len(digits)/2)
		hex.Decode(out, digits)
		return out, nil
	}
	if cols <= 0 {
		cols = 16
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		addrText, rest, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		addr, err := strconv.ParseInt(strings.TrimSpace(addrText), 16, 64)
		if err != nil || addr < 0 || addr > 1<<30 {
			continue
		}
		// The hex part ends at two blanks (before the ASCII column).
		if i := strings.Index(rest, "  "); i >= 0 {
			rest = rest[:i]
		}
		var digits []byte
		for i := 0; i < len(rest); i++ {
			if escape.IsHex(rest[i]) {
				digits = append(digits, rest[i])
			} else if rest[i] != ' ' {
				break
			}
		}
		if len(digits) > 2*cols {
			digits = digits[:2*cols]
		}
		digits = digits[:len(digits)/2*2]
		b := make([]byte, len(digits)/2)
		hex.Decode(b, digits)
		for int64(len(out)) < addr {
			out = append(out, 0)
		}
		out = append(out[:addr], b...)
	}
	return out, sc.Err()
}

// hexdumpCmd dumps bytes: hexdump [-C] [-n LEN] [-s SKIP] [-v] [FILE]...;
// hd is hexdump -C. Without -C, 16-bit little-endian words in hex.
func hexdumpCmd(c *cmd, args []string) int { return c.hexdump(args, false) }

func hdCmd(c *cmd, args []string) int { return c.hexdump(args, true) }

func (c *cmd) hexdump(args []string, canonical bool) int {
	all := false
	limit, skip := int64(-1), int64(0)
	num := func(v string) (int64, error) {
		mult := int64(1)
		switch {
		case strings.HasSuffix(v, "k"):
			mult, v = 1024, v[:len(v)-1]
		case strings.HasSuffix(v, "m"):
			mult, v = 1<<20, v[:len(v)-1]
		case strings.HasSuffix(v, "b"):
			mult, v = 512, v[:len(v)-1]
		}
		n, err := strconv.ParseInt(v, 0, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("invalid number: %s", quote(v))
		}
		return n * mult, nil
	}
	files, st, ok := c.flags(args, "nse", 1, func(f, v string) error {
		var err error
		switch f {
		case "-C", "--canonical":
			canonical = true
		case "-v", "--no-squeezing":
			all = true
		case "-n", "--length":
			limit, err = num(v)
		case "-s", "--skip":
			skip, err = num(v)
		case "-e", "--format":
			return fmt.Errorf("-e format strings are not supported; use -C, od -t or xxd")
		default:
			return errUnknownFlag
		}
		return err
	})
	if !ok {
		return st
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
	var prev []byte
	starred := false
	for off := 0; off < len(data); off += 16 {
		if off&0xffff == 0 && c.stopped() {
			return c.errf(1, "interrupted")
		}
		chunk := data[off:min(off+16, len(data))]
		if !all && prev != nil && len(chunk) == 16 && string(chunk) == string(prev) {
			if !starred {
				c.out.WriteString("*\n")
				starred = true
			}
			continue
		}
		prev, starred = chunk, false
		addr := skip + int64(off)
		if canonical {
			fmt.Fprintf(c.out, "%08x ", addr)
			for i := range 16 {
				if i == 8 {
					c.out.WriteByte(' ')
				}
				if i < len(chunk) {
					fmt.Fprintf(c.out, " %02x", chunk[i])
				} else {
					c.out.WriteString("   ")
				}
			}
			c.out.WriteString("  |")
			for _, b := range chunk {
				if b >= 32 && b < 127 {
					c.out.WriteByte(b)
				} else {
					c.out.WriteByte('.')
				}
			}
			c.out.WriteString("|\n")
			continue
		}
		fmt.Fprintf(c.out, "%07x", addr)
		for i := 0; i < 16; i += 2 {
			switch {
			case i+1 < len(chunk):
				fmt.Fprintf(c.out, " %02x%02x", chunk[i+1], chunk[i])
			case i < len(chunk):
				fmt.Fprintf(c.out, " %04x", chunk[i])
			default:
				c.out.WriteString("     ")
			}
		}
		c.out.WriteByte('\n')
	}
	end := skip + int64(len(data))
	if len(data) > 0 || skip > 0 {
		if canonical {
			fmt.Fprintf(c.out, "%08x\n", end)
		} else {
			fmt.Fprintf(c.out, "%07x\n", end)
		}
	}
	return c.done(0)
}
