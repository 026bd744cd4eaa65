package coreutils

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

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
