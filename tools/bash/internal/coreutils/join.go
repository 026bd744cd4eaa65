package coreutils

import (
	"fmt"
	"strconv"
	"strings"
)

// joinSpec is one field of join -o: file 0 is the join field.
type joinSpec struct{ file, field int }

// joinCmd joins the lines of two sorted files on a common field: join [-t
// C] [-1 F] [-2 F] [-j F] [-a 1|2]... [-v 1|2] [-o LIST|auto] [-e S] [-i]
// [--header] [--check-order|--nocheck-order] FILE1 FILE2.
func joinCmd(c *cmd, args []string) int {
	sep := ""
	f1, f2 := 1, 1
	var unpaired [3]bool
	only := false
	var format []joinSpec
	autoFormat := false
	empty := ""
	emptySet := false
	icase, header, checkOrder, noCheck := false, false, false, false
	field := func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("invalid field number: %s", quote(v))
		}
		return n, nil
	}
	fileNum := func(v string) (int, error) {
		if v != "1" && v != "2" {
			return 0, fmt.Errorf("invalid field number: %s", quote(v))
		}
		return int(v[0] - '0'), nil
	}
	args = joinLongValues(args, "--ignore-case")
	files, st, ok := c.flags(args, "t12javeo", 1, func(f, v string) error {
		var err error
		var n int
		switch f {
		case "-t":
			if len(v) > 1 {
				return fmt.Errorf("multi-character tab %s", quote(v))
			}
			sep = v
			if v == "" {
				sep = "\n" // the whole line is the field
			}
		case "-1":
			f1, err = field(v)
		case "-2":
			f2, err = field(v)
		case "-j":
			f1, err = field(v)
			f2 = f1
		case "-a":
			n, err = fileNum(v)
			unpaired[n] = true
		case "-v":
			n, err = fileNum(v)
			unpaired[n] = true
			only = true
		case "-e":
			empty, emptySet = v, true
		case "-o":
			if v == "auto" {
				autoFormat = true
				return nil
			}
			for p := range strings.FieldsFuncSeq(v, func(r rune) bool { return r == ',' || r == ' ' }) {
				if p == "0" {
					format = append(format, joinSpec{0, 0})
					continue
				}
				a, b, found := strings.Cut(p, ".")
				fn, ferr := strconv.Atoi(b)
				if !found || (a != "1" && a != "2") || ferr != nil || fn < 1 {
					return fmt.Errorf("invalid field specifier: %s", quote(p))
				}
				format = append(format, joinSpec{int(a[0] - '0'), fn})
			}
		case "-i", "--ignore-case":
			icase = true
		case "--header":
			header = true
		case "--check-order":
			checkOrder = true
		case "--nocheck-order":
			noCheck = true
		case "-z", "--zero-terminated":
			return fmt.Errorf("-z is not supported")
		default:
			return errUnknownFlag
		}
		return err
	})
	if !ok {
		return st
	}
	if len(files) != 2 {
		if len(files) < 2 {
			return c.errf(1, "missing operand after %s\nTry 'join --help' for more information.", quote(strings.Join(files, " ")))
		}
		return c.errf(1, "extra operand %s\nTry 'join --help' for more information.", quote(files[2]))
	}
	if files[0] == "-" && files[1] == "-" {
		return c.errf(1, "both files cannot be standard input")
	}
	var lines [3][]string
	for i, f := range files {
		if !isStdin(f) && c.env.FS == nil {
			return c.noFS(1, f)
		}
		data, err := c.readFile(f)
		if err != nil {
			if isStdin(f) {
				return c.readErr(err)
			}
			return c.fileErr(1, f, err)
		}
		lines[i+1] = splitLines(string(data))
	}
	split := func(l string) []string {
		switch sep {
		case "":
			return strings.Fields(l)
		case "\n":
			return []string{l}
		}
		return strings.Split(l, sep)
	}
	outSep := sep
	if sep == "" || sep == "\n" {
		outSep = " "
	}
	key := func(fields []string, n int) string {
		if n > len(fields) {
			return ""
		}
		return fields[n-1]
	}
	compare := func(a, b string) int {
		if icase {
			a, b = strings.ToLower(a), strings.ToLower(b)
		}
		return strings.Compare(a, b)
	}
	joinField := [3]int{0, f1, f2}
	nfields := [3]int{}
	var b strings.Builder
	emit := func(x, y []string) {
		// x from file 1 (nil when unpaired), y from file 2.
		var parts []string
		k := ""
		if x != nil {
			k = key(x, f1)
		} else {
			k = key(y, f2)
		}
		if len(format) > 0 || autoFormat {
			specs := format
			if autoFormat {
				specs = []joinSpec{{0, 0}}
				for i := 1; i <= nfields[1]; i++ {
					if i != f1 {
						specs = append(specs, joinSpec{1, i})
					}
				}
				for i := 1; i <= nfields[2]; i++ {
					if i != f2 {
						specs = append(specs, joinSpec{2, i})
					}
				}
			}
			for _, s := range specs {
				v, have := "", false
				switch {
				case s.file == 0:
					v, have = k, true
				case s.file == 1 && x != nil && s.field <= len(x):
					v, have = x[s.field-1], true
				case s.file == 2 && y != nil && s.field <= len(y):
					v, have = y[s.field-1], true
				}
				if !have {
					v = empty
				}
				parts = append(parts, v)
			}
		} else {
			parts = append(parts, k)
			for i, v := range x {
				if i+1 != f1 {
					parts = append(parts, v)
				}
			}
			for i, v := range y {
				if i+1 != f2 {
					parts = append(parts, v)
				}
			}
		}
		b.WriteString(strings.Join(parts, outSep))
		b.WriteByte('\n')
	}
	_ = emptySet
	status := 0
	var pos [3]int
	if header {
		var h [3][]string
		for i := 1; i <= 2; i++ {
			if len(lines[i]) > 0 {
				h[i] = split(lines[i][0])
				pos[i] = 1
			}
		}
		if h[1] != nil || h[2] != nil {
			nfields[1], nfields[2] = len(h[1]), len(h[2])
			if h[1] == nil {
				emit(nil, h[2])
			} else {
				emit(h[1], h[2])
			}
		}
	}
	for i := 1; i <= 2; i++ {
		if pos[i] < len(lines[i]) {
			nfields[i] = len(split(lines[i][pos[i]]))
		}
	}
	// disorder reports a line out of order once per file.
	reported := [3]bool{}
	seenUnpairable := false
	check := func(i, at int) {
		// As GNU join: by default disorder is a fault only once a line
		// went unpaired.
		if noCheck || reported[i] || at == 0 || !checkOrder && !seenUnpairable {
			return
		}
		prev, cur := split(lines[i][at-1]), split(lines[i][at])
		if compare(key(prev, joinField[i]), key(cur, joinField[i])) > 0 {
			if at-1 < 1 && header {
				return
			}
			reported[i] = true
			c.errf(1, "%s:%d: is not sorted: %s", files[i-1], at+1, lines[i][at])
			status = 1
		}
	}
	for pos[1] < len(lines[1]) && pos[2] < len(lines[2]) {
		if c.stopped() {
			return c.errf(1, "interrupted")
		}
		x := split(lines[1][pos[1]])
		y := split(lines[2][pos[2]])
		r := compare(key(x, f1), key(y, f2))
		switch {
		case r < 0:
			seenUnpairable = true
			if unpaired[1] {
				emit(x, nil)
			}
			pos[1]++
			if pos[1] < len(lines[1]) {
				check(1, pos[1])
			}
		case r > 0:
			seenUnpairable = true
			if unpaired[2] {
				emit(nil, y)
			}
			pos[2]++
			if pos[2] < len(lines[2]) {
				check(2, pos[2])
			}
		default:
			// The groups of equal keys in both files.
			e1 := pos[1] + 1
			for e1 < len(lines[1]) && compare(key(split(lines[1][e1]), f1), key(x, f1)) == 0 {
				e1++
			}
			e2 := pos[2] + 1
			for e2 < len(lines[2]) && compare(key(split(lines[2][e2]), f2), key(y, f2)) == 0 {
				e2++
			}
			if !only {
				for i := pos[1]; i < e1; i++ {
					for j := pos[2]; j < e2; j++ {
						emit(split(lines[1][i]), split(lines[2][j]))
						if b.Len() > 1<<16 {
							c.out.WriteString(b.String())
							b.Reset()
						}
					}
				}
			}
			pos[1], pos[2] = e1, e2
			if e1 < len(lines[1]) {
				check(1, e1)
			}
			if e2 < len(lines[2]) {
				check(2, e2)
			}
		}
		if b.Len() > 1<<16 {
			c.out.WriteString(b.String())
			b.Reset()
		}
	}
	for i := 1; i <= 2; i++ {
		for ; pos[i] < len(lines[i]); pos[i]++ {
			seenUnpairable = true
			if pos[i] > 0 {
				check(i, pos[i])
			}
			if unpaired[i] {
				f := split(lines[i][pos[i]])
				if i == 1 {
					emit(f, nil)
				} else {
					emit(nil, f)
				}
			}
		}
	}
	c.out.WriteString(b.String())
	if status != 0 {
		c.errf(1, "input is not in sorted order")
	}
	return c.done(status)
}
