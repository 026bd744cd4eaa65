package coreutils

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// grepOpts are grep's settings.
type grepOpts struct {
	ere, fixed, icase, invert, count, number, only, quiet, word, line bool
	filesWith, filesWithout, recursive, noMessages, byteOffset        bool
	eol                                                               byte // '\n', or NUL with -z
	noZeroCounts                                                      bool // -c leaves out files without a match (rg)
	withName                                                          int  // -1 -h, 0 default, 1 -H
	maxCount                                                          int
	before, after                                                     int
	include, exclude, excludeDir                                      []string
	re                                                                *regexp.Regexp
	searcher                                                          *lineSearcher // built on first use
	searcherBuilt                                                     bool
}

// grepCmd implements grep [-E -F -G -P -i -v -c -n -o -q -s -w -x -h -H
// -l -L -r -R -b -z -m NUM -A NUM -B NUM -C NUM -e PATTERN -f FILE
// --include=GLOB --exclude=GLOB --exclude-dir=GLOB] PATTERN [FILE...].
// Exit 0 when a line was selected, 1 when none was, 2 on an error (unless
// -q selected a line).
func grepCmd(c *cmd, args []string) int {
	o := grepOpts{maxCount: -1, eol: '\n'}
	var patterns []string
	havePatterns := false
	var badFile string
	// -NUM is -C NUM.
	var fixedArgs []string
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			if _, err := strconv.Atoi(a[1:]); err == nil {
				fixedArgs = append(fixedArgs, "-C", a[1:])
				continue
			}
		}
		fixedArgs = append(fixedArgs, a)
	}
	num := func(v, what string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s: invalid context length argument", v)
		}
		return n, nil
	}
	// (GNU's long options take their value from the next argument too)
	fixedArgs = joinLongValues(fixedArgs, "--max-count", "--after-context", "--before-context", "--context",
		"--regexp", "--file", "--directories")
	rest, st, ok := c.flags(fixedArgs, "emABCfd", 2, func(f, v string) error {
		var err error
		switch f {
		case "-E", "--extended-regexp", "-P", "--perl-regexp":
			o.ere, o.fixed = true, false
		case "-F", "--fixed-strings":
			o.fixed = true
		case "-G", "--basic-regexp":
			o.ere, o.fixed = false, false
		case "-i", "-y", "--ignore-case":
			o.icase = true
		case "--no-ignore-case":
			o.icase = false
		case "-v", "--invert-match":
			o.invert = true
		case "-c", "--count":
			o.count = true
		case "-n", "--line-number":
			o.number = true
		case "-b", "--byte-offset":
			o.byteOffset = true
		case "-o", "--only-matching":
			o.only = true
		case "-q", "--quiet", "--silent":
			o.quiet = true
		case "-w", "--word-regexp":
			o.word = true
		case "-x", "--line-regexp":
			o.line = true
		case "-s", "--no-messages":
			o.noMessages = true
		case "-h", "--no-filename":
			o.withName = -1
		case "-H", "--with-filename":
			o.withName = 1
		case "-l", "--files-with-matches":
			o.filesWith = true
		case "-L", "--files-without-match":
			o.filesWithout = true
		case "-r", "-R", "--recursive", "--dereference-recursive":
			o.recursive = true
		case "-z", "--null-data":
			o.eol = 0
		case "-a", "--text", "-I", "--color", "--colour", "-T", "--initial-tab", "-U", "--binary", "--line-buffered", "-Z", "--null":
		case "-d", "--directories":
			if v == "recurse" {
				o.recursive = true
			}
		case "-e", "--regexp":
			patterns = append(patterns, strings.Split(v, "\n")...)
			havePatterns = true
		case "-f", "--file":
			data, ferr := c.readFile(v)
			if ferr != nil {
				badFile = v + ": " + why(ferr)
				return nil
			}
			havePatterns = true
			patterns = append(patterns, splitLines(string(data))...)
		case "-m", "--max-count":
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("invalid max count: %s", v)
			}
			o.maxCount = n
		case "-A", "--after-context":
			o.after, err = num(v, f)
		case "-B", "--before-context":
			o.before, err = num(v, f)
		case "-C", "--context":
			o.after, err = num(v, f)
			o.before = o.after
		case "--include":
			o.include = append(o.include, v)
		case "--exclude":
			o.exclude = append(o.exclude, v)
		case "--exclude-dir":
			o.excludeDir = append(o.excludeDir, v)
		default:
			return errUnknownFlag
		}
		return err
	})
	if !ok {
		return st
	}
	if badFile != "" {
		return c.errf(2, "%s", badFile)
	}
	if !havePatterns {
		if len(rest) == 0 {
			return c.errf(2, "usage: grep [OPTION]... PATTERNS [FILE]...")
		}
		patterns = strings.Split(rest[0], "\n")
		rest = rest[1:]
	}
	re, err := grepRegex(patterns, &o)
	if err != nil {
		return c.errf(2, "%v", err)
	}
	o.re = re
	if o.recursive && len(rest) == 0 {
		rest = []string{"."}
		if o.withName == 0 {
			o.withName = 1
		}
		return c.grepFiles(&o, rest, true)
	}
	if o.withName == 0 && (len(rest) > 1 || o.recursive) {
		o.withName = 1
	}
	return c.grepFiles(&o, rest, false)
}

