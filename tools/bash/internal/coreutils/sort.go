package coreutils

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type sortKey struct {
	start, end int // 1-based fields; end 0 = to end of line
	numeric    bool
	human      bool
	month      bool
	reverse    bool
}

// sortCmd sorts lines: sort [-n -g -h -M -r -u -f -b -s -V -c -C -t SEP
// -k N[,M][n][r] -o FILE] [FILE]...
func sortCmd(c *cmd, args []string) int {
	var numeric, human, month, reverse, unique, fold, blanks, version, check, quietCheck, zero, stable bool
	sep := ""
	output := ""
	var keys []sortKey
	files, st, ok := c.flags(args, "tko", 2, func(f, v string) error {
		switch f {
		case "-n", "--numeric-sort", "-g", "--general-numeric-sort":
			numeric = true
		case "-h", "--human-numeric-sort":
			human = true
		case "-M", "--month-sort":
			month = true
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
			stable = true
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
	compare := func(a, b string, num, hum, mon bool) int {
		if blanks {
			a, b = strings.TrimLeft(a, " \t"), strings.TrimLeft(b, " \t")
		}
		if mon {
			return cmp.Compare(monthOf(a), monthOf(b))
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
			r := compare(keyOf(a, k), keyOf(b, k), numeric || k.numeric, human || k.human, month || k.month)
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
		if r == 0 && !unique && !stable {
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
			case 'M':
				k.month = true
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

// monthOf is a month name's place in the year for sort -M: 1 for "jan"
// (any case, after leading blanks) to 12 for "dec", 0 for anything else.
func monthOf(s string) int {
	s = strings.TrimLeft(s, " \t")
	if len(s) < 3 {
		return 0
	}
	i := strings.Index("janfebmaraprmayjunjulaugsepoctnovdec", strings.ToLower(s[:3]))
	if i < 0 || i%3 != 0 {
		return 0
	}
	return i/3 + 1
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
