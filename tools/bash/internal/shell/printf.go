package shell

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/escape"
	"github.com/demiurge-dev/demiurge/tools/bash/internal/timefmt"
)

// maxPrintfWidth bounds field widths and precisions.
const maxPrintfWidth = 1 << 20

// builtinPrintf is bash's printf [-v var] format [args].
func builtinPrintf(sh *shell, args []string) int {
	args = args[1:]
	varName := ""
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		if args[0] == "--" {
			args = args[1:]
			break
		}
		if args[0] == "-v" {
			if len(args) < 2 {
				return sh.usage("printf", "-v: option requires an argument")
			}
			varName = args[1]
			args = args[2:]
			continue
		}
		if strings.HasPrefix(args[0], "-v") {
			varName = args[0][2:]
			args = args[1:]
			continue
		}
		sh.errorf("printf: %s: invalid option", args[0])
		sh.usageLine("printf: usage: printf [-v var] format [arguments]")
		return 2
	}
	if varName != "" && !validRefTarget(varName) {
		sh.errorf("printf: `%s': not a valid identifier", varName)
		return 2
	}
	if len(args) == 0 {
		sh.usageLine("printf: usage: printf [-v var] format [arguments]")
		return 2
	}
	p := &printfer{sh: sh, format: args[0], args: args[1:]}
	p.run()
	if varName != "" {
		var err error
		if i := strings.IndexByte(varName, '['); i > 0 {
			base, sub := varName[:i], varName[i+1:len(varName)-1]
			if v := sh.getVar(base); v == nil || v.assc == nil {
				n, aerr := sh.arithString(sub)
				if aerr != nil {
					sh.errorf("%s", aerr.Error())
					return 1
				}
				sub = strconv.FormatInt(n, 10)
			} else {
				sub = sh.expandSubscript(sub)
			}
			err = sh.setElem(base, sub, p.b.String(), false)
		} else {
			err = sh.setString(varName, p.b.String(), false)
		}
		if err != nil {
			sh.errorf("printf: %s", err.Error())
			return 1
		}
		return p.status
	}
	if !sh.out("printf", p.b.String()) {
		return 1
	}
	return p.status
}

type printfer struct {
	sh     *shell
	format string
	args   []string
	b      strings.Builder
	status int
	stop   bool
}

func (p *printfer) next() (string, bool) {
	if len(p.args) == 0 {
		return "", false
	}
	a := p.args[0]
	p.args = p.args[1:]
	return a, true
}

func (p *printfer) run() {
	for {
		before := len(p.args)
		if !p.once() {
			return
		}
		if p.stop || len(p.args) == 0 || len(p.args) == before {
			return
		}
		if p.b.Len() > maxPrintfWidth*16 {
			p.sh.check()
		}
	}
}

// once prints the format once; false when an error ended printf.
func (p *printfer) once() bool {
	f := p.format
	for i := 0; i < len(f); i++ {
		c := f[i]
		switch c {
		case '\\':
			s, n, stop := escape.Printf(f[i:], false)
			p.b.WriteString(s)
			i += n - 1
			if stop {
				p.stop = true
				return true
			}
		case '%':
			n, ok := p.conv(f[i:])
			if !ok {
				return false
			}
			if p.stop {
				return true
			}
			i += n - 1
		default:
			p.b.WriteByte(c)
		}
	}
	return true
}

