package coreutils

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// truncateCmd sets the size of files: truncate -s [+-<>/%]SIZE [-c] [-r
// REF] FILE...; SIZE takes K, M, G... (powers of 1024) or KB, MB...
// (powers of 1000). A file grows with NUL bytes.
func truncateCmd(c *cmd, args []string) int {
	if !c.needFS() {
		return 1
	}
	noCreate := false
	sizeArg, ref := "", ""
	args = joinLongValues(args, "--size", "--reference")
	files, st, ok := c.flags(args, "sr", 1, func(f, v string) error {
		switch f {
		case "-s", "--size":
			sizeArg = v
		case "-r", "--reference":
			ref = v
		case "-c", "--no-create":
			noCreate = true
		case "-o", "--io-blocks":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if sizeArg == "" && ref == "" {
		return c.errf(1, "you must specify either '--size' or '--reference'\nTry 'truncate --help' for more information.")
	}
	if len(files) == 0 {
		return c.errf(1, "missing file operand\nTry 'truncate --help' for more information.")
	}
	var op byte
	var size int64
	if sizeArg != "" {
		s := sizeArg
		if s != "" && strings.IndexByte("+-<>/%", s[0]) >= 0 {
			op, s = s[0], s[1:]
		}
		n, err := parseSize(s)
		if err != nil || n < 0 {
			return c.errf(1, "Invalid number: %s", quote(sizeArg))
		}
		if (op == '/' || op == '%') && n == 0 {
			return c.errf(1, "division by zero")
		}
		size = n
	}
	if ref != "" {
		info, err := c.env.FS.Stat(c.ctx, c.abs(ref))
		if err != nil {
			return c.errf(1, "cannot stat %s: %s", quote(ref), why(err))
		}
		if sizeArg == "" {
			op, size = 0, info.Size()
		} else if op == 0 {
			return c.errf(1, "you must specify a relative '--size' with '--reference'")
		}
	}
	status := 0
	for _, f := range files {
		abs := c.abs(f)
		data, err := c.env.FS.ReadFile(c.ctx, abs)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				c.errf(1, "cannot open %s for writing: %s", quote(f), why(err))
				status = 1
				continue
			}
			if noCreate {
				continue
			}
			data = nil
		}
		cur := int64(len(data))
		want := size
		switch op {
		case '+':
			want = cur + size
		case '-':
			want = max(cur-size, 0)
		case '<':
			want = min(cur, size)
		case '>':
			want = max(cur, size)
		case '/':
			want = cur / size * size
		case '%':
			want = (cur + size - 1) / size * size
		}
		if lim := c.env.FS.Limits().MaxFileBytes; lim > 0 && want > lim {
			c.errf(1, "failed to truncate %s at %d bytes: File too large", quote(f), want)
			status = 1
			continue
		}
		if want <= cur {
			data = data[:want]
		} else {
			data = append(data, make([]byte, want-cur)...)
		}
		if !c.writeFile(f, data) {
			status = 1
		}
	}
	return c.done(status)
}

// parseSize reads a size: digits and an optional suffix, K M G T P E (or
// KiB...) for powers of 1024, KB MB... for powers of 1000, b for 512.
func parseSize(s string) (int64, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, errors.New("no digits")
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, err
	}
	suf := s[i:]
	mult := int64(1)
	if suf != "" {
		p := strings.IndexByte("KMGTPE", strings.ToUpper(suf[:1])[0])
		switch {
		case suf == "b":
			mult = 512
		case suf == "c":
			mult = 1
		case suf == "w":
			mult = 2
		case p >= 0 && (len(suf) == 1 || suf[1:] == "iB"):
			mult = 1 << (10 * (p + 1))
		case p >= 0 && suf[1:] == "B":
			mult = 1
			for range p + 1 {
				mult *= 1000
			}
		default:
			return 0, errors.New("bad suffix")
		}
	}
	if n > (1<<62)/mult {
		return 0, errors.New("too large")
	}
	return n * mult, nil
}

