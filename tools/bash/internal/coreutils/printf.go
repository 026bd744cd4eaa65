package coreutils

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/escape"
)

// maxPrintfWidth bounds field widths and precisions so that a format such
// as %999999999s cannot allocate gigabytes.
const maxPrintfWidth = 1 << 20

// printfCmd implements bash's printf FORMAT [ARG...]: the format is reused
// while arguments remain; conversions %s %b %q %c %d %i %u %o %x %X %f %F
// %e %E %g %G %%, flags "-+ #0", width and precision (also "*").
func printfCmd(c *cmd, args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return c.errf(2, "usage: printf format [arguments]")
	}
	if args[0] == "-v" {
		return c.errf(2, "-v: only `printf -v NAME FORMAT ...` with a literal variable NAME is supported")
	}
	p := &printer{c: c, format: args[0], args: args[1:]}
	status := p.run()
	return c.done(status)
}

type printer struct {
	c      *cmd
	format string
	args   []string
	status int
	stop   bool // \c seen in %b
}

func (p *printer) nextArg() (string, bool) {
	if len(p.args) == 0 {
		return "", false
	}
	a := p.args[0]
	p.args = p.args[1:]
	return a, true
}

func (p *printer) run() int {
	for {
		consumed := len(p.args)
		if err := p.once(); err != nil {
			return p.c.errf(1, "%v", err)
		}
		if p.stop || len(p.args) == 0 || len(p.args) == consumed {
			return p.status
		}
		if p.c.stopped() {
			return 1
		}
	}
}

// once prints the format one time, consuming arguments.
func (p *printer) once() error {
	f := p.format
	out := p.c.out
	for i := 0; i < len(f); i++ {
		ch := f[i]
		switch ch {
		case '\\':
			s, n, stop := escape.Printf(f[i:], false)
			out.WriteString(s)
			i += n - 1
			if stop {
				p.stop = true
				return nil
			}
		case '%':
			n, err := p.conversion(f[i:])
			if err != nil {
				return err
			}
			if p.stop {
				return nil
			}
			i += n - 1
		default:
			out.WriteByte(ch)
		}
	}
	return nil
}

// conversion formats one %-directive at the start of f and returns its
// length.
func (p *printer) conversion(f string) (int, error) {
	i := 1
	if i < len(f) && f[i] == '%' {
		p.c.out.WriteByte('%')
		return 2, nil
	}
	var flags strings.Builder
	for i < len(f) && strings.IndexByte("-+ #0'", f[i]) >= 0 {
		if f[i] != '\'' {
			flags.WriteByte(f[i])
		}
		i++
	}
	width, prec := -1, -1
	var err error
	if i < len(f) && f[i] == '*' {
		a, _ := p.nextArg()
		width = int(p.intArg(a))
		if width < 0 {
			flags.WriteByte('-')
			width = -width
		}
		i++
	} else {
		start := i
		for i < len(f) && f[i] >= '0' && f[i] <= '9' {
			i++
		}
		if i > start {
			if width, err = strconv.Atoi(f[start:i]); err != nil {
				width = maxPrintfWidth + 1
			}
		}
	}
	if i < len(f) && f[i] == '.' {
		i++
		if i < len(f) && f[i] == '*' {
			a, _ := p.nextArg()
			prec = int(p.intArg(a))
			if prec < 0 {
				prec = -1
			}
			i++
		} else {
			start := i
			for i < len(f) && f[i] >= '0' && f[i] <= '9' {
				i++
			}
			prec = 0
			if i > start {
				if prec, err = strconv.Atoi(f[start:i]); err != nil {
					prec = maxPrintfWidth + 1
				}
			}
		}
	}
	// Length modifiers are accepted and ignored, as bash does.
	for i < len(f) && strings.IndexByte("hlLjzt", f[i]) >= 0 {
		i++
	}
	if i >= len(f) {
		return 0, fmt.Errorf("`%s': missing format character", f)
	}
	if width > maxPrintfWidth || prec > maxPrintfWidth {
		return 0, fmt.Errorf("field width or precision exceeds %d", maxPrintfWidth)
	}
	verb := f[i]
	spec := func(goVerb byte, stripZero bool) string {
		fl := flags.String()
		if stripZero {
			fl = strings.ReplaceAll(fl, "0", "")
		}
		s := "%" + fl
		if width >= 0 {
			s += strconv.Itoa(width)
		}
		if prec >= 0 {
			s += "." + strconv.Itoa(prec)
		}
		return s + string(goVerb)
	}
	out := p.c.out
	switch verb {
	case 's':
		a, _ := p.nextArg()
		fmt.Fprintf(out, spec('s', true), a)
	case 'b':
		a, _ := p.nextArg()
		s, _, stop := escape.Printf(a, true)
		fmt.Fprintf(out, spec('s', true), s)
		if stop {
			p.stop = true
		}
	case 'q':
		a, _ := p.nextArg()
		fmt.Fprintf(out, spec('s', true), shellQuote(a))
	case 'c':
		a, _ := p.nextArg()
		if a != "" {
			a = a[:1]
		}
		fmt.Fprintf(out, spec('s', true), a)
	case 'd', 'i':
		a, _ := p.nextArg()
		fmt.Fprintf(out, spec('d', false), p.intArg(a))
	case 'u':
		a, _ := p.nextArg()
		fmt.Fprintf(out, spec('d', false), uint64(p.intArg(a)))
	case 'o':
		a, _ := p.nextArg()
		fmt.Fprintf(out, spec('o', false), uint64(p.intArg(a)))
	case 'x', 'X':
		a, _ := p.nextArg()
		fmt.Fprintf(out, spec(verb, false), uint64(p.intArg(a)))
	case 'f', 'F', 'e', 'E', 'g', 'G':
		a, _ := p.nextArg()
		if prec < 0 {
			prec = 6
		}
		fmt.Fprintf(out, spec(verb, false), p.floatArg(a))
	default:
		return 0, fmt.Errorf("%%%c: invalid format character", verb)
	}
	return i + 1, nil
}