// conv formats one directive at the start of f and returns its length.
func (p *printfer) conv(f string) (int, bool) {
	if len(f) > 1 && f[1] == '%' {
		p.b.WriteByte('%')
		return 2, true
	}
	i := 1
	flags := ""
	for i < len(f) && strings.IndexByte("-+ #0'", f[i]) >= 0 {
		if f[i] != '\'' {
			flags += string(f[i])
		}
		i++
	}
	width, prec := -1, -1
	if i < len(f) && f[i] == '*' {
		a, _ := p.next()
		width = int(p.intArg(a))
		if width < 0 {
			flags += "-"
			width = -width
		}
		i++
	} else {
		start := i
		for i < len(f) && f[i] >= '0' && f[i] <= '9' {
			i++
		}
		if i > start {
			n, err := strconv.Atoi(f[start:i])
			if err != nil {
				n = maxPrintfWidth + 1
			}
			width = n
		}
	}
	if i < len(f) && f[i] == '.' {
		i++
		prec = 0
		if i < len(f) && f[i] == '*' {
			a, _ := p.next()
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
			if i > start {
				n, err := strconv.Atoi(f[start:i])
				if err != nil {
					n = maxPrintfWidth + 1
				}
				prec = n
			}
		}
	}
	if width > maxPrintfWidth || prec > maxPrintfWidth {
		p.sh.errorf("printf: field width or precision exceeds %d", maxPrintfWidth)
		p.status = 1
		return 0, false
	}
	// %(fmt)T
	if i < len(f) && f[i] == '(' {
		end := strings.IndexByte(f[i:], ')')
		if end < 0 || i+end+1 >= len(f) || f[i+end+1] != 'T' {
			p.sh.errorf("printf: `(': invalid format character")
			p.status = 1
			return 0, false
		}
		tf := f[i+1 : i+end]
		a, _ := p.next()
		ts := p.timeFormat(tf, a)
		if len(ts) > 127 {
			ts = "" // bash's strftime buffer holds 128 bytes
		}
		p.pad(ts, flags, width, prec, true)
		return i + end + 2, true
	}
	for i < len(f) && strings.IndexByte("hlLjzt", f[i]) >= 0 {
		i++
	}
	if i >= len(f) {
		p.sh.errorf("printf: `%s': missing format character", f)
		p.status = 1
		return 0, false
	}
	verb := f[i]
	switch verb {
	case 's':
		a, _ := p.next()
		p.pad(a, flags, width, prec, true)
	case 'b':
		a, _ := p.next()
		s, _, stop := escape.Printf(a, true)
		p.pad(s, flags, width, prec, true)
		if stop {
			p.stop = true
		}
	case 'q':
		a, _ := p.next()
		p.pad(printfQuote(a), flags, width, prec, true)
	case 'Q':
		a, _ := p.next()
		if prec >= 0 && prec < len(a) {
			a = a[:prec]
		}
		p.pad(printfQuote(a), flags, width, -1, true)
	case 'c':
		a, _ := p.next()
		if a != "" {
			a = a[:1] // the first byte, as bash (not the first character)
		}
		p.pad(a, flags, width, -1, true)
	case 'd', 'i':
		a, ok := p.next()
		n := int64(0)
		if ok {
			n = p.intArg(a)
		}
		p.b.WriteString(fmt.Sprintf(spec(flags, width, prec, 'd'), n))
	case 'u', 'o', 'x', 'X':
		a, ok := p.next()
		n := uint64(0)
		if ok {
			n = p.uintArg(a)
		}
		v := verb
		if v == 'u' {
			v = 'd'
		}
		fl := flags
		if n == 0 {
			// C prints no 0x for zero
			fl = strings.ReplaceAll(fl, "#", "")
		}
		p.b.WriteString(fmt.Sprintf(spec(fl, width, prec, v), n))
	case 'f', 'F', 'e', 'E', 'g', 'G', 'a', 'A':
		a, ok := p.next()
		x := 0.0
		if ok {
			x = p.floatArg(a)
		}
		v := verb
		if v == 'F' {
			v = 'f'
		}
		if v == 'a' || v == 'A' {
			v = map[byte]byte{'a': 'x', 'A': 'X'}[v]
		}
		s := fmt.Sprintf(spec(flags, width, prec, v), x)
		if math.IsInf(x, 0) || math.IsNaN(x) {
			s = strings.ToLower(s)
			if verb == 'F' || verb == 'E' || verb == 'G' || verb == 'A' {
				s = strings.ToUpper(s)
			}
		}
		p.b.WriteString(s)
	default:
		p.sh.errorf("printf: `%c': invalid format character", verb)
		p.status = 1
		return 0, false
	}
	return i + 1, true
}

// spec builds a Go format for a C directive.
func spec(flags string, width, prec int, verb byte) string {
	s := "%" + flags
	if width >= 0 {
		s += strconv.Itoa(width)
	}
	if prec >= 0 {
		s += "." + strconv.Itoa(prec)
	}
	return s + string(verb)
}

