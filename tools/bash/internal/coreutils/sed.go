package coreutils

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/budget"
	"github.com/demiurge-dev/demiurge/tools/bash/internal/escape"
)

// sedCmd implements sed [-n] [-E|-r] [-s] [-z] [-i[SUFFIX]] [-e SCRIPT]...
// [-f FILE]... [SCRIPT] [FILE]...: addresses N, $, /re/ (with I and M),
// \cREc, first~step, A,B, A,+N, A,~N, 0,/re/ and !; commands {}, s (flags
// g p N i I m M w), y, p, P, d, D, n, N, h, H, g, G, x, b, t, T, :label,
// =, l, q, Q, z, a, i, c, r and w. -i edits each file in place (keeping a
// copy named FILE+SUFFIX when a suffix is given).
func sedCmd(c *cmd, args []string) int {
	quiet, ere, separate, inPlace, nulData := false, false, false, false, false
	suffix := ""
	var scripts []string
	// -i takes an optional attached suffix, which the flag parser cannot
	// tell from a bundle of flags: pull it out first.
	var rest []string
	for i, a := range args {
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		switch {
		case a == "-i" || a == "--in-place":
			inPlace = true
		case strings.HasPrefix(a, "--in-place="):
			inPlace, suffix = true, strings.TrimPrefix(a, "--in-place=")
		case strings.HasPrefix(a, "-i") && len(a) > 2:
			inPlace, suffix = true, a[2:]
		default:
			rest = append(rest, a)
		}
	}
	var badFile string
	files, st, ok := c.flags(rest, "ef", 1, func(f, v string) error {
		switch f {
		case "-n", "--quiet", "--silent":
			quiet = true
		case "-E", "-r", "--regexp-extended":
			ere = true
		case "-e", "--expression":
			scripts = append(scripts, v)
		case "-f", "--file":
			data, err := c.readFile(v)
			if err != nil {
				badFile = "couldn't open file " + v + ": " + why(err)
				return nil
			}
			scripts = append(scripts, strings.TrimSuffix(string(data), "\n"))
		case "-s", "--separate":
			separate = true
		case "-z", "--null-data":
			nulData = true
		case "-u", "--unbuffered", "--posix", "--debug", "--sandbox", "-l":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if badFile != "" {
		return c.errf(1, "%s", badFile)
	}
	if scripts == nil {
		if len(files) == 0 {
			return c.errf(1, "usage: sed [OPTION]... {script} [input-file]...")
		}
		scripts = []string{files[0]}
		files = files[1:]
	}
	prog, err := parseSed(strings.Join(scripts, "\n"), ere)
	if err != nil {
		var se *sedError
		if errors.As(err, &se) {
			return c.errf(1, "-e expression #1, char %d: %s", se.pos, se.msg)
		}
		return c.errf(1, "-e expression #1: %v", err)
	}
	delim := byte('\n')
	if nulData {
		delim = 0
	}
	r := &sedRun{c: c, prog: prog, quiet: quiet, delim: delim, wfiles: map[string]*strings.Builder{}, space: c.env.Budget.NewMeter(),
		linesMem: c.env.Budget.NewMeter()}
	defer r.space.Close()
	defer r.linesMem.Close()
	if inPlace {
		if len(files) == 0 {
			return c.errf(1, "no input files")
		}
		status := 0
		for _, f := range files {
			data, err := c.readFile(f)
			if err != nil {
				c.errf(2, "can't read %s: %s", f, why(err))
				status = 2
				continue
			}
			var out strings.Builder
			r.reset(string(data), &out)
			code, quit := r.run()
			if st, bad := sedFailed(c, code); bad {
				return st // the file is left as it was
			}
			if suffix != "" {
				bak := suffix
				if !strings.Contains(bak, "*") {
					bak = f + bak
				} else {
					bak = strings.ReplaceAll(bak, "*", baseName(f))
				}
				if !c.writeFile(bak, data) {
					return c.done(4)
				}
			}
			if !c.writeFile(f, []byte(out.String())) {
				return c.done(4)
			}
			if quit {
				r.flushW()
				return c.done(code)
			}
		}
		r.flushW()
		return c.done(status)
	}
	if separate && len(files) > 1 {
		for _, f := range files {
			data, err := c.readFile(f)
			if err != nil {
				c.fileErr(2, f, err)
				c.fail(2)
				continue
			}
			r.reset(string(data), c.out)
			if code, quit := r.run(); quit {
				r.flushW()
				if st, bad := sedFailed(c, code); bad {
					return st
				}
				return c.done(code)
			}
		}
		r.flushW()
		return c.done(0)
	}
	if st, ok := c.inputs(files, 2); !ok {
		return st
	}
	data, err := c.readAll()
	if err != nil {
		return c.readErr(err)
	}
	r.reset(string(data), c.out)
	code, _ := r.run()
	r.flushW()
	if st, bad := sedFailed(c, code); bad {
		return st
	}
	return c.done(code)
}

// What run returns for a run it ended itself: the command's context
// ended (the script's time limit), or the pattern and hold spaces grew
// past maxSedSpace.
const (
	sedInterrupted = -1
	sedTooLarge    = -2
)

// maxSedSpace bounds the pattern space and the hold space together.
const maxSedSpace = 64 << 20

// sedFailed reports a run that ended as sedInterrupted or sedTooLarge,
// with sed's exit status.
func sedFailed(c *cmd, code int) (int, bool) {
	switch code {
	case sedInterrupted:
		return c.errf(1, "interrupted"), true
	case sedTooLarge:
		return c.errf(1, "the pattern and hold spaces grew past %d MiB (a loop that never ends?)", maxSedSpace>>20), true
	}
	return 0, false
}

// sedError is a parse error at a character of the script.
type sedError struct {
	pos int
	msg string
}

func (e *sedError) Error() string { return e.msg }

type sedAddr struct {
	kind  int // 0 none, 1 line, 2 last, 3 regex, 4 +N, 5 ~N, 6 first~step
	line  int
	step  int
	re    *sedRE
	empty bool // // : the last regex used
}

type sedCommand struct {
	a1, a2  sedAddr
	negate  bool
	inRange bool
	end     int // last line of a +N range
	name    byte
	// s
	re     *sedRE
	reLast bool // s//…/: the last regex used
	repl   string
	global bool
	print  bool
	nth    int
	wfile  string
	// y
	from, to []rune
	// a i c r w, labels
	text  string
	label string
	// { } and branches: the index to jump to
	jump int
	// q Q
	code int
}

type sedParser struct {
	s     string
	i     int
	ere   bool
	depth []int // indexes of open {
}

func (p *sedParser) errf(format string, args ...any) error {
	return &sedError{pos: p.i, msg: fmt.Sprintf(format, args...)}
}

func (p *sedParser) eof() bool { return p.i >= len(p.s) }

func (p *sedParser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.s[p.i]
}

func (p *sedParser) skip(chars string) {
	for !p.eof() && strings.IndexByte(chars, p.s[p.i]) >= 0 {
		p.i++
	}
}

// toEOL returns the rest of the line (a label, a file name).
func (p *sedParser) toEOL(semicolon bool) string {
	start := p.i
	for !p.eof() && p.s[p.i] != '\n' && !(semicolon && (p.s[p.i] == ';' || p.s[p.i] == '}')) {
		p.i++
	}
	return strings.TrimSpace(p.s[start:p.i])
}

func parseSed(script string, ere bool) ([]*sedCommand, error) {
	var cmds []*sedCommand
	p := &sedParser{s: script, ere: ere}
	labels := map[string]int{}
	for {
		p.skip(" \t\n;")
		if p.eof() {
			break
		}
		if p.peek() == '#' {
			p.toEOL(false)
			continue
		}
		cmd := &sedCommand{}
		var err error
		if cmd.a1, err = p.addr(); err != nil {
			return nil, err
		}
		if cmd.a1.kind == 4 || cmd.a1.kind == 5 {
			return nil, p.errf("unexpected `,'")
		}
		if cmd.a1.kind != 0 && p.peek() == ',' {
			p.i++
			p.skip(" \t")
			if cmd.a2, err = p.addr(); err != nil {
				return nil, err
			}
			if cmd.a2.kind == 0 {
				return nil, p.errf("unexpected `,'")
			}
		}
		if cmd.a1.kind == 1 && cmd.a1.line == 0 && (cmd.a2.kind != 3) {
			return nil, p.errf("invalid usage of line address 0")
		}
		p.skip(" \t")
		for p.peek() == '!' {
			cmd.negate = true
			p.i++
			p.skip(" \t")
		}
		if p.eof() {
			return nil, p.errf("missing command")
		}
		cmd.name = p.s[p.i]
		p.i++
		switch cmd.name {
		case '{':
			p.depth = append(p.depth, len(cmds))
		case '}':
			if len(p.depth) == 0 {
				return nil, p.errf("unexpected `}'")
			}
			if cmd.a1.kind != 0 {
				return nil, p.errf("} doesn't want any addresses")
			}
			open := p.depth[len(p.depth)-1]
			p.depth = p.depth[:len(p.depth)-1]
			cmds[open].jump = len(cmds) + 1
		case 'd', 'D', 'p', 'P', '=', 'n', 'N', 'h', 'H', 'g', 'G', 'x', 'z', 'l', 'F':
		case 'q', 'Q':
			p.skip(" \t")
			start := p.i
			for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
				p.i++
			}
			if p.i > start {
				n, err := strconv.Atoi(p.s[start:p.i])
				if err != nil {
					n = 255
				}
				cmd.code = n & 255
			}
		case ':':
			if cmd.a1.kind != 0 {
				return nil, p.errf(": doesn't want any addresses")
			}
			cmd.label = p.toEOL(true)
			if cmd.label == "" {
				return nil, p.errf("\":\" lacks a label")
			}
			labels[cmd.label] = len(cmds)
		case 'b', 't', 'T':
			p.skip(" \t")
			cmd.label = p.toEOL(true)
		case 'r', 'R', 'w', 'W':
			p.skip(" \t")
			cmd.text = p.toEOL(false)
			if cmd.text == "" {
				return nil, p.errf("missing filename in r/R/w/W commands")
			}
		case 's':
			if err := p.subst(cmd); err != nil {
				return nil, err
			}
		case 'y':
			if err := p.translit(cmd); err != nil {
				return nil, err
			}
		case 'a', 'i', 'c':
			p.skip(" \t")
			if p.peek() == '\\' {
				// "a\" then the text on the next line, or (GNU) on this
				// one: either way its leading blanks are kept.
				p.i++
				j := p.i
				for j < len(p.s) && (p.s[j] == ' ' || p.s[j] == '\t') {
					j++
				}
				if j < len(p.s) && p.s[j] == '\n' {
					p.i = j + 1
				}
			}
			// The text runs to the end of the line; a line ending in a
			// backslash continues it.
			var b strings.Builder
			for !p.eof() {
				ch := p.s[p.i]
				if ch == '\\' && p.i+1 < len(p.s) {
					if p.s[p.i+1] == '\n' {
						b.WriteByte('\n')
						p.i += 2
						continue
					}
					b.WriteByte(ch)
					b.WriteByte(p.s[p.i+1])
					p.i += 2
					continue
				}
				if ch == '\n' {
					break
				}
				b.WriteByte(ch)
				p.i++
			}
			cmd.text, _, _ = escape.Printf(b.String(), true)
		default:
			return nil, p.errf("unknown command: `%c'", cmd.name)
		}
		p.skip(" \t")
		if !p.eof() && !strings.ContainsRune(";\n}#", rune(p.s[p.i])) && cmd.name != '{' && cmd.name != '}' {
			return nil, p.errf("extra characters after command")
		}
		cmds = append(cmds, cmd)
	}
	if len(p.depth) > 0 {
		return nil, p.errf("unmatched `{'")
	}
	for _, cmd := range cmds {
		if cmd.name == 'b' || cmd.name == 't' || cmd.name == 'T' {
			if cmd.label == "" {
				cmd.jump = len(cmds)
				continue
			}
			at, ok := labels[cmd.label]
			if !ok {
				return nil, &sedError{pos: len(script), msg: fmt.Sprintf("can't find label for jump to `%s'", cmd.label)}
			}
			cmd.jump = at
		}
	}
	return cmds, nil
}

func (p *sedParser) number() (int, bool) {
	start := p.i
	for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	if p.i == start {
		return 0, false
	}
	n, err := strconv.Atoi(p.s[start:p.i])
	return n, err == nil
}

func (p *sedParser) addr() (sedAddr, error) {
	switch ch := p.peek(); {
	case ch >= '0' && ch <= '9':
		n, ok := p.number()
		if !ok {
			return sedAddr{}, p.errf("invalid line number")
		}
		if p.peek() == '~' {
			p.i++
			step, _ := p.number()
			return sedAddr{kind: 6, line: n, step: step}, nil
		}
		return sedAddr{kind: 1, line: n}, nil
	case ch == '$':
		p.i++
		return sedAddr{kind: 2}, nil
	case ch == '+' || ch == '~':
		p.i++
		n, ok := p.number()
		if !ok {
			return sedAddr{}, p.errf("expected a number after '%c'", ch)
		}
		if ch == '+' {
			return sedAddr{kind: 4, line: n}, nil
		}
		return sedAddr{kind: 5, line: n}, nil
	case ch == '/' || ch == '\\':
		if ch == '\\' {
			p.i++
		}
		delim := p.peek()
		p.i++
		pat, err := p.delimited(delim)
		if err != nil {
			return sedAddr{}, err
		}
		icase, multi := false, false
		for p.peek() == 'I' || p.peek() == 'M' {
			if p.peek() == 'I' {
				icase = true
			} else {
				multi = true
			}
			p.i++
		}
		if pat == "" {
			return sedAddr{kind: 3, empty: true}, nil
		}
		re, err := sedRegex(pat, p.ere, icase, multi)
		if err != nil {
			return sedAddr{}, p.errf("%v", err)
		}
		return sedAddr{kind: 3, re: re}, nil
	}
	return sedAddr{}, nil
}

// sedRE is a compiled sed regular expression. One whose \xHH escapes
// name bytes that are not UTF-8 (s/\xce//, which removes the first byte
// of μ) matches bytes: the text is read as Latin-1, a rune a byte, and
// what it finds mapped back (. is then a byte, not a character).
type sedRE struct {
	re    *regexp.Regexp
	bytes bool
}

// MatchString reports whether s holds a match.
func (r *sedRE) MatchString(s string) bool {
	if r.bytes {
		s = latin1(s)
	}
	return r.re.MatchString(s)
}

// FindAllStringSubmatchIndex is regexp's, with offsets into s.
func (r *sedRE) FindAllStringSubmatchIndex(s string, n int) [][]int {
	if !r.bytes {
		return r.re.FindAllStringSubmatchIndex(s, n)
	}
	t := latin1(s)
	locs := r.re.FindAllStringSubmatchIndex(t, n)
	if len(locs) == 0 {
		return locs
	}
	// offset in t -> offset in s: a rune of t is a byte of s
	at := make([]int, len(t)+1)
	j := 0
	for i := range t {
		at[i] = j
		j++
	}
	at[len(t)] = j
	for _, loc := range locs {
		for k, v := range loc {
			if v >= 0 {
				loc[k] = at[v]
			}
		}
	}
	return locs
}

// latin1 reads each byte of s as the rune of that number.
func latin1(s string) string {
	var b strings.Builder
	b.Grow(len(s) * 2)
	for i := 0; i < len(s); i++ {
		b.WriteRune(rune(s[i]))
	}
	return b.String()
}

// hexEscapes replaces \xHH in a regular expression by the byte it names
// (GNU sed's: \x5e is then ^, an anchor), \x5c by \\.
func hexEscapes(pat string) string {
	if !strings.Contains(pat, `\x`) {
		return pat
	}
	var b strings.Builder
	for i := 0; i < len(pat); i++ {
		if pat[i] == '\\' && i+1 < len(pat) {
			if pat[i+1] == 'x' && i+3 < len(pat) && escape.IsHex(pat[i+2]) && escape.IsHex(pat[i+3]) {
				v, _ := strconv.ParseUint(pat[i+2:i+4], 16, 8)
				if v == '\\' {
					b.WriteString(`\\`)
				} else {
					b.WriteByte(byte(v))
				}
				i += 3
				continue
			}
			b.WriteString(pat[i : i+2])
			i++
			continue
		}
		b.WriteByte(pat[i])
	}
	return b.String()
}

// sedRegex compiles a sed regular expression.
func sedRegex(pat string, ere, icase, multi bool) (*sedRE, error) {
	pat = hexEscapes(pat)
	bytes := !utf8.ValidString(pat)
	if bytes {
		pat = latin1(pat)
	}
	re, err := sedRegexp(pat, ere, icase, multi)
	if err != nil {
		return nil, err
	}
	return &sedRE{re: re, bytes: bytes}, nil
}

func sedRegexp(pat string, ere, icase, multi bool) (*regexp.Regexp, error) {
	expr := pat
	if !ere {
		expr = breToERE(pat)
	}
	flags := "s"
	if icase {
		flags += "i"
	}
	if multi {
		flags += "m"
	}
	if len(expr) > maxRegexBytes {
		return nil, fmt.Errorf("pattern exceeds %d bytes", maxRegexBytes)
	}
	return regexp.Compile("(?" + flags + ")" + expr)
}

// delimited reads up to the next unescaped delim; "\delim" yields delim
// and "\n" a newline.
func (p *sedParser) delimited(delim byte) (string, error) {
	var b strings.Builder
	inBracket := false
	for !p.eof() {
		ch := p.s[p.i]
		if ch == '\\' && p.i+1 < len(p.s) {
			n := p.s[p.i+1]
			switch {
			case n == delim && delim != '&':
				b.WriteByte(n)
			case n == 'n':
				b.WriteByte('\n')
			case n == 't':
				b.WriteByte('\t')
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
			p.i += 2
			continue
		}
		switch {
		case ch == '[' && !inBracket:
			inBracket = true
			b.WriteByte(ch)
			p.i++
			if p.peek() == '^' {
				b.WriteByte('^')
				p.i++
			}
			if p.peek() == ']' {
				b.WriteByte(']')
				p.i++
			}
			continue
		case ch == ']' && inBracket:
			inBracket = false
		case ch == delim && !inBracket:
			p.i++
			return b.String(), nil
		case ch == '\n':
			return "", p.errf("unterminated address regex")
		}
		b.WriteByte(ch)
		p.i++
	}
	return "", p.errf("unterminated `s' command")
}

func (p *sedParser) subst(cmd *sedCommand) error {
	if p.eof() {
		return p.errf("unterminated `s' command")
	}
	delim := p.s[p.i]
	p.i++
	pat, err := p.delimited(delim)
	if err != nil {
		return err
	}
	// The replacement keeps its escapes for expandRepl, except \delim.
	var b strings.Builder
	closed := false
	for !p.eof() {
		ch := p.s[p.i]
		if ch == '\\' && p.i+1 < len(p.s) {
			if p.s[p.i+1] == delim {
				b.WriteByte(delim)
			} else if p.s[p.i+1] == '\n' {
				b.WriteByte('\n')
			} else {
				b.WriteByte('\\')
				b.WriteByte(p.s[p.i+1])
			}
			p.i += 2
			continue
		}
		if ch == delim {
			p.i++
			closed = true
			break
		}
		b.WriteByte(ch)
		p.i++
	}
	if !closed {
		return p.errf("unterminated `s' command")
	}
	cmd.repl = b.String()
	icase, multi := false, false
flags:
	for !p.eof() {
		switch f := p.s[p.i]; {
		case f == 'g':
			cmd.global = true
		case f == 'p':
			cmd.print = true
		case f == 'i' || f == 'I':
			icase = true
		case f == 'm' || f == 'M':
			multi = true
		case f == 'e':
			return p.errf("the e flag (run a command) is not supported")
		case f == 'w':
			p.i++
			p.skip(" \t")
			cmd.wfile = p.toEOL(false)
			break flags
		case f >= '0' && f <= '9':
			cmd.nth, _ = p.number()
			if cmd.nth == 0 {
				return p.errf("number option to `s' command may not be zero")
			}
			continue
		default:
			break flags
		}
		p.i++
	}
	if pat == "" {
		cmd.reLast = true
		return nil
	}
	cmd.re, err = sedRegex(pat, p.ere, icase, multi)
	if err != nil {
		return p.errf("%v", err)
	}
	return nil
}

func (p *sedParser) translit(cmd *sedCommand) error {
	if p.eof() {
		return p.errf("unterminated `y' command")
	}
	delim := p.s[p.i]
	p.i++
	from, err := p.delimited(delim)
	if err != nil {
		return err
	}
	to, err := p.delimited(delim)
	if err != nil {
		return err
	}
	from, _, _ = escape.Printf(from, true)
	to, _, _ = escape.Printf(to, true)
	cmd.from, cmd.to = []rune(from), []rune(to)
	if len(cmd.from) != len(cmd.to) {
		return p.errf("strings for `y' command are different lengths")
	}
	return nil
}

// sedRun is one run of a sed program over one input stream.
type sedRun struct {
	c      *cmd
	prog   []*sedCommand
	quiet  bool
	delim  byte
	wfiles map[string]*strings.Builder
	worder []string

	out    interface{ WriteString(string) (int, error) }
	lines  []string
	noNL   bool // the input's last line has no delimiter
	next   int  // index of the next line to read
	n      int  // current line number
	lastRE *sedRE
	hold   string
	// space is what the pattern and hold spaces hold of the memory
	// budget, past a megabyte; linesMem what the input's lines do.
	space, linesMem *budget.Meter
	// aborted: the input could not be split (budget, interruption).
	aborted  bool
	appended []string
}

// reset sets the input and output of the next run.
func (r *sedRun) reset(data string, out interface{ WriteString(string) (int, error) }) {
	r.out = out
	d := string(r.delim)
	r.noNL = data != "" && !strings.HasSuffix(data, d)
	if data == "" {
		r.lines = nil
	} else {
		data = strings.TrimSuffix(data, d)
		// the lines' headers are held against the memory budget; the
		// split checks that the script goes on
		n := strings.Count(data, d) + 1
		if r.linesMem.Set(int64(n)*16) != nil || r.c.stopped() {
			r.lines, r.next, r.n = nil, 0, 0
			r.aborted = true
			return
		}
		r.lines = make([]string, 0, n)
		for i := 0; ; i++ {
			if i&65535 == 65535 && r.c.stopped() {
				r.aborted = true
				break
			}
			j := strings.Index(data, d)
			if j < 0 {
				r.lines = append(r.lines, data)
				break
			}
			r.lines = append(r.lines, data[:j])
			data = data[j+len(d):]
		}
	}
	r.next, r.n = 0, 0
	r.hold = ""
	for _, cmd := range r.prog {
		cmd.inRange = false
	}
}

func (r *sedRun) last() bool { return r.next >= len(r.lines) }

// emit writes the pattern space and a delimiter (none after a last line
// that had none).
func (r *sedRun) emit(s string) {
	r.out.WriteString(s)
	if !(r.last() && r.noNL) {
		r.out.WriteString(string(r.delim))
	}
}

func (r *sedRun) flushAppended() {
	for _, t := range r.appended {
		r.out.WriteString(t)
	}
	r.appended = r.appended[:0]
}

// readFileText is the content of an r command's file ("" when missing).
func (r *sedRun) readFileText(name string) string {
	if name == "/dev/stdin" {
		return ""
	}
	data, err := r.c.readFile(name)
	if err != nil {
		return ""
	}
	return string(data)
}

func (r *sedRun) write(name, text string) {
	switch name {
	case "/dev/stdout":
		r.out.WriteString(text + "\n")
		return
	case "/dev/stderr":
		r.c.out.Flush()
		fmt.Fprintln(r.c.env.Stderr, text)
		return
	}
	b, ok := r.wfiles[name]
	if !ok {
		b = &strings.Builder{}
		r.wfiles[name] = b
		r.worder = append(r.worder, name)
	}
	b.WriteString(text + "\n")
}

// flushW writes the files of w commands.
func (r *sedRun) flushW() {
	for _, name := range r.worder {
		r.c.writeFile(name, []byte(r.wfiles[name].String()))
	}
	r.worder = nil
	clear(r.wfiles)
}

func (r *sedRun) match(a *sedAddr, ps string) bool {
	switch a.kind {
	case 1:
		return r.n == a.line
	case 2:
		return r.last()
	case 3:
		re := a.re
		if a.empty {
			re = r.lastRE
		} else {
			r.lastRE = re
		}
		return re != nil && re.MatchString(ps)
	case 6:
		if a.step <= 0 {
			return r.n == a.line
		}
		return r.n >= a.line && (r.n-a.line)%a.step == 0
	}
	return true
}

func (r *sedRun) selects(cmd *sedCommand, ps string) bool {
	var sel bool
	switch {
	case cmd.a1.kind == 0:
		sel = true
	case cmd.a2.kind == 0:
		sel = r.match(&cmd.a1, ps)
	case cmd.inRange:
		sel = true
		switch cmd.a2.kind {
		case 4:
			if r.n >= cmd.end {
				cmd.inRange = false
			}
		case 5:
			if cmd.a2.line <= 0 || r.n%cmd.a2.line == 0 {
				cmd.inRange = false
			}
		case 1:
			if r.n >= cmd.a2.line {
				cmd.inRange = false
			}
			if r.n > cmd.a2.line {
				sel = false
			}
		default:
			if r.match(&cmd.a2, ps) {
				cmd.inRange = false
			}
		}
	case cmd.a1.kind == 1 && cmd.a1.line == 0 && r.n == 1, !(cmd.a1.kind == 1 && cmd.a1.line == 0) && r.match(&cmd.a1, ps):
		// 0,/re/ opens its range before the first line, so that the
		// first line may close it.
		sel = true
		cmd.inRange = true
		zero := cmd.a1.kind == 1 && cmd.a1.line == 0
		switch cmd.a2.kind {
		case 1:
			if cmd.a2.line <= r.n {
				cmd.inRange = false
			}
		case 2:
			if r.last() {
				cmd.inRange = false
			}
		case 4:
			cmd.end = r.n + cmd.a2.line
			if cmd.a2.line == 0 {
				cmd.inRange = false
			}
		case 5:
			if cmd.a2.line <= 0 || r.n%cmd.a2.line == 0 {
				cmd.inRange = false
			}
		case 3:
			if zero && r.match(&cmd.a2, ps) {
				cmd.inRange = false
			}
		}
	}
	return sel != cmd.negate
}

// run runs the program over the input; code is the exit status (-1
// interrupted) and quit whether a q or Q ended it.
func (r *sedRun) run() (code int, quit bool) {
	if r.aborted {
		if r.c.stopped() {
			return sedInterrupted, true
		}
		return sedTooLarge, true
	}
	steps := 0
	for !r.last() {
		if r.n&1023 == 1023 && r.c.stopped() {
			return sedInterrupted, true
		}
		ps := r.lines[r.next]
		r.next++
		r.n++
		subst := false
		restart := true
		for restart {
			restart = false
			deleted := false
			pc := 0
		cycle:
			for pc < len(r.prog) {
				// A branch can loop on one line forever (":a;ba"), and a
				// loop of s or G can grow the pattern space without end.
				if steps++; steps&63 == 0 && r.c.stopped() {
					return sedInterrupted, true
				}
				if len(ps)+len(r.hold) > maxSedSpace {
					return sedTooLarge, true
				}
				if size := len(ps) + len(r.hold); size > 1<<20 && size > int(r.space.Held()) {
					// a big pattern space: held against the memory budget
					if r.space.Set(int64(size)*2) != nil {
						return sedTooLarge, true
					}
				}
				cmd := r.prog[pc]
				pc++
				if cmd.name == '}' || cmd.name == ':' {
					continue
				}
				if !r.selects(cmd, ps) {
					if cmd.name == '{' {
						pc = cmd.jump
					}
					continue
				}
				switch cmd.name {
				case '{':
				case 'd':
					deleted = true
					break cycle
				case 'D':
					i := strings.IndexByte(ps, '\n')
					if i < 0 {
						deleted = true
						break cycle
					}
					ps = ps[i+1:]
					r.flushAppended()
					restart = true
					break cycle
				case 'p':
					r.out.WriteString(ps + string(r.delim))
				case 'P':
					first, _, _ := strings.Cut(ps, "\n")
					r.out.WriteString(first + string(r.delim))
				case '=':
					r.out.WriteString(strconv.Itoa(r.n) + "\n")
				case 'l':
					r.out.WriteString(sedList(ps) + "\n")
				case 'F':
					r.out.WriteString("-\n")
				case 'z':
					ps = ""
				case 'n':
					if !r.quiet {
						r.emit(ps)
					}
					if r.last() {
						r.flushAppended()
						return 0, false
					}
					r.flushAppended()
					ps = r.lines[r.next]
					r.next++
					r.n++
				case 'N':
					if r.last() {
						// GNU prints the pattern space when there is no
						// next line.
						if !r.quiet {
							r.emit(ps)
						}
						r.flushAppended()
						return 0, false
					}
					r.flushAppended()
					ps += "\n" + r.lines[r.next]
					r.next++
					r.n++
				case 'h':
					r.hold = ps
				case 'H':
					r.hold += "\n" + ps
				case 'g':
					ps = r.hold
				case 'G':
					ps += "\n" + r.hold
				case 'x':
					ps, r.hold = r.hold, ps
				case 'b':
					pc = cmd.jump
				case 't':
					if subst {
						subst = false
						pc = cmd.jump
					}
				case 'T':
					if !subst {
						pc = cmd.jump
					} else {
						subst = false
					}
				case 'q':
					if !r.quiet {
						r.emit(ps)
					}
					r.flushAppended()
					return cmd.code, true
				case 'Q':
					return cmd.code, true
				case 's':
					re := cmd.re
					if cmd.reLast {
						re = r.lastRE
						if re == nil {
							r.c.out.Flush()
							fmt.Fprintln(r.c.env.Stderr, "sed: no previous regular expression")
							return 1, true
						}
					} else {
						r.lastRE = re
					}
					var did bool
					var tooLarge bool
					ps, did, tooLarge = substitute(cmd, re, ps)
					if tooLarge {
						return sedTooLarge, true
					}
					if did {
						subst = true
						if cmd.print {
							r.out.WriteString(ps + string(r.delim))
						}
						if cmd.wfile != "" {
							r.write(cmd.wfile, ps)
						}
					}
				case 'y':
					ps = transliterate(cmd, ps)
				case 'a':
					r.appended = append(r.appended, cmd.text+"\n")
				case 'i':
					r.out.WriteString(cmd.text + "\n")
				case 'c':
					if cmd.a2.kind == 0 || !cmd.inRange {
						r.out.WriteString(cmd.text + "\n")
					}
					deleted = true
					break cycle
				case 'r':
					if t := r.readFileText(cmd.text); t != "" {
						if !strings.HasSuffix(t, "\n") {
							t += "\n"
						}
						r.appended = append(r.appended, t)
					}
				case 'R':
					// One line of the file per use; without a position to
					// keep, the first line.
					if t := r.readFileText(cmd.text); t != "" {
						first, _, _ := strings.Cut(t, "\n")
						r.appended = append(r.appended, first+"\n")
					}
				case 'w':
					r.write(cmd.text, ps)
				case 'W':
					first, _, _ := strings.Cut(ps, "\n")
					r.write(cmd.text, first)
				}
			}
			if restart {
				continue
			}
			if !deleted && !r.quiet {
				r.emit(ps)
			}
			r.flushAppended()
		}
	}
	return 0, false
}

// sedList renders the pattern space as the l command does.
func sedList(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\':
			b.WriteString(`\\`)
		case ch == '\n':
			b.WriteString(`\n`)
		case ch == '\t':
			b.WriteString(`\t`)
		case ch < 32 || ch >= 127:
			fmt.Fprintf(&b, `\%03o`, ch)
		default:
			b.WriteByte(ch)
		}
	}
	return b.String() + "$"
}

// substitute applies an s command to line; tooLarge reports a result
// that would pass maxSedSpace (nothing past it is built).
func substitute(cmd *sedCommand, re *sedRE, line string) (out string, did, tooLarge bool) {
	locs := re.FindAllStringSubmatchIndex(line, -1)
	if len(locs) == 0 {
		return line, false, false
	}
	var b strings.Builder
	prev := 0
	for i, loc := range locs {
		nth := i + 1
		if cmd.nth > 0 && (nth < cmd.nth || (!cmd.global && nth > cmd.nth)) {
			continue
		}
		if cmd.nth == 0 && !cmd.global && i > 0 {
			break
		}
		b.WriteString(line[prev:loc[0]])
		expandRepl(&b, cmd.repl, line, loc)
		prev = loc[1]
		did = true
		if b.Len()+len(cmd.repl) > maxSedSpace {
			return "", false, true
		}
	}
	b.WriteString(line[prev:])
	return b.String(), did, false
}

// expandRepl writes a replacement: & the match, \1-\9 groups, \n \t, and
// GNU's case conversions \U \L (until \E) and \u \l (next character).
func expandRepl(b *strings.Builder, repl, line string, loc []int) {
	mode := byte(0) // 'U', 'L' or 0
	once := byte(0) // 'u', 'l' or 0
	put := func(s string) {
		if b.Len()+len(s) > maxSedSpace {
			return // substitute sees the bound passed; nothing more is built
		}
		if mode == 0 && once == 0 {
			b.WriteString(s) // (bytes that are not UTF-8 stay as they are)
			return
		}
		for _, r := range s {
			switch {
			case once == 'u':
				r = unicode.ToUpper(r)
				once = 0
			case once == 'l':
				r = unicode.ToLower(r)
				once = 0
			case mode == 'U':
				r = unicode.ToUpper(r)
			case mode == 'L':
				r = unicode.ToLower(r)
			}
			b.WriteRune(r)
		}
	}
	// a character of the replacement's text: its bytes as they are,
	// unless a case conversion applies
	putLit := func(r rune, raw string) {
		if r == utf8.RuneError || mode == 0 && once == 0 {
			if b.Len()+len(raw) <= maxSedSpace {
				b.WriteString(raw)
			}
			return
		}
		put(raw)
	}
	for i := 0; i < len(repl); i++ {
		ch := repl[i]
		switch {
		case ch == '&':
			put(line[loc[0]:loc[1]])
		case ch == '\\' && i+1 < len(repl):
			n := repl[i+1]
			i++
			switch {
			case n >= '0' && n <= '9':
				g := int(n - '0')
				if 2*g+1 < len(loc) && loc[2*g] >= 0 {
					put(line[loc[2*g]:loc[2*g+1]])
				}
			case n == 'n':
				b.WriteByte('\n')
			case n == 't':
				b.WriteByte('\t')
			case n == 'U' || n == 'L':
				mode = n
			case n == 'E':
				mode = 0
			case n == 'u' || n == 'l':
				once = n
			case n == 'x' && i+2 < len(repl) && escape.IsHex(repl[i+1]) && escape.IsHex(repl[i+2]):
				// \xHH: that byte
				v, _ := strconv.ParseUint(repl[i+1:i+3], 16, 8)
				b.WriteByte(byte(v))
				i += 2
			default:
				r, size := utf8.DecodeRuneInString(repl[i:])
				putLit(r, repl[i:i+size])
				i += size - 1
			}
		default:
			r, size := utf8.DecodeRuneInString(repl[i:])
			putLit(r, repl[i:i+size])
			i += size - 1
		}
	}
}

func transliterate(cmd *sedCommand, line string) string {
	var b strings.Builder
	for _, r := range line {
		out := r
		for i, f := range cmd.from {
			if f == r {
				out = cmd.to[i]
				break
			}
		}
		b.WriteRune(out)
	}
	return b.String()
}
