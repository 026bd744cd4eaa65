package coreutils

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// sedCmd implements a sed subset on stdin: sed [-n] [-E|-r] [-e SCRIPT]...
// [SCRIPT], with commands s (flags g p i I N), d, p, q, y, =, a, i, c,
// addresses N, $, /re/, ranges A,B and negation !, separated by ';' or
// newlines.
func sedCmd(c *cmd, args []string) int {
	quiet, ere := false, false
	var scripts []string
	rest, st, ok := c.flags(args, "e", 1, func(f, v string) error {
		switch f {
		case "-n", "--quiet", "--silent":
			quiet = true
		case "-E", "-r", "--regexp-extended":
			ere = true
		case "-e", "--expression":
			scripts = append(scripts, v)
		case "-u", "--unbuffered", "-s", "--separate":
		case "-i", "--in-place":
			return errors.New("-i: filesystem access disabled")
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if scripts == nil {
		if len(rest) == 0 {
			return c.errf(1, "usage: sed [-n] [-E] SCRIPT (input is read from stdin)")
		}
		scripts = []string{rest[0]}
		rest = rest[1:]
	}
	if st, ok := c.operands(rest); !ok {
		return st
	}
	prog, err := parseSed(strings.Join(scripts, "\n"), ere)
	if err != nil {
		return c.errf(1, "-e expression #1: %v", err)
	}
	return c.done(runSed(c, prog, quiet))
}

type sedAddr struct {
	kind int // 0 none, 1 line, 2 last, 3 regex, 4 +N (relative end of a range)
	line int
	re   *regexp.Regexp
}

type sedCommand struct {
	a1, a2   sedAddr
	negate   bool
	inRange  bool
	rangeEnd int // last line of a "+N" range
	name     byte
	// s
	re     *regexp.Regexp
	repl   string
	global bool
	print  bool
	nth    int
	// y
	from, to []rune
	// a i c
	text string
	// q
	code int
}

func parseSed(script string, ere bool) ([]*sedCommand, error) {
	var cmds []*sedCommand
	p := &sedParser{s: script, ere: ere}
	for {
		p.skip(" \t\n;")
		if p.eof() {
			return cmds, nil
		}
		cmd := &sedCommand{}
		var err error
		if cmd.a1, err = p.addr(); err != nil {
			return nil, err
		}
		if cmd.a1.kind == 4 {
			return nil, errors.New("unexpected `+'")
		}
		if cmd.a1.kind != 0 && p.peek() == ',' {
			p.i++
			if cmd.a2, err = p.addr(); err != nil {
				return nil, err
			}
			if cmd.a2.kind == 0 {
				return nil, errors.New("unexpected `,'")
			}
		}
		p.skip(" \t")
		if p.peek() == '!' {
			cmd.negate = true
			p.i++
			p.skip(" \t")
		}
		if p.eof() {
			return nil, errors.New("missing command")
		}
		cmd.name = p.s[p.i]
		p.i++
		switch cmd.name {
		case 'd', 'p', '=':
		case 'q':
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
				cmd.code = n & 255 // an exit status is one byte
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
				p.i++
				if p.peek() == '\n' {
					p.i++
				}
			}
			end := strings.IndexByte(p.s[p.i:], '\n')
			if end < 0 {
				end = len(p.s) - p.i
			}
			cmd.text, _, _ = unescape(p.s[p.i:p.i+end], true)
			p.i += end
		default:
			return nil, fmt.Errorf("unknown command: `%c'", cmd.name)
		}
		p.skip(" \t")
		if !p.eof() && p.s[p.i] != ';' && p.s[p.i] != '\n' && p.s[p.i] != '}' {
			return nil, fmt.Errorf("extra characters after command")
		}
		cmds = append(cmds, cmd)
	}
}

type sedParser struct {
	s   string
	i   int
	ere bool
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

func (p *sedParser) addr() (sedAddr, error) {
	switch c := p.peek(); {
	case c >= '0' && c <= '9':
		start := p.i
		for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		n, err := strconv.Atoi(p.s[start:p.i])
		if err != nil {
			return sedAddr{}, fmt.Errorf("invalid line number %s", p.s[start:p.i])
		}
		return sedAddr{kind: 1, line: n}, nil
	case c == '$':
		p.i++
		return sedAddr{kind: 2}, nil
	case c == '+':
		p.i++
		start := p.i
		for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		n, err := strconv.Atoi(p.s[start:p.i])
		if err != nil {
			return sedAddr{}, errors.New("expected a number after '+'")
		}
		return sedAddr{kind: 4, line: n}, nil
	case c == '/' || c == '\\':
		if c == '\\' {
			p.i++
		}
		delim := p.peek()
		p.i++
		pat, err := p.delimited(delim)
		if err != nil {
			return sedAddr{}, err
		}
		icase := false
		if p.peek() == 'I' {
			icase = true
			p.i++
		}
		re, err := compileRegex(pat, p.ere, icase)
		if err != nil {
			return sedAddr{}, err
		}
		return sedAddr{kind: 3, re: re}, nil
	}
	return sedAddr{}, nil
}

// delimited reads up to the next unescaped delim; "\delim" yields delim
// and "\n" a newline.
func (p *sedParser) delimited(delim byte) (string, error) {
	var b strings.Builder
	for !p.eof() {
		c := p.s[p.i]
		if c == '\\' && p.i+1 < len(p.s) {
			n := p.s[p.i+1]
			switch {
			case n == delim && delim != '&':
				b.WriteByte(n)
			case n == 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
			p.i += 2
			continue
		}
		if c == delim {
			p.i++
			return b.String(), nil
		}
		if c == '\n' {
			break
		}
		b.WriteByte(c)
		p.i++
	}
	return "", fmt.Errorf("unterminated address regex or `s' command")
}

func (p *sedParser) subst(cmd *sedCommand) error {
	if p.eof() {
		return errors.New("unterminated `s' command")
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
		c := p.s[p.i]
		if c == '\\' && p.i+1 < len(p.s) {
			if p.s[p.i+1] == delim {
				b.WriteByte(delim)
			} else {
				b.WriteByte('\\')
				b.WriteByte(p.s[p.i+1])
			}
			p.i += 2
			continue
		}
		if c == delim {
			p.i++
			closed = true
			break
		}
		b.WriteByte(c)
		p.i++
	}
	if !closed {
		return errors.New("unterminated `s' command")
	}
	cmd.repl = b.String()
	icase := false
	for !p.eof() {
		switch f := p.s[p.i]; {
		case f == 'g':
			cmd.global = true
		case f == 'p':
			cmd.print = true
		case f == 'i' || f == 'I':
			icase = true
		case f >= '0' && f <= '9':
			start := p.i
			for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
				p.i++
			}
			cmd.nth, _ = strconv.Atoi(p.s[start:p.i])
			continue
		default:
			goto done
		}
		p.i++
	}
done:
	if pat == "" {
		return errors.New("no previous regular expression")
	}
	cmd.re, err = compileRegex(pat, p.ere, icase)
	return err
}

func (p *sedParser) translit(cmd *sedCommand) error {
	if p.eof() {
		return errors.New("unterminated `y' command")
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
	from, _, _ = unescape(from, true)
	to, _, _ = unescape(to, true)
	cmd.from, cmd.to = []rune(from), []rune(to)
	if len(cmd.from) != len(cmd.to) {
		return errors.New("strings for `y' command are different lengths")
	}
	return nil
}

func (a *sedAddr) match(n int, last bool, line string) bool {
	switch a.kind {
	case 1:
		return n == a.line
	case 2:
		return last
	case 3:
		return a.re.MatchString(line)
	}
	return true
}

func (cmd *sedCommand) selects(n int, last bool, line string) bool {
	var sel bool
	switch {
	case cmd.a1.kind == 0:
		sel = true
	case cmd.a2.kind == 0:
		sel = cmd.a1.match(n, last, line)
	case cmd.inRange:
		sel = true
		switch cmd.a2.kind {
		case 4:
			if n >= cmd.rangeEnd {
				cmd.inRange = false
			}
		case 1:
			if n >= cmd.a2.line {
				cmd.inRange = false
			}
			if n > cmd.a2.line {
				sel = false
			}
		default:
			if cmd.a2.match(n, last, line) {
				cmd.inRange = false
			}
		}
	case cmd.a1.match(n, last, line):
		sel = true
		cmd.inRange = true
		if cmd.a2.kind == 1 && cmd.a2.line <= n {
			cmd.inRange = false
		}
		if cmd.a2.kind == 2 && last {
			cmd.inRange = false
		}
		if cmd.a2.kind == 4 {
			cmd.rangeEnd = n + cmd.a2.line
			if cmd.a2.line == 0 {
				cmd.inRange = false
			}
		}
	}
	return sel != cmd.negate
}

func runSed(c *cmd, prog []*sedCommand, quiet bool) int {
	var lines []string
	var lastNoNL bool
	err := c.eachLine(func(l string, noNL bool) bool {
		lines = append(lines, l)
		lastNoNL = noNL
		return true
	})
	if err != nil {
		return c.readErr(err)
	}
	for n := 1; n <= len(lines); n++ {
		if n&1023 == 0 && c.stopped() {
			return c.errf(1, "interrupted")
		}
		line := lines[n-1]
		last := n == len(lines)
		var appendText []string
		deleted, quit, code := false, false, 0
		for _, cmd := range prog {
			if !cmd.selects(n, last, line) {
				continue
			}
			switch cmd.name {
			case 'd':
				deleted = true
			case 'p':
				c.out.WriteString(line)
				c.out.WriteByte('\n')
			case '=':
				fmt.Fprintf(c.out, "%d\n", n)
			case 'q':
				quit, code = true, cmd.code
			case 's':
				var did bool
				line, did = substitute(cmd, line)
				if did && cmd.print {
					c.out.WriteString(line)
					c.out.WriteByte('\n')
				}
			case 'y':
				line = transliterate(cmd, line)
			case 'a':
				appendText = append(appendText, cmd.text)
			case 'i':
				c.out.WriteString(cmd.text)
				c.out.WriteByte('\n')
			case 'c':
				if cmd.a2.kind == 0 || !cmd.inRange {
					c.out.WriteString(cmd.text)
					c.out.WriteByte('\n')
				}
				deleted = true
			}
			if deleted || quit {
				break
			}
		}
		if !deleted && !quiet {
			c.out.WriteString(line)
			if !(last && lastNoNL) || len(appendText) > 0 {
				c.out.WriteByte('\n')
			}
		}
		for _, t := range appendText {
			c.out.WriteString(t)
			c.out.WriteByte('\n')
		}
		if quit {
			return code
		}
	}
	return 0
}

func substitute(cmd *sedCommand, line string) (string, bool) {
	locs := cmd.re.FindAllStringSubmatchIndex(line, -1)
	if len(locs) == 0 {
		return line, false
	}
	var b strings.Builder
	prev := 0
	did := false
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
	}
	b.WriteString(line[prev:])
	return b.String(), did
}

func expandRepl(b *strings.Builder, repl, line string, loc []int) {
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c == '&':
			b.WriteString(line[loc[0]:loc[1]])
		case c == '\\' && i+1 < len(repl):
			n := repl[i+1]
			i++
			switch {
			case n >= '0' && n <= '9':
				g := int(n - '0')
				if 2*g+1 < len(loc) && loc[2*g] >= 0 {
					b.WriteString(line[loc[2*g]:loc[2*g+1]])
				}
			case n == 'n':
				b.WriteByte('\n')
			case n == 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(n)
			}
		default:
			b.WriteByte(c)
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