// pad writes s with the width and precision of a %s (in bytes, as C).
func (p *printfer) pad(s, flags string, width, prec int, str bool) {
	if prec >= 0 && prec < len(s) {
		s = s[:prec]
	}
	if width > len(s) {
		fill := strings.Repeat(" ", width-len(s))
		if strings.Contains(flags, "-") {
			s += fill
		} else {
			s = fill + s
		}
	}
	p.b.WriteString(s)
}

// intArg reads a numeric argument: decimal, 0x, 0 octal, 'c (a
// character's code); an invalid one is reported and counts as what could
// be read.
func (p *printfer) intArg(a string) int64 {
	s := strings.TrimLeft(a, " \t\n")
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
	if err == nil {
		return n
	}
	if numErr(err) == strconv.ErrRange {
		p.sh.errorf("printf: warning: %s: Numerical result out of range", a)
		if strings.HasPrefix(s, "-") {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	var ne *strconv.NumError
	_ = ne
	// the longest valid prefix
	j := 0
	if j < len(s) && (s[j] == '-' || s[j] == '+') {
		j++
	}
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	v, _ := strconv.ParseInt(s[:j], 10, 64)
	if numErr(err) == strconv.ErrRange {
		p.sh.errorf("printf: %s: Numerical result out of range", a)
		if strings.HasPrefix(s, "-") {
			v = math.MinInt64
		} else {
			v = math.MaxInt64
		}
	} else {
		p.sh.errorf("printf: %s: invalid number", a)
	}
	p.status = 1
	return v
}

// uintArg reads an argument of %u %o %x: a negative number wraps, as
// strtoumax does.
func (p *printfer) uintArg(a string) uint64 {
	s := strings.TrimLeft(a, " \t\n")
	if s == "" || s[0] == '\'' || s[0] == '"' {
		return uint64(p.intArg(a))
	}
	neg := false
	body := s
	if body[0] == '-' || body[0] == '+' {
		neg = body[0] == '-'
		body = body[1:]
	}
	u, err := strconv.ParseUint(body, 0, 64)
	if err != nil {
		if numErr(err) == strconv.ErrRange {
			p.sh.errorf("printf: warning: %s: Numerical result out of range", a)
			return math.MaxUint64
		}
		return uint64(p.intArg(a))
	}
	if neg {
		return -u
	}
	return u
}

func numErr(err error) error {
	if ne, ok := err.(*strconv.NumError); ok {
		return ne.Err
	}
	return err
}

func (p *printfer) floatArg(a string) float64 {
	s := strings.TrimSpace(a)
	if s == "" {
		return 0
	}
	if s[0] == '\'' || s[0] == '"' {
		return float64(p.intArg(s))
	}
	f, err := strconv.ParseFloat(s, 64)
	if err == nil {
		return f
	}
	if n, ierr := strconv.ParseInt(s, 0, 64); ierr == nil {
		return float64(n)
	}
	p.sh.errorf("printf: %s: invalid number", a)
	p.status = 1
	return 0
}

// timeFormat is %(fmt)T: strftime of the argument (seconds; -1 or none:
// now, -2: the shell's start).
func (p *printfer) timeFormat(tf, a string) string {
	var t time.Time
	switch strings.TrimSpace(a) {
	case "", "-1":
		t = p.sh.now()
	case "-2":
		t = p.sh.r.start
	default:
		n := p.intArg(a)
		t = time.Unix(n, 0)
	}
	if tf == "" {
		tf = "%X"
	}
	defer func() {}()
	tz := "UTC"
	if v, ok := p.sh.varValue("TZ"); ok && v != "" {
		tz = v
	}
	if loc, err := time.LoadLocation(tz); err == nil {
		t = t.In(loc)
	} else {
		t = t.UTC()
	}
	return timefmt.Strftime(tf, t)
}

// printfQuote is printf %q: backslashes before specials, $'...' for
// control characters, ” for the empty string.
func printfQuote(s string) string {
	if s == "" {
		return "''"
	}
	if needsANSIQuote(s) {
		return ansiQuote(s)
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isAlnum(c), c >= 0x80, strings.IndexByte("_./:=@%^+,-", c) >= 0:
			if c == '=' && i == 0 || c == '%' && false {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		case c == '~' && i > 0:
			b.WriteByte(c)
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String()
}