// grepRegex compiles the patterns into one expression.
func grepRegex(patterns []string, o *grepOpts) (*regexp.Regexp, error) {
	var alts []string
	for _, p := range patterns {
		switch {
		case o.fixed:
			p = regexp.QuoteMeta(p)
		case !o.ere:
			p = breToERE(p)
		}
		alts = append(alts, "(?:"+p+")")
	}
	expr := strings.Join(alts, "|")
	if len(patterns) == 0 {
		expr = `[^\x00-\x{10FFFF}]` // -f of an empty file matches nothing
	}
	if o.word {
		expr = `\b(?:` + expr + `)\b`
	}
	if o.line {
		expr = "^(?:" + expr + ")$"
	}
	re, err := compileRegex(expr, true, o.icase)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression: %v", err)
	}
	return re, nil
}

// grepFiles searches each operand (stdin when none); bare is true for the
// "." of a recursive grep without operands, whose paths print without
// "./".
func (c *cmd) grepFiles(o *grepOpts, files []string, bare bool) int {
	selected, errors := false, false
	report := func(p string, err error) {
		errors = true
		if !o.noMessages {
			c.fileErr(2, p, err)
		}
	}
	search := func(name string, data []byte, fromStdin bool) bool {
		display := name
		if fromStdin {
			display = "(standard input)"
		}
		hit, stop := c.grepData(o, display, data)
		selected = selected || hit
		return !stop
	}
	if len(files) == 0 {
		data, err := c.readAll()
		if err != nil {
			return c.readErr(err)
		}
		search("-", data, true)
		return c.grepStatus(o, selected, errors)
	}
	for _, f := range files {
		if isStdin(f) {
			data, err := c.readAll()
			if err != nil {
				return c.readErr(err)
			}
			if !search(f, data, true) {
				break
			}
			continue
		}
		if c.env.FS == nil {
			return c.noFS(2, f)
		}
		abs := c.abs(f)
		info, err := c.env.FS.Stat(c.ctx, abs)
		if err != nil {
			report(f, err)
			continue
		}
		if !info.IsDir() {
			data, err := c.env.FS.ReadFile(c.ctx, abs)
			if err != nil {
				report(f, err)
				continue
			}
			if !search(f, data, false) {
				break
			}
			continue
		}
		if !o.recursive {
			report(f, vfs.ErrIsDir)
			continue
		}
		stop := false
		werr := c.walk(f, func(p, abs string, info *vfs.Info, depth int) error {
			name := path.Base(p)
			if info.IsDir() {
				if depth > 0 && matchAny(o.excludeDir, name) {
					return errSkipDir
				}
				return nil
			}
			if len(o.include) > 0 && !matchAny(o.include, name) || matchAny(o.exclude, name) {
				return nil
			}
			data, err := c.env.FS.ReadFile(c.ctx, abs)
			if err != nil {
				report(p, err)
				return nil
			}
			shown := p
			if bare {
				shown = strings.TrimPrefix(p, "./")
			}
			if !search(shown, data, false) {
				stop = true
				return errStopped
			}
			return nil
		}, report)
		if werr != nil && !stop {
			return c.errf(2, "interrupted")
		}
		if stop {
			break
		}
	}
	return c.grepStatus(o, selected, errors)
}

func (c *cmd) grepStatus(o *grepOpts, selected, errors bool) int {
	switch {
	case o.quiet && selected:
		return c.done(0)
	case errors:
		return c.done(2)
	case selected:
		return c.done(0)
	}
	return c.done(1)
}

