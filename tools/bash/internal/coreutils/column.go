package coreutils

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// columnCmd lines text up in a table: column -t [-s SEPS] [-o OUTSEP]
// [-R COLS] [FILE]... Only the table mode: filling the terminal's width
// with columns of words has no terminal here.
func columnCmd(c *cmd, args []string) int {
	table := false
	seps, outSep := "", "  "
	right := map[int]bool{}
	files, st, ok := c.flags(args, "soR", 1, func(f, v string) error {
		switch f {
		case "-t", "--table":
			table = true
		case "-s", "--separator":
			seps = v
		case "-o", "--output-separator":
			outSep = v
		case "-R", "--table-right":
			for _, n := range strings.Split(v, ",") {
				i, err := strconv.Atoi(n)
				if err != nil || i < 1 {
					return errUnknownFlag
				}
				right[i] = true
			}
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if !table {
		return c.errf(1, "only the table mode (-t) is supported here: there is no terminal to fill")
	}
	if st, ok := c.inputs(files, 1); !ok {
		return st
	}
	lines, err := c.lines()
	if err != nil {
		return c.readErr(err)
	}
	var rows [][]string
	var widths []int
	for _, l := range lines {
		var cells []string
		if seps == "" {
			cells = strings.Fields(l)
		} else {
			cells = strings.FieldsFunc(l, func(r rune) bool { return strings.ContainsRune(seps, r) })
		}
		if len(cells) == 0 {
			continue // empty lines are left out
		}
		for i, cell := range cells {
			w := utf8.RuneCountInString(cell)
			if i == len(widths) {
				widths = append(widths, w)
			} else {
				widths[i] = max(widths[i], w)
			}
		}
		rows = append(rows, cells)
	}
	var b strings.Builder
	for _, cells := range rows {
		// A short row gets empty cells, as util-linux's column gives it;
		// the table's last column is not padded.
		for i := range widths {
			cell := ""
			if i < len(cells) {
				cell = cells[i]
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			switch {
			case right[i+1]:
				b.WriteString(pad + cell)
			case i < len(widths)-1:
				b.WriteString(cell + pad)
			default:
				b.WriteString(cell)
			}
			if i < len(widths)-1 {
				b.WriteString(outSep)
			}
		}
		b.WriteByte('\n')
	}
	c.out.WriteString(b.String())
	return c.done(0)
}

// expandCmd turns tabs into spaces: expand [-t N] [-i] [FILE]...
func expandCmd(c *cmd, args []string) int {
	tab := 8
	initial := false
	files, st, ok := c.flags(args, "t", 1, func(f, v string) error {
		switch f {
		case "-t", "--tabs":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return errUnknownFlag
			}
			tab = n
		case "-i", "--initial":
			initial = true
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if st, ok := c.inputs(files, 1); !ok {
		return st
	}
	err := c.eachLine(func(l string, noNL bool) bool {
		var b strings.Builder
		col, leading := 0, true
		for _, r := range l {
			switch {
			case r == '\t' && (leading || !initial):
				n := tab - col%tab
				b.WriteString(strings.Repeat(" ", n))
				col += n
			default:
				if r != ' ' && r != '\t' {
					leading = false
				}
				b.WriteRune(r)
				col++
			}
		}
		if !noNL {
			b.WriteByte('\n')
		}
		c.out.WriteString(b.String())
		return !c.stopped()
	})
	if err != nil {
		return c.readErr(err)
	}
	return c.done(0)
}
