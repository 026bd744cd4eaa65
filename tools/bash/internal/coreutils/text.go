package coreutils

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// catCmd copies stdin to stdout: cat [-n] [-]...
func catCmd(c *cmd, args []string) int {
	number := false
	if st, ok := c.stdinFlags(args, "", 2, func(f, _ string) error {
		switch f {
		case "-n", "--number":
			number = true
		case "-u":
		default:
			return errUnknownFlag
		}
		return nil
	}); !ok {
		return st
	}
	if !number {
		return c.copyStdin(0)
	}
	n := 0
	err := c.eachLine(func(l string, noNL bool) bool {
		n++
		fmt.Fprintf(c.out, "%6d\t%s", n, l)
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

// teeCmd copies stdin to stdout and to each FILE: tee [-a] [FILE]...
// A file that cannot be opened is reported and makes the status 1; the
// others are still written.
func teeCmd(c *cmd, args []string) int {
	appendMode := false
	files, st, ok := c.flags(args, "", 1, func(f, _ string) error {
		switch f {
		case "-a", "--append":
			appendMode = true
		case "-i", "--ignore-interrupts", "-p":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	var outs []io.Writer
	for _, f := range files {
		switch f {
		case "-", "/dev/stdout":
			outs = append(outs, c.out)
			continue
		case "/dev/stderr":
			outs = append(outs, c.env.Stderr)
			continue
		case "/dev/null":
			continue
		}
		if c.env.FS == nil {
			c.noFS(1, f)
			c.fail(1)
			continue
		}
		flag := vfs.O_WRONLY | vfs.O_CREATE | vfs.O_TRUNC
		if appendMode {
			flag = vfs.O_WRONLY | vfs.O_CREATE | vfs.O_APPEND
		}
		w, err := c.env.FS.Open(c.ctx, c.abs(f), flag, 0)
		if err != nil {
			c.fileErr(1, f, err)
			c.fail(1)
			continue
		}
		outs = append(outs, &reportingWriter{c: c, name: f, w: w})
	}
	if len(outs) == 0 {
		return c.copyStdin(0)
	}
	out := c.out
	c.out.Flush()
	mw := io.MultiWriter(append([]io.Writer{out}, outs...)...)
	buf := make([]byte, 32*1024)
	for {
		if c.stopped() {
			return c.errf(1, "interrupted")
		}
		n, err := c.in.Read(buf)
		if n > 0 {
			mw.Write(buf[:n])
		}
		if err == io.EOF {
			return c.done(0)
		}
		if err != nil {
			return c.readErr(err)
		}
	}
}

// reportingWriter writes to a file and reports its first failure (a
// limit of the file system), then drops the rest, so that tee goes on
// writing its other outputs.
type reportingWriter struct {
	c      *cmd
	name   string
	w      io.Writer
	failed bool
}

func (r *reportingWriter) Write(p []byte) (int, error) {
	if r.failed {
		return len(p), nil
	}
	if _, err := r.w.Write(p); err != nil {
		r.failed = true
		r.c.out.Flush()
		r.c.fileErr(1, r.name, err)
		r.c.fail(1)
	}
	return len(p), nil
}

// countArg parses the N of head/tail -n N; a leading '+' (from) or '-'
// (all but) is reported.
func countArg(v string) (n int64, sign byte, ok bool) {
	if v != "" && (v[0] == '+' || v[0] == '-') {
		sign = v[0]
		v = v[1:]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, sign, err == nil && n >= 0
}

// headTailArgs parses -n N, -c N, -N and --lines=N for head and tail;
// status is -1 when the arguments are good. headers is -1 for -q, 1 for
// -v, 0 by default.
func headTailArgs(c *cmd, args []string) (files []string, n int64, sign byte, bytes bool, headers int, status int) {
	n = 10
	var fixed []string
	for i, a := range args {
		afterFlag := i > 0 && (args[i-1] == "-n" || args[i-1] == "-c" || args[i-1] == "--lines" || args[i-1] == "--bytes")
		if !afterFlag && len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			fixed = append(fixed, "-n", a[1:])
		} else {
			fixed = append(fixed, a)
		}
	}
	rest, st, ok := c.flags(fixed, "nc", 1, func(f, v string) error {
		switch f {
		case "-n", "--lines", "-c", "--bytes":
			var good bool
			n, sign, good = countArg(v)
			if !good {
				return fmt.Errorf("invalid number of lines: '%s'", v)
			}
			bytes = f == "-c" || f == "--bytes"
		case "-q", "--quiet", "--silent":
			headers = -1
		case "-v", "--verbose":
			headers = 1
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return nil, 0, 0, false, 0, st
	}
	return rest, n, sign, bytes, headers, -1
}

// eachHeaded runs fn on each input of head or tail, with "==> f <=="
// headers when there are several (or -v).
func (c *cmd) eachHeaded(files []string, headers int, fn func()) {
	show := headers > 0 || (headers == 0 && len(files) > 1)
	first := true
	c.eachInput(files, 1, func(name string) bool {
		if show {
			if !first {
				c.out.WriteByte('\n')
			}
			if name == "-" {
				name = "standard input"
			}
			c.out.WriteString("==> " + name + " <==\n")
		}
		first = false
		fn()
		return !c.stopped()
	})
}

// headCmd prints the first lines (or bytes) of stdin: head [-n N|-N|-c N].
// head -n -N prints all but the last N lines.
func headCmd(c *cmd, args []string) int {
	files, n, sign, bytes, headers, st := headTailArgs(c, args)
	if st >= 0 {
		return st
	}
	status := -1
	c.eachHeaded(files, headers, func() {
		if st := c.head(n, sign, bytes); st != 0 {
			status = st
		}
	})
	if status > 0 {
		return status
	}
	return c.done(0)
}

// head prints the first n lines or bytes of the input; it returns 0 or
// the status of a failed read (reported).
func (c *cmd) head(n int64, sign byte, bytes bool) int {
	if bytes {
		if sign != '-' {
			if _, err := io.CopyN(c.out, c.in, n); err != nil && err != io.EOF {
				return c.readErr(err)
			}
			return 0
		}
		data, err := c.readAll()
		if err != nil {
			return c.readErr(err)
		}
		c.out.Write(data[:max(0, int64(len(data))-n)])
		return 0
	}
	if sign == '-' {
		lines, err := c.lines()
		if err != nil {
			return c.readErr(err)
		}
		c.writeLines(lines[:max(0, int64(len(lines))-n)])
		return 0
	}
	var i int64
	if n == 0 {
		return 0
	}
	err := c.eachLine(func(l string, noNL bool) bool {
		c.out.WriteString(l)
		if !noNL {
			c.out.WriteByte('\n')
		}
		i++
		return i < n
	})
	if err != nil {
		return c.readErr(err)
	}
	return 0
}

// tailCmd prints the last lines (or bytes) of stdin: tail [-n N|-N|-n +N|-c N].
func tailCmd(c *cmd, args []string) int {
	files, n, sign, bytes, headers, st := headTailArgs(c, args)
	if st >= 0 {
		return st
	}
	status := -1
	c.eachHeaded(files, headers, func() {
		if st := c.tail(n, sign, bytes); st != 0 {
			status = st
		}
	})
	if status > 0 {
		return status
	}
	return c.done(0)
}

// tail prints the last n lines or bytes of the input (from line n with
// sign '+'); it returns 0 or the status of a failed read (reported).
func (c *cmd) tail(n int64, sign byte, bytes bool) int {
	data, err := c.readAll()
	if err != nil {
		return c.readErr(err)
	}
	if bytes {
		if sign == '+' {
			c.out.Write(data[min(max(n-1, 0), int64(len(data))):])
		} else {
			c.out.Write(data[max(0, int64(len(data))-n):])
		}
		return 0
	}
	s := string(data)
	noNL := s != "" && !strings.HasSuffix(s, "\n")
	lines := splitLines(s)
	var out []string
	if sign == '+' {
		out = lines[min(max(n-1, 0), int64(len(lines))):]
	} else {
		out = lines[max(0, int64(len(lines))-n):]
	}
	for i, l := range out {
		c.out.WriteString(l)
		if i < len(out)-1 || !noNL {
			c.out.WriteByte('\n')
		}
	}
	return 0
}

type sortKey struct {
	start, end int // 1-based fields; end 0 = to end of line
	numeric    bool
	human      bool
	reverse    bool
}

// sortCmd sorts lines: sort [-n -g -h -r -u -f -b -s -V -c -C -t SEP
// -k N[,M][n][r] -o FILE] [FILE]...
func sortCmd(c *cmd, args []string) int {
	var numeric, human, reverse, unique, fold, blanks, version, check, quietCheck, zero bool
	sep := ""
	output := ""
	var keys []sortKey
	files, st, ok := c.flags(args, "tko", 2, func(f, v string) error {
		switch f {
		case "-n", "--numeric-sort", "-g", "--general-numeric-sort":
			numeric = true
		case "-h", "--human-numeric-sort":
			human = true
		case "-c", "--check":
			check = true
		case "-z", "--zero-terminated":
			zero = true
		case "-C":
			check, quietCheck = true, true
		case "-o", "--output":
			output = v
		case "-r", "--reverse":
			reverse = true
		case "-u", "--unique":
			unique = true
		case "-f", "--ignore-case":
			fold = true
		case "-b", "--ignore-leading-blanks":
			blanks = true
		case "-V", "--version-sort":
			version = true
		case "-s", "--stable":
		case "-t", "--field-separator":
			if utf8.RuneCountInString(v) != 1 {
				return fmt.Errorf("multi-character tab '%s'", v)
			}
			sep = v
		case "-k", "--key":
			k, err := parseSortKey(v)
			if err != nil {
				return fmt.Errorf("invalid key '%s': %v", v, err)
			}
			keys = append(keys, k)
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if st, ok := c.inputs(files, 2); !ok {
		return st
	}
	var lines []string
	term := "\n"
	if zero {
		data, err := c.readAll()
		if err != nil {
			return c.readErr(err)
		}
		term = "\x00"
		if len(data) > 0 {
			lines = strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
		}
	} else {
		var err error
		if lines, err = c.lines(); err != nil {
			return c.readErr(err)
		}
	}
	keyOf := func(l string, k sortKey) string {
		if k.start == 0 {
			return l
		}
		var fields []string
		if sep == "" {
			fields = splitBlankFields(l)
		} else {
			fields = strings.Split(l, sep)
		}
		if k.start > len(fields) {
			return ""
		}
		end := len(fields)
		if k.end > 0 && k.end < end {
			end = k.end
		}
		if end < k.start {
			return ""
		}
		j := sep
		if j == "" {
			j = " "
		}
		return strings.Join(fields[k.start-1:end], j)
	}
	compare := func(a, b string, num, hum bool) int {
		if blanks {
			a, b = strings.TrimLeft(a, " \t"), strings.TrimLeft(b, " \t")
		}
		if hum {
			return compareHuman(a, b)
		}
		if num {
			return cmp.Compare(leadingNumber(a), leadingNumber(b))
		}
		if version {
			return compareVersion(a, b)
		}
		if fold {
			return strings.Compare(strings.ToLower(a), strings.ToLower(b))
		}
		return strings.Compare(a, b)
	}
	if len(keys) == 0 {
		keys = []sortKey{{}}
	}
	full := func(a, b string) int {
		for _, k := range keys {
			r := compare(keyOf(a, k), keyOf(b, k), numeric || k.numeric, human || k.human)
			if k.reverse {
				r = -r
			}
			if r != 0 {
				return r
			}
		}
		return 0
	}
	order := func(a, b string) int {
		r := full(a, b)
		if r == 0 && !unique {
			r = strings.Compare(a, b) // last-resort comparison, as GNU sort
		}
		if reverse {
			r = -r
		}
		return r
	}
	if check {
		for i := 1; i < len(lines); i++ {
			r := order(lines[i-1], lines[i])
			if r > 0 || (unique && r == 0) {
				if !quietCheck {
					name := "-"
					if len(files) == 1 {
						name = files[0]
					}
					c.errf(1, "%s:%d: disorder: %s", name, i+1, lines[i])
				}
				return c.done(1)
			}
		}
		return c.done(0)
	}
	slices.SortStableFunc(lines, order)
	if unique {
		lines = slices.CompactFunc(lines, func(a, b string) bool { return full(a, b) == 0 })
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString(term)
	}
	if output != "" && output != "-" {
		if !c.writeFile(output, []byte(b.String())) {
			return c.done(2)
		}
		return c.done(0)
	}
	c.out.WriteString(b.String())
	return c.done(0)
}

func parseSortKey(v string) (sortKey, error) {
	var k sortKey
	startS, endS, hasEnd := strings.Cut(v, ",")
	parse := func(s string) (int, error) {
		s = strings.TrimRightFunc(s, func(r rune) bool {
			switch r {
			case 'n', 'g':
				k.numeric = true
			case 'h':
				k.human = true
			case 'r':
				k.reverse = true
			case 'b', 'f', 'V':
			default:
				return false
			}
			return true
		})
		if i := strings.IndexByte(s, '.'); i >= 0 {
			s = s[:i] // character offsets are ignored
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("field number must be a positive integer")
		}
		return n, nil
	}
	var err error
	if k.start, err = parse(startS); err != nil {
		return k, err
	}
	if hasEnd {
		if k.end, err = parse(endS); err != nil {
			return k, err
		}
	}
	return k, nil
}

func splitBlankFields(l string) []string {
	// Without -t, a field is a run of blanks followed by non-blanks; the
	// leading blanks are dropped here, like sort -b on each key.
	return strings.Fields(l)
}

// leadingNumber parses the numeric prefix of s (sort -n); no number is 0.
func leadingNumber(s string) float64 {
	s = strings.TrimSpace(s)
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.' || (end == 0 && (s[end] == '-' || s[end] == '+'))) {
		end++
	}
	for end > 0 {
		if f, err := strconv.ParseFloat(s[:end], 64); err == nil {
			return f
		}
		end--
	}
	return 0
}

// compareHuman orders numbers with SI suffixes as sort -h does: by the
// suffix first (none < K < M < G < T < P < E < Z < Y), then by the
// number.
func compareHuman(a, b string) int {
	ra, na := humanKey(a)
	rb, nb := humanKey(b)
	if ra != rb {
		return cmp.Compare(ra, rb)
	}
	return cmp.Compare(na, nb)
}

// humanKey is the suffix rank and number of a human-readable size; a
// negative number ranks below every suffix.
func humanKey(s string) (int, float64) {
	s = strings.TrimSpace(s)
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.' || (end == 0 && s[end] == '-')) {
		end++
	}
	n, _ := strconv.ParseFloat(s[:end], 64)
	rank := 0
	if end < len(s) {
		rank = strings.IndexByte("KMGTPEZY", s[end]&^0x20) + 1
		if s[end] == 'k' {
			rank = 1
		}
	}
	if n < 0 {
		return -rank, n
	}
	if n == 0 {
		rank = 0
	}
	return rank, n
}

// compareVersion orders strings with embedded numbers naturally (sort -V).
func compareVersion(a, b string) int {
	for a != "" && b != "" {
		da, db := unicode.IsDigit(rune(a[0])), unicode.IsDigit(rune(b[0]))
		if da && db {
			i, j := 0, 0
			for i < len(a) && a[i] >= '0' && a[i] <= '9' {
				i++
			}
			for j < len(b) && b[j] >= '0' && b[j] <= '9' {
				j++
			}
			na, _ := strconv.ParseFloat(a[:i], 64)
			nb, _ := strconv.ParseFloat(b[:j], 64)
			if r := cmp.Compare(na, nb); r != 0 {
				return r
			}
			a, b = a[i:], b[j:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// uniqCmd drops adjacent duplicate lines: uniq [-c -d -u -i].
func uniqCmd(c *cmd, args []string) int {
	var count, dups, uniques, icase bool
	skipFields, skipChars := 0, 0
	files, st, ok := c.flags(args, "fs", 1, func(f, v string) error {
		switch f {
		case "-c", "--count":
			count = true
		case "-d", "--repeated":
			dups = true
		case "-u", "--unique":
			uniques = true
		case "-i", "--ignore-case":
			icase = true
		case "-f", "--skip-fields":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("%s: invalid number of fields to skip", v)
			}
			skipFields = n
		case "-s", "--skip-chars":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("%s: invalid number of bytes to skip", v)
			}
			skipChars = n
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(files) > 2 {
		return c.errf(1, "extra operand '%s'", files[2])
	}
	if len(files) > 0 {
		if st, ok := c.inputs(files[:1], 1); !ok {
			return st
		}
	}
	var output *strings.Builder
	if len(files) == 2 && files[1] != "-" {
		output = &strings.Builder{}
	}
	var prev string
	n := 0
	flush := func() {
		if n == 0 || (dups && n < 2) || (uniques && n > 1) {
			return
		}
		var w io.Writer = c.out
		if output != nil {
			w = output
		}
		if count {
			fmt.Fprintf(w, "%7d %s\n", n, prev)
		} else {
			io.WriteString(w, prev+"\n")
		}
	}
	key := func(s string) string {
		for range skipFields {
			s = strings.TrimLeft(s, " \t")
			i := strings.IndexAny(s, " \t")
			if i < 0 {
				return ""
			}
			s = s[i:]
		}
		if skipChars >= len(s) {
			return ""
		}
		return s[skipChars:]
	}
	same := func(a, b string) bool {
		a, b = key(a), key(b)
		if icase {
			return strings.EqualFold(a, b)
		}
		return a == b
	}
	err := c.eachLine(func(l string, _ bool) bool {
		if n > 0 && same(l, prev) {
			n++
			return true
		}
		flush()
		prev, n = l, 1
		return true
	})
	if err != nil {
		return c.readErr(err)
	}
	flush()
	if output != nil && !c.writeFile(files[1], []byte(output.String())) {
		return c.done(1)
	}
	return c.done(0)
}

// wcCmd counts lines, words, bytes and characters: wc [-l -w -c -m -L]
// [FILE]..., with a total line for several files. Counts are aligned as
// GNU wc aligns them: to the width of the files' total size (7 when stdin
// is among the inputs), unpadded for one count of one input.
func wcCmd(c *cmd, args []string) int {
	var lines, words, bytes, chars, longest bool
	files, st, ok := c.flags(args, "", 1, func(f, _ string) error {
		switch f {
		case "-l", "--lines":
			lines = true
		case "-w", "--words":
			words = true
		case "-c", "--bytes":
			bytes = true
		case "-m", "--chars":
			chars = true
		case "-L", "--max-line-length":
			longest = true
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if !lines && !words && !bytes && !chars && !longest {
		lines, words, bytes = true, true, true
	}
	type counts struct {
		name                string
		nl, nw, nc, nb, max int64
	}
	var all []counts
	var total counts
	stdin := len(files) == 0
	status := -1
	buf := make([]byte, 32*1024) // shared by every input
	c.eachInput(files, 1, func(name string) bool {
		if name == "-" {
			stdin = true
		}
		var k counts
		k.name = name
		if len(files) == 0 {
			k.name = ""
		}
		inWord := false
		var lineLen int64
		for {
			if c.stopped() {
				status = c.errf(1, "interrupted")
				return false
			}
			n, err := c.in.Read(buf)
			chunk := buf[:n]
			k.nb += int64(n)
			k.nc += int64(utf8.RuneCount(chunk))
			for _, b := range chunk {
				if b == '\n' {
					k.nl++
					k.max = max(k.max, lineLen)
					lineLen = 0
				} else if b == '\t' {
					lineLen += 8 - lineLen%8
				} else if utf8.RuneStart(b) {
					lineLen++
				}
				space := b == ' ' || b == '\n' || b == '\t' || b == '\r' || b == '\v' || b == '\f'
				if !space && !inWord {
					k.nw++
				}
				inWord = !space
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				status = c.readErr(err)
				return false
			}
		}
		k.max = max(k.max, lineLen)
		all = append(all, k)
		total.nl += k.nl
		total.nw += k.nw
		total.nc += k.nc
		total.nb += k.nb
		total.max = max(total.max, k.max)
		return true
	})
	if status > 0 {
		return status
	}
	selected := 0
	for _, on := range []bool{lines, words, chars, bytes, longest} {
		if on {
			selected++
		}
	}
	width := 1
	if selected > 1 || len(files) > 1 {
		size := total.nb
		for ; size >= 10; size /= 10 {
			width++
		}
		if stdin {
			width = max(width, 7)
		}
	}
	print := func(k counts) {
		var out []string
		add := func(on bool, v int64) {
			if on {
				out = append(out, fmt.Sprintf("%*d", width, v))
			}
		}
		add(lines, k.nl)
		add(words, k.nw)
		add(chars, k.nc)
		add(bytes, k.nb)
		add(longest, k.max)
		c.out.WriteString(strings.Join(out, " "))
		if k.name != "" {
			c.out.WriteString(" " + k.name)
		}
		c.out.WriteByte('\n')
	}
	for _, k := range all {
		print(k)
	}
	if len(files) > 1 {
		total.name = "total"
		print(total)
	}
	return c.done(0)
}

type cutRange struct{ lo, hi int } // 1-based, hi 0 = open

func parseCutList(s string) ([]cutRange, error) {
	var rs []cutRange
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		var r cutRange
		var err error
		if lo == "" {
			r.lo = 1
		} else if r.lo, err = strconv.Atoi(lo); err != nil || r.lo < 1 {
			return nil, fmt.Errorf("invalid field value '%s'", part)
		}
		switch {
		case !isRange:
			r.hi = r.lo
		case hi == "":
			r.hi = 0
		default:
			if r.hi, err = strconv.Atoi(hi); err != nil || r.hi < r.lo {
				return nil, fmt.Errorf("invalid range '%s'", part)
			}
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func inCutList(rs []cutRange, i int) bool {
	for _, r := range rs {
		if i >= r.lo && (r.hi == 0 || i <= r.hi) {
			return true
		}
	}
	return false
}

// cutCmd selects fields or characters of each line: cut -f LIST [-d SEP]
// [-s] | -c LIST | -b LIST.
func cutCmd(c *cmd, args []string) int {
	delim := "\t"
	var list string
	mode := byte(0)
	only, complement := false, false
	outDelim := ""
	rest, st, ok := c.flags(args, "dfcb", 1, func(f, v string) error {
		switch f {
		case "-d", "--delimiter":
			if utf8.RuneCountInString(v) != 1 {
				return errors.New("the delimiter must be a single character")
			}
			delim = v
		case "-f", "--fields":
			list, mode = v, 'f'
		case "-c", "--characters":
			list, mode = v, 'c'
		case "-b", "--bytes":
			list, mode = v, 'b'
		case "-s", "--only-delimited":
			only = true
		case "--complement":
			complement = true
		case "--output-delimiter":
			outDelim = v
		case "-n":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if mode == 0 {
		return c.errf(1, "you must specify a list of bytes, characters, or fields")
	}
	if st, ok := c.operands(rest); !ok {
		return st
	}
	rs, err := parseCutList(list)
	if err != nil {
		return c.errf(1, "%v", err)
	}
	in := func(i int) bool { return inCutList(rs, i) != complement }
	joiner := delim
	if outDelim != "" {
		joiner = outDelim
	}
	rerr := c.eachLine(func(l string, _ bool) bool {
		switch mode {
		case 'f':
			if !strings.Contains(l, delim) {
				if !only {
					c.out.WriteString(l)
					c.out.WriteByte('\n')
				}
				return true
			}
			var sel []string
			for i, f := range strings.Split(l, delim) {
				if in(i + 1) {
					sel = append(sel, f)
				}
			}
			c.out.WriteString(strings.Join(sel, joiner))
		case 'c':
			i := 0
			for _, r := range l {
				i++
				if in(i) {
					c.out.WriteRune(r)
				}
			}
		case 'b':
			for i := 0; i < len(l); i++ {
				if in(i + 1) {
					c.out.WriteByte(l[i])
				}
			}
		}
		c.out.WriteByte('\n')
		return true
	})
	if rerr != nil {
		return c.readErr(rerr)
	}
	return c.done(0)
}

// expandTrSet expands a tr set: ranges a-z, classes [:lower:] etc. and
// escapes \n \t \\ \NNN.
func expandTrSet(s string) ([]rune, error) {
	var out []rune
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if r == '[' && i+1 < len(rs) && rs[i+1] == ':' {
			end := strings.Index(string(rs[i:]), ":]")
			if end > 0 {
				class := string(rs[i+2 : i+end])
				f, ok := trClasses[class]
				if !ok {
					return nil, fmt.Errorf("invalid character class '%s'", class)
				}
				for c := rune(0); c < 128; c++ {
					if f(c) {
						out = append(out, c)
					}
				}
				i += end + 1
				continue
			}
		}
		if r == '\\' && i+1 < len(rs) {
			i++
			switch rs[i] {
			case 'n':
				r = '\n'
			case 't':
				r = '\t'
			case 'r':
				r = '\r'
			case '\\':
				r = '\\'
			case '0', '1', '2', '3', '4', '5', '6', '7':
				v, k := 0, i
				for ; k < len(rs) && k < i+3 && rs[k] >= '0' && rs[k] <= '7'; k++ {
					v = v*8 + int(rs[k]-'0')
				}
				r = rune(v)
				i = k - 1
			default:
				r = rs[i]
			}
		}
		if i+2 < len(rs) && rs[i+1] == '-' {
			hi := rs[i+2]
			if hi < r {
				return nil, fmt.Errorf("range-endpoints of '%c-%c' are in reverse collating sequence order", r, hi)
			}
			if hi-r > 1<<16 {
				return nil, fmt.Errorf("range '%c-%c' is too large", r, hi)
			}
			for c := r; c <= hi; c++ {
				out = append(out, c)
			}
			i += 2
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

var trClasses = map[string]func(rune) bool{
	"lower":  unicode.IsLower,
	"upper":  unicode.IsUpper,
	"digit":  unicode.IsDigit,
	"alpha":  unicode.IsLetter,
	"alnum":  func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) },
	"space":  unicode.IsSpace,
	"blank":  func(r rune) bool { return r == ' ' || r == '\t' },
	"punct":  func(r rune) bool { return r < 128 && unicode.IsPunct(r) || r < 128 && unicode.IsSymbol(r) },
	"xdigit": func(r rune) bool { return r < 128 && isHex(byte(r)) },
	"cntrl":  unicode.IsControl,
	"print":  func(r rune) bool { return r >= 32 && r < 127 },
	"graph":  func(r rune) bool { return r > 32 && r < 127 },
}

// trCmd translates, deletes or squeezes characters of stdin: tr [-d] [-s]
// [-c] SET1 [SET2].
func trCmd(c *cmd, args []string) int {
	var del, squeeze, complement bool
	rest, st, ok := c.flags(args, "", 1, func(f, _ string) error {
		switch f {
		case "-d", "--delete":
			del = true
		case "-s", "--squeeze-repeats":
			squeeze = true
		case "-c", "-C", "--complement":
			complement = true
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(rest) == 0 || len(rest) > 2 || (!del && !squeeze && len(rest) != 2) {
		return c.errf(1, "usage: tr [-cds] SET1 [SET2] (input is read from stdin)")
	}
	set1, err := expandTrSet(rest[0])
	if err != nil {
		return c.errf(1, "%v", err)
	}
	var set2 []rune
	if len(rest) == 2 {
		if set2, err = expandTrSet(rest[1]); err != nil {
			return c.errf(1, "%v", err)
		}
	}
	in1 := make(map[rune]int, len(set1))
	for i, r := range set1 {
		if _, dup := in1[r]; !dup {
			in1[r] = i
		}
	}
	member := func(r rune) bool {
		_, ok := in1[r]
		return ok != complement
	}
	translate := func(r rune) rune {
		if del || len(set2) == 0 {
			return r
		}
		if complement {
			if member(r) {
				return set2[len(set2)-1]
			}
			return r
		}
		if i, ok := in1[r]; ok {
			if i >= len(set2) {
				return set2[len(set2)-1]
			}
			return set2[i]
		}
		return r
	}
	squeezeSet := set1
	if len(set2) > 0 && !del {
		squeezeSet = set2
	} else if del {
		squeezeSet = set2
	}
	inSqueeze := make(map[rune]bool, len(squeezeSet))
	for _, r := range squeezeSet {
		inSqueeze[r] = true
	}
	squeezeAll := squeeze && !del && len(set2) == 0
	data, err := c.readAll()
	if err != nil {
		return c.readErr(err)
	}
	var last rune = -1
	for _, r := range string(data) {
		if del && member(r) {
			continue
		}
		r = translate(r)
		if squeeze && r == last && ((squeezeAll && member(r)) || (!squeezeAll && inSqueeze[r])) {
			continue
		}
		c.out.WriteRune(r)
		last = r
	}
	return c.done(0)
}

// seqCmd prints a sequence of numbers: seq [-s SEP] [-w] [FIRST [INCR]] LAST.
func seqCmd(c *cmd, args []string) int {
	sep := "\n"
	width := false
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
		default:
			nums = append(nums, a)
		}
	}
	if len(nums) < 1 || len(nums) > 3 {
		return c.errf(1, "usage: seq [-s SEP] [-w] [FIRST [INCREMENT]] LAST")
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

// basenameCmd strips directories (and SUFFIX) from NAME: basename NAME
// [SUFFIX] | basename -a [-s SUFFIX] NAME...
func basenameCmd(c *cmd, args []string) int {
	multi := false
	suffix := ""
	names, st, ok := c.flags(args, "s", 1, func(f, v string) error {
		switch f {
		case "-a", "--multiple":
			multi = true
		case "-s", "--suffix":
			suffix, multi = v, true
		case "-z", "--zero":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(names) == 0 {
		return c.errf(1, "missing operand")
	}
	if !multi {
		if len(names) > 2 {
			return c.errf(1, "extra operand '%s'", names[2])
		}
		if len(names) == 2 {
			suffix = names[1]
		}
		names = names[:1]
	}
	for _, n := range names {
		b := baseName(n)
		if suffix != "" && b != suffix {
			b = strings.TrimSuffix(b, suffix)
		}
		c.out.WriteString(b)
		c.out.WriteByte('\n')
	}
	return c.done(0)
}

func baseName(n string) string {
	if n == "" {
		return ""
	}
	t := strings.TrimRight(n, "/")
	if t == "" {
		return "/"
	}
	return path.Base(t)
}

// dirnameCmd strips the last component of each NAME.
func dirnameCmd(c *cmd, args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return c.errf(1, "missing operand")
	}
	for _, n := range args {
		c.out.WriteString(dirName(n))
		c.out.WriteByte('\n')
	}
	return c.done(0)
}

func dirName(n string) string {
	t := strings.TrimRight(n, "/")
	if t == "" {
		if strings.HasPrefix(n, "/") {
			return "/"
		}
		return "."
	}
	i := strings.LastIndexByte(t, '/')
	if i < 0 {
		return "."
	}
	d := strings.TrimRight(t[:i], "/")
	if d == "" {
		return "/"
	}
	return d
}

// base64Cmd encodes or decodes stdin: base64 [-d] [-i] [-w COLS].
func base64Cmd(c *cmd, args []string) int {
	decode, ignore := false, false
	wrap := 76
	if st, ok := c.stdinFlags(args, "w", 1, func(f, v string) error {
		switch f {
		case "-d", "-D", "--decode":
			decode = true
		case "-i", "--ignore-garbage":
			ignore = true
		case "-w", "--wrap":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("invalid wrap size: '%s'", v)
			}
			wrap = n
		default:
			return errUnknownFlag
		}
		return nil
	}); !ok {
		return st
	}
	data, err := c.readAll()
	if err != nil {
		return c.readErr(err)
	}
	if decode {
		clean := make([]byte, 0, len(data))
		for _, b := range data {
			switch {
			case b >= 'A' && b <= 'Z', b >= 'a' && b <= 'z', b >= '0' && b <= '9', b == '+', b == '/', b == '=':
				clean = append(clean, b)
			case b == '\n' || b == '\r' || b == ' ' || b == '\t' || ignore:
			default:
				return c.errf(1, "invalid input")
			}
		}
		out, err := base64.StdEncoding.DecodeString(string(clean))
		if err != nil {
			out, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(string(clean), "="))
			if err != nil {
				return c.errf(1, "invalid input")
			}
		}
		c.out.Write(out)
		return c.done(0)
	}
	enc := base64.StdEncoding.EncodeToString(data)
	if wrap == 0 {
		c.out.WriteString(enc)
		if enc != "" {
			c.out.WriteByte('\n')
		}
		return c.done(0)
	}
	for len(enc) > 0 {
		n := min(wrap, len(enc))
		c.out.WriteString(enc[:n])
		c.out.WriteByte('\n')
		enc = enc[n:]
	}
	return c.done(0)
}