// matchAny reports whether name matches one of the glob patterns.
func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// grepData searches one input; hit says a line was selected, stop that
// grep is done (-q matched).
func (c *cmd) grepData(o *grepOpts, name string, data []byte) (hit, stop bool) {
	if o.filesWith || o.filesWithout || o.quiet || o.count {
		limit := o.maxCount
		if !o.count && (limit < 0 || limit > 1) {
			limit = 1
		}
		if n, ok := o.countSelected(data, limit); ok {
			return c.grepSummary(o, name, n)
		}
		n := 0
		for l := range grepLines(data, o.eol) {
			if o.re.MatchString(l.text) != o.invert {
				n++
				if o.maxCount >= 0 && n >= o.maxCount {
					break
				}
				if !o.count {
					break
				}
			}
			if o.maxCount == 0 {
				break
			}
		}
		if o.maxCount == 0 {
			n = 0
		}
		return c.grepSummary(o, name, n)
	}
	if o.eol != 0 && bytes.IndexByte(data, 0) >= 0 {
		for l := range grepLines(data, o.eol) {
			if o.re.MatchString(l.text) != o.invert {
				c.out.WriteString("Binary file " + name + " matches\n")
				return true, false
			}
		}
		return false, false
	}
	prefix := func(num int, off int, sep byte) {
		if o.withName > 0 {
			c.out.WriteString(name)
			c.out.WriteByte(sep)
		}
		if o.number {
			c.out.WriteString(strconv.Itoa(num))
			c.out.WriteByte(sep)
		}
		if o.byteOffset {
			c.out.WriteString(strconv.Itoa(off))
			c.out.WriteByte(sep)
		}
	}
	context := o.before > 0 || o.after > 0
	var pending []grepLine // up to o.before lines before the next match
	afterLeft := 0
	lastPrinted := 0 // number of the last line printed
	matched := 0
	for l := range grepLines(data, o.eol) {
		if c.stopped() {
			break
		}
		if o.maxCount >= 0 && matched >= o.maxCount {
			if afterLeft > 0 && o.re.MatchString(l.text) == o.invert {
				prefix(l.num, l.off, '-')
				c.out.WriteString(l.text)
				c.out.WriteByte(o.eol)
				lastPrinted = l.num
				afterLeft--
				continue
			}
			break
		}
		sel := o.re.MatchString(l.text) != o.invert
		if !sel {
			if afterLeft > 0 {
				prefix(l.num, l.off, '-')
				c.out.WriteString(l.text)
				c.out.WriteByte(o.eol)
				lastPrinted = l.num
				afterLeft--
			} else if o.before > 0 {
				pending = append(pending, l)
				if len(pending) > o.before {
					pending = pending[1:]
				}
			}
			continue
		}
		matched++
		hit = true
		if context {
			first := l.num
			if len(pending) > 0 {
				first = pending[0].num
			}
			if lastPrinted > 0 && first > lastPrinted+1 {
				c.out.WriteString("--\n")
			}
			for _, p := range pending {
				prefix(p.num, p.off, '-')
				c.out.WriteString(p.text)
				c.out.WriteByte(o.eol)
			}
			pending = pending[:0]
			afterLeft = o.after
			lastPrinted = l.num
		}
		if o.only && !o.invert {
			for _, loc := range o.re.FindAllStringIndex(l.text, -1) {
				if loc[1] > loc[0] {
					prefix(l.num, l.off+loc[0], ':')
					c.out.WriteString(l.text[loc[0]:loc[1]])
					c.out.WriteByte(o.eol)
				}
			}
			continue
		}
		if o.only {
			continue
		}
		prefix(l.num, l.off, ':')
		c.out.WriteString(l.text)
		c.out.WriteByte(o.eol)
	}
	return hit, false
}

type grepLine struct {
	text     string
	num, off int
}

// grepLines iterates the lines of data (without their terminator eol,
// '\n' or NUL), numbered from 1.
func grepLines(data []byte, eol byte) func(func(grepLine) bool) {
	return func(yield func(grepLine) bool) {
		s := string(data)
		off, num := 0, 0
		for off < len(s) {
			num++
			end := strings.IndexByte(s[off:], eol)
			var text string
			next := len(s)
			if end < 0 {
				text = s[off:]
			} else {
				text = s[off : off+end]
				next = off + end + 1
			}
			if !yield(grepLine{text: text, num: num, off: off}) {
				return
			}
			off = next
		}
	}
}

// grepSummary prints what -q, -l, -L or -c print for n selected lines.
func (c *cmd) grepSummary(o *grepOpts, name string, n int) (hit, stop bool) {
	switch {
	case o.quiet:
		return n > 0, n > 0
	case o.filesWith:
		if n > 0 {
			c.out.WriteString(name + "\n")
		}
	case o.filesWithout:
		if n == 0 {
			c.out.WriteString(name + "\n")
		}
	case o.noZeroCounts && n == 0:
	default:
		if o.withName > 0 {
			c.out.WriteString(name + ":")
		}
		c.out.WriteString(strconv.Itoa(n) + "\n")
	}
	return n > 0, false
}
