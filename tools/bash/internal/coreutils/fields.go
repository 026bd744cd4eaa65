package coreutils

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

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

// pasteCmd merges lines: paste [-s] [-d LIST] FILE...
func pasteCmd(c *cmd, args []string) int {
	serial := false
	delims := "\t"
	files, st, ok := c.flags(args, "d", 1, func(f, v string) error {
		switch f {
		case "-s", "--serial":
			serial = true
		case "-d", "--delimiters":
			delims = pasteDelims(v)
		case "-z":
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
	ds := []rune(delims)
	delim := func(i int) string {
		if len(ds) == 0 || ds[i%len(ds)] == 0 {
			return ""
		}
		return string(ds[i%len(ds)])
	}
	var inputs [][]string
	stdinLines := -1 // stdin is read once; several "-" take turns
	var stdin []string
	for _, f := range files {
		if isStdin(f) {
			if stdinLines < 0 {
				data, err := c.readAll()
				if err != nil {
					return c.readErr(err)
				}
				stdin = splitLines(string(data))
				stdinLines = 0
			}
			inputs = append(inputs, nil) // filled below
			continue
		}
		ls, ok := c.readLines(f)
		if !ok {
			return c.done(1)
		}
		inputs = append(inputs, ls)
	}
	// Several "-" operands read stdin's lines in turn.
	dashes := 0
	for _, f := range files {
		if isStdin(f) {
			dashes++
		}
	}
	if dashes > 0 {
		idx := 0
		for i, f := range files {
			if !isStdin(f) {
				continue
			}
			var mine []string
			for j := idx; j < len(stdin); j += dashes {
				mine = append(mine, stdin[j])
			}
			inputs[i] = mine
			idx++
		}
	}
	if serial {
		for _, ls := range inputs {
			for j, l := range ls {
				if j > 0 {
					c.out.WriteString(delim(j - 1))
				}
				c.out.WriteString(l)
			}
			c.out.WriteByte('\n')
		}
		return c.done(0)
	}
	rows := 0
	for _, ls := range inputs {
		rows = max(rows, len(ls))
	}
	for r := 0; r < rows; r++ {
		for i, ls := range inputs {
			if i > 0 {
				c.out.WriteString(delim(i - 1))
			}
			if r < len(ls) {
				c.out.WriteString(ls[r])
			}
		}
		c.out.WriteByte('\n')
	}
	return c.done(0)
}

// pasteDelims expands paste -d's list: \n, \t, \\ and \0 (no
// delimiter; here the empty string stands for it).
func pasteDelims(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' || i+1 >= len(v) {
			b.WriteByte(v[i])
			continue
		}
		i++
		switch v[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '0':
			b.WriteByte(0)
		default:
			b.WriteByte(v[i])
		}
	}
	return b.String()
}