// intArg parses a numeric argument as bash does: decimal, 0x hex, 0 octal,
// or 'c / "c for a character code. Invalid input sets status 1.
func (p *printer) intArg(a string) int64 {
	s := strings.TrimSpace(a)
	if s == "" {
		return 0
	}
	if s[0] == '\'' || s[0] == '"' {
		if len(s) == 1 {
			return 0
		}
		r, _ := utf8.DecodeRuneInString(s[1:])
		return int64(r)
	}
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		if u, uerr := strconv.ParseUint(s, 0, 64); uerr == nil {
			return int64(u)
		}
		p.invalid(a)
		return 0
	}
	return n
}

func (p *printer) floatArg(a string) float64 {
	s := strings.TrimSpace(a)
	if s == "" {
		return 0
	}
	if s[0] == '\'' || s[0] == '"' {
		return float64(p.intArg(s))
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if n, ierr := strconv.ParseInt(s, 0, 64); ierr == nil {
			return float64(n)
		}
		p.invalid(a)
		return 0
	}
	return f
}

func (p *printer) invalid(a string) {
	p.c.out.Flush()
	fmt.Fprintf(p.c.env.Stderr, "printf: %s: invalid number\n", a)
	p.status = 1
}

// shellQuote quotes s so that bash reads it back as one word, like
// printf %q.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	ctrl := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			strings.IndexByte("_./:=@%^+,-", c) >= 0, c >= 0x80:
		case c < 0x20 || c == 0x7f:
			ctrl = true
			safe = false
		default:
			safe = false
		}
	}
	if safe {
		return s
	}
	var b strings.Builder
	if ctrl {
		b.WriteString("$'")
		for i := 0; i < len(s); i++ {
			switch c := s[i]; c {
			case '\n':
				b.WriteString(`\n`)
			case '\t':
				b.WriteString(`\t`)
			case '\r':
				b.WriteString(`\r`)
			case '\\', '\'':
				b.WriteByte('\\')
				b.WriteByte(c)
			default:
				if c < 0x20 || c == 0x7f {
					fmt.Fprintf(&b, `\%03o`, c)
				} else {
					b.WriteByte(c)
				}
			}
		}
		b.WriteByte('\'')
		return b.String()
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("_./:=@%^+,-", c) >= 0 || c >= 0x80) {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}