// stringsCmd prints the runs of printable characters: strings [-n MIN]
// [-t d|o|x] [-a] [FILE]...
func stringsCmd(c *cmd, args []string) int {
	minLen := 4
	radix := byte(0)
	var fixed []string
	for _, a := range args {
		// -NUM is -n NUM.
		if len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			fixed = append(fixed, "-n", a[1:])
			continue
		}
		fixed = append(fixed, a)
	}
	fixed = joinLongValues(fixed, "--bytes", "--radix")
	files, st, ok := c.flags(fixed, "nt", 1, func(f, v string) error {
		switch f {
		case "-n", "--bytes":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("invalid minimum string length %s", v)
			}
			minLen = n
		case "-t", "--radix":
			if v != "d" && v != "o" && v != "x" {
				return fmt.Errorf("invalid radix: %s", v)
			}
			radix = v[0]
		case "-o":
			radix = 'o'
		case "-a", "--all", "-d", "--data":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for _, f := range files {
		data, err := c.readFile(f)
		if err != nil {
			if isStdin(f) {
				return c.readErr(err)
			}
			c.errf(1, "'%s': %s", f, why(err))
			status = 1
			continue
		}
		start := -1
		flush := func(end int) {
			if start >= 0 && end-start >= minLen {
				switch radix {
				case 'd':
					fmt.Fprintf(c.out, "%7d ", start)
				case 'o':
					fmt.Fprintf(c.out, "%7o ", start)
				case 'x':
					fmt.Fprintf(c.out, "%7x ", start)
				}
				c.out.Write(data[start:end])
				c.out.WriteByte('\n')
			}
			start = -1
		}
		for i, b := range data {
			if b >= 32 && b < 127 || b == '\t' {
				if start < 0 {
					start = i
				}
				continue
			}
			flush(i)
		}
		flush(len(data))
	}
	return c.done(status)
}

// unexpandCmd turns blanks into tabs: unexpand [-a] [--first-only] [-t
// N|LIST] [FILE]...; without -a only leading blanks.
func unexpandCmd(c *cmd, args []string) int {
	all, firstOnly := false, false
	var stops []int
	args = joinLongValues(args, "--tabs")
	files, st, ok := c.flags(args, "t", 1, func(f, v string) error {
		switch f {
		case "-a", "--all":
			all = true
		case "--first-only":
			firstOnly = true
		case "-t", "--tabs":
			all = true
			for p := range strings.FieldsFuncSeq(v, func(r rune) bool { return r == ',' || r == ' ' }) {
				n, err := strconv.Atoi(p)
				if err != nil || n < 1 || len(stops) > 0 && n <= stops[len(stops)-1] {
					return fmt.Errorf("tab size contains invalid character(s): %s", quote(v))
				}
				stops = append(stops, n)
			}
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if firstOnly {
		all = false
	}
	if len(stops) == 0 {
		stops = []int{8}
	}
	nextStop := func(col int) int {
		if len(stops) == 1 {
			return (col/stops[0] + 1) * stops[0]
		}
		for _, s := range stops {
			if s > col {
				return s
			}
		}
		return -1
	}
	if st, ok := c.operands(files); !ok {
		return st
	}
	err := c.eachLine(func(l string, noNL bool) bool {
		var b strings.Builder
		col := 0
		pending := 0 // blanks not yet written, ending at col
		leading := true
		for i := 0; i < len(l); i++ {
			ch := l[i]
			convert := all || leading
			switch {
			case ch == ' ' && convert:
				pending++
				col++
				if s := nextStop(col - 1); s == col {
					if pending > 1 {
						b.WriteByte('\t')
					} else {
						b.WriteByte(' ')
					}
					pending = 0
				}
			case ch == '\t' && convert:
				b.WriteByte('\t')
				pending = 0
				if s := nextStop(col); s > 0 {
					col = s
				} else {
					col++
				}
			default:
				b.WriteString(strings.Repeat(" ", pending))
				pending = 0
				if ch != ' ' && ch != '\t' {
					leading = false
				}
				if ch == '\b' && col > 0 {
					col--
				} else {
					col++
				}
				b.WriteByte(ch)
			}
		}
		b.WriteString(strings.Repeat(" ", pending))
		c.out.WriteString(b.String())
		if !noNL {
			c.out.WriteByte('\n')
		}
		return true
	})
	if err != nil {
		return c.readErr(err)
	}
	return c.done(0)
}
