package awk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

type regexpT = regexp.Regexp

// maxRegexBytes bounds a regular expression's source.
const maxRegexBytes = 64 * 1024

// compileRegex compiles an awk extended regular expression: Go's RE2
// syntax is nearly the same; '.' also matches a newline, and gawk's \y,
// \< and \> are word boundaries.
func compileRegex(src string) (*regexp.Regexp, error) {
	if len(src) > maxRegexBytes {
		return nil, fmt.Errorf("longer than %d bytes", maxRegexBytes)
	}
	var b strings.Builder
	b.WriteString("(?s)")
	inBracket := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inBracket {
			switch {
			case c == '[' && i+1 < len(src) && (src[i+1] == ':' || src[i+1] == '.' || src[i+1] == '='):
				end := strings.Index(src[i+2:], string(src[i+1])+"]")
				if end >= 0 {
					b.WriteString(src[i : i+2+end+2])
					i += end + 3
					continue
				}
				b.WriteString(`\[`)
			case c == ']':
				inBracket = false
				b.WriteByte(c)
			case c == '\\' && i+1 < len(src):
				b.WriteByte(c)
				b.WriteByte(src[i+1])
				i++
			case c == '[':
				b.WriteString(`\[`)
			default:
				b.WriteByte(c)
			}
			continue
		}
		switch c {
		case '\\':
			if i+1 >= len(src) {
				b.WriteString(`\\`)
				continue
			}
			i++
			switch n := src[i]; n {
			case 'y', '<', '>':
				b.WriteString(`\b`)
			case '/', '"', '&', '-', ',', '\'', '=', '!', '@', '#', '%', '`', '~', ':', ';':
				b.WriteString(regexp.QuoteMeta(string(n)))
			case 'n':
				b.WriteString(`\n`)
			case 't':
				b.WriteString(`\t`)
			case 'r':
				b.WriteString(`\r`)
			case 'f':
				b.WriteString(`\f`)
			case 'v':
				b.WriteString(`\v`)
			case 'a':
				b.WriteString(`\x07`)
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
		case '[':
			inBracket = true
			b.WriteByte(c)
			if i+1 < len(src) && src[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(src) && src[i+1] == ']' {
				b.WriteString(`\]`)
				i++
			}
		case '{':
			// An interval when well-formed, else a literal brace.
			j := i + 1
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == ',') {
				j++
			}
			if j < len(src) && src[j] == '}' && j > i+1 && src[i+1] != ',' && b.Len() > 4 {
				b.WriteString(src[i : j+1])
				i = j
			} else {
				b.WriteString(`\{`)
			}
		case '}':
			b.WriteString(`\}`)
		default:
			b.WriteByte(c)
		}
	}
	return regexp.Compile(b.String())
}

// regexpQuote quotes a single-character separator for use in a regexp.
func regexpQuote(s string) string { return regexp.QuoteMeta(s) }

// formatG formats n as C's %.<prec>g.
func formatG(n float64, prec int, upper, alt bool) string {
	verb := "g"
	if upper {
		verb = "G"
	}
	flags := ""
	if alt {
		flags = "#"
	}
	return fmt.Sprintf("%"+flags+"."+strconv.Itoa(prec)+verb, n)
}

// sprintfNum formats one number with a CONVFMT or OFMT format.
func sprintfNum(format string, n float64) string {
	in := &interp{}
	return in.sprintfValues(format, []value{num(n)}, func(v value) string { return formatNum(v.n, "%.6g") })
}

func (in *interp) sprintf(format string, args []value) string {
	return in.sprintfValues(format, args, in.toStr)
}

// sprintfValues is printf's formatting: %c %d %i %o %x %X %u %e %E %f %F
// %g %G %s %%, with flags -+ #0, width and precision (* takes an
// argument). Missing arguments are empty.
func (in *interp) sprintfValues(format string, args []value, toStr func(value) string) string {
	var b strings.Builder
	next := func() value {
		if len(args) == 0 {
			panic(&RuntimeError{Msg: "not enough arguments to satisfy format string"})
		}
		v := args[0]
		args = args[1:]
		return v
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		j := i + 1
		var flags strings.Builder
		for j < len(format) && strings.IndexByte("-+ #0", format[j]) >= 0 {
			flags.WriteByte(format[j])
			j++
		}
		width, prec := "", ""
		hasPrec := false
		if j < len(format) && format[j] == '*' {
			w := int(next().num())
			if w < 0 {
				flags.WriteByte('-')
				w = -w
			}
			width = strconv.Itoa(min(w, 1<<16))
			j++
		} else {
			for j < len(format) && format[j] >= '0' && format[j] <= '9' {
				width += string(format[j])
				j++
			}
		}
		if j < len(format) && format[j] == '.' {
			hasPrec = true
			j++
			if j < len(format) && format[j] == '*' {
				p := int(next().num())
				if p < 0 {
					hasPrec = false
				} else {
					prec = strconv.Itoa(min(p, 1<<16))
				}
				j++
			} else {
				for j < len(format) && format[j] >= '0' && format[j] <= '9' {
					prec += string(format[j])
					j++
				}
				if prec == "" {
					prec = "0"
				}
			}
		}
		// Length modifiers (h, l, L, q, j, z, t) mean nothing here.
		for j < len(format) && strings.IndexByte("hlLqjzt", format[j]) >= 0 {
			j++
		}
		if j >= len(format) {
			b.WriteString(format[i:])
			break
		}
		if n, err := strconv.Atoi(width); err == nil && n > 1<<16 {
			width = strconv.Itoa(1 << 16)
		}
		if n, err := strconv.Atoi(prec); err == nil && n > 1<<16 {
			prec = strconv.Itoa(1 << 16)
		}
		spec := "%" + flags.String() + width
		if hasPrec {
			spec += "." + prec
		}
		verb := format[j]
		switch verb {
		case 'd', 'i':
			n := next().num()
			if hasPrec && prec == "0" && n == 0 {
				b.WriteString(fmt.Sprintf("%"+flags.String()+width+"s", ""))
			} else {
				b.WriteString(formatInt(spec+"d", n))
			}
		case 'o', 'x', 'X', 'u':
			n := next().num()
			v := verb
			if v == 'u' {
				v = 'd'
			}
			if n < 0 {
				b.WriteString(fmt.Sprintf(spec+string(v), uint64(int64(n))))
			} else if n >= 1<<63 {
				b.WriteString(fmt.Sprintf(spec+string(v), uint64(n)))
			} else {
				b.WriteString(fmt.Sprintf(spec+string(v), int64(n)))
			}
		case 'c':
			v := next()
			var ch string
			if v.kind == kNum || v.kind == kStrNum {
				r := rune(int64(v.num()))
				if r < 0x80 {
					ch = string([]byte{byte(r)})
				} else {
					ch = string(r)
				}
			} else {
				s := toStr(v)
				if s != "" {
					_, size := utf8.DecodeRuneInString(s)
					ch = s[:size]
				}
			}
			b.WriteString(fmt.Sprintf("%"+flags.String()+width+"s", ch))
		case 's':
			s := toStr(next())
			if hasPrec {
				p, _ := strconv.Atoi(prec)
				if p < charLen(s) {
					s = string([]rune(s)[:p])
				}
			}
			b.WriteString(fmt.Sprintf("%"+flags.String()+width+"s", s))
		case 'e', 'E', 'f', 'F', 'g', 'G':
			n := next().num()
			if !hasPrec {
				spec += ".6"
			}
			v := verb
			if v == 'F' {
				v = 'f'
			}
			switch {
			case math.IsInf(n, 0) || math.IsNaN(n):
				s := "inf"
				if math.IsNaN(n) {
					s = "nan"
				}
				if n < 0 || math.Signbit(n) && math.IsNaN(n) {
					s = "-" + s
				} else if strings.Contains(flags.String(), "+") {
					s = "+" + s
				}
				if verb == 'E' || verb == 'F' || verb == 'G' {
					s = strings.ToUpper(s)
				}
				b.WriteString(fmt.Sprintf("%"+strings.ReplaceAll(flags.String(), "0", "")+width+"s", s))
			default:
				b.WriteString(fmt.Sprintf(spec+string(v), n))
			}
		default:
			// An unknown conversion is printed as it is.
			b.WriteString(format[i : j+1])
		}
		i = j
	}
	return b.String()
}

// formatInt formats n with an integer spec, falling back to %.0f beyond
// int64.
func formatInt(spec string, n float64) string {
	if math.IsNaN(n) || math.IsInf(n, 0) || math.Abs(n) >= 1<<63 {
		return fmt.Sprintf(strings.TrimSuffix(spec, "d")+".0f", math.Trunc(n))
	}
	return fmt.Sprintf(spec, int64(n))
}

func (in *interp) arg(e *builtinExpr, i int) value {
	return in.eval(e.args[i])
}

func (in *interp) strArg(e *builtinExpr, i int) string {
	return in.toStr(in.eval(e.args[i]))
}

func (in *interp) builtin(e *builtinExpr) value {
	switch e.name {
	case "length":
		if len(e.args) == 0 {
			return num(float64(charLen(in.line)))
		}
		if v, ok := e.args[0].(*varExpr); ok {
			c := in.cellOf(v)
			if c.arr != nil {
				return num(float64(c.arr.len()))
			}
			if c.ref != nil && c.ref.arr != nil {
				return num(float64(c.ref.arr.len()))
			}
		}
		return num(float64(charLen(in.strArg(e, 0))))
	case "substr":
		return str(in.substr(e))
	case "index":
		s, t := in.strArg(e, 0), in.strArg(e, 1)
		i := strings.Index(s, t)
		if i < 0 {
			return num(0)
		}
		return num(float64(charLen(s[:i]) + 1))
	case "split":
		return in.splitBuiltin(e)
	case "sub", "gsub":
		return in.subBuiltin(e, e.name == "gsub")
	case "match":
		return in.matchBuiltin(e)
	case "gensub":
		return str(in.gensub(e))
	case "sprintf":
		args := make([]value, len(e.args)-1)
		for i, a := range e.args[1:] {
			args[i] = in.eval(a)
		}
		out := in.sprintf(in.strArg(e, 0), args)
		in.checkLen(len(out))
		return str(out)
	case "sin":
		return num(math.Sin(in.arg(e, 0).num()))
	case "cos":
		return num(math.Cos(in.arg(e, 0).num()))
	case "atan2":
		return num(math.Atan2(in.arg(e, 0).num(), in.arg(e, 1).num()))
	case "exp":
		return num(math.Exp(in.arg(e, 0).num()))
	case "log":
		return num(math.Log(in.arg(e, 0).num()))
	case "sqrt":
		return num(math.Sqrt(in.arg(e, 0).num()))
	case "int":
		return num(math.Trunc(in.arg(e, 0).num()))
	case "rand":
		return num(in.rng.Float64())
	case "srand":
		prev := in.seed
		if len(e.args) == 0 {
			now := time.Now
			if in.cfg.Now != nil {
				now = in.cfg.Now
			}
			in.seed = float64(now().Unix())
		} else {
			in.seed = in.arg(e, 0).num()
		}
		in.rng = rand.New(rand.NewPCG(uint64(int64(in.seed)), 0))
		return num(prev)
	case "tolower":
		return str(strings.ToLower(in.strArg(e, 0)))
	case "toupper":
		return str(strings.ToUpper(in.strArg(e, 0)))
	case "system":
		cmdline := in.strArg(e, 0)
		if in.cfg.Exec == nil {
			in.fail("running commands is disabled")
		}
		in.stdout.Flush()
		for _, st := range in.outputs {
			if st.w != nil {
				if f, ok := st.w.(interface{ Flush() error }); ok {
					f.Flush()
				}
			}
		}
		return num(float64(in.cfg.Exec(in.ctx, cmdline, strings.NewReader(""), flushingWriter{in})))
	case "close":
		return num(float64(in.closeStream(in.strArg(e, 0))))
	case "fflush":
		in.stdout.Flush()
		return num(0)
	}
	in.fail("unknown function %s", e.name)
	return value{}
}

// substr(s, m[, n]): n characters from position m, both truncated to
// integers, clipped to the string; a start before 1 is 1 (as gawk).
func (in *interp) substr(e *builtinExpr) string {
	s := in.strArg(e, 0)
	m := in.arg(e, 1).num()
	length := charLen(s)
	if math.IsNaN(m) {
		return ""
	}
	start := math.Trunc(m)
	if start < 1 {
		start = 1
	}
	end := float64(length + 1) // exclusive, 1-based
	if len(e.args) == 3 {
		n := in.arg(e, 2).num()
		if math.IsNaN(n) || n < 1 {
			return ""
		}
		if !math.IsInf(n, 1) {
			end = start + math.Trunc(n)
		}
	}
	if end > float64(length+1) {
		end = float64(length + 1)
	}
	if start > float64(length) || end <= start {
		return ""
	}
	a, z := int(start)-1, int(end)-1
	if length == len(s) {
		return s[a:z]
	}
	rs := []rune(s)
	return string(rs[a:z])
}

func (in *interp) splitBuiltin(e *builtinExpr) value {
	s := in.strArg(e, 0)
	arr := in.arrayOf(e.args[1].(*varExpr))
	var parts []string
	if len(e.args) == 3 {
		if r, ok := e.args[2].(*regexLit); ok {
			parts = splitRegex(s, r.re)
		} else {
			fs := in.strArg(e, 2)
			parts = in.splitFS(s, fs, false, nil)
		}
	} else {
		parts = in.splitFS(s, in.toStr(in.globals[idxFS].v), false, nil)
	}
	arr.clear()
	for i, p := range parts {
		in.setElem(arr, strconv.Itoa(i+1), strnum(p))
	}
	return num(float64(len(parts)))
}

func splitRegex(s string, re *regexp.Regexp) []string {
	if s == "" {
		return nil
	}
	var out []string
	prev := 0
	for _, loc := range re.FindAllStringIndex(s, -1) {
		if loc[0] == loc[1] {
			continue
		}
		out = append(out, s[prev:loc[0]])
		prev = loc[1]
	}
	return append(out, s[prev:])
}

// subBuiltin is sub and gsub: in the replacement, & is the match, \& a
// literal &, \\& a backslash and the match; other backslashes are
// literal (gawk's rules).
func (in *interp) subBuiltin(e *builtinExpr, global bool) value {
	re := in.regex(e.args[0])
	repl := in.strArg(e, 1)
	var target expr = &fieldExpr{index: &numLit{v: 0}}
	if len(e.args) == 3 {
		target = e.args[2]
	}
	s := in.toStr(in.eval(target))
	locs := re.FindAllStringIndex(s, -1)
	if len(locs) == 0 {
		return num(0)
	}
	if !global {
		locs = locs[:1]
	}
	var b strings.Builder
	prev := 0
	for _, loc := range locs {
		in.checkLen(b.Len() + len(repl)*2)
		b.WriteString(s[prev:loc[0]])
		for i := 0; i < len(repl); i++ {
			c := repl[i]
			switch {
			case c == '\\' && i+1 < len(repl) && repl[i+1] == '&':
				b.WriteByte('&') // \& is a literal &
				i++
			case c == '\\' && i+2 < len(repl) && repl[i+1] == '\\' && repl[i+2] == '&':
				b.WriteByte('\\') // \\& is a backslash, then the match
				i++
			case c == '&':
				b.WriteString(s[loc[0]:loc[1]])
			default:
				b.WriteByte(c)
			}
		}
		prev = loc[1]
	}
	b.WriteString(s[prev:])
	in.assign(target, str(b.String()))
	return num(float64(len(locs)))
}

// matchBuiltin is match(s, re[, arr]): it sets RSTART and RLENGTH and,
// with arr (gawk), fills arr[0] with the match, arr[n] with group n, and
// arr[n, "start"] and arr[n, "length"] with their places.
func (in *interp) matchBuiltin(e *builtinExpr) value {
	s := in.strArg(e, 0)
	re := in.regex(e.args[1])
	var arr *array
	if len(e.args) == 3 {
		arr = in.arrayOf(e.args[2].(*varExpr))
		arr.clear()
	}
	loc := re.FindStringSubmatchIndex(s)
	if loc == nil {
		in.globals[idxRSTART].v = num(0)
		in.globals[idxRLENGTH].v = num(-1)
		return num(0)
	}
	start := float64(charLen(s[:loc[0]]) + 1)
	in.globals[idxRSTART].v = num(start)
	in.globals[idxRLENGTH].v = num(float64(charLen(s[loc[0]:loc[1]])))
	if arr != nil {
		subsep := in.toStr(in.globals[idxSUBSEP].v)
		for g := 0; 2*g+1 < len(loc); g++ {
			if loc[2*g] < 0 {
				continue // a group that took no part in the match
			}
			k := strconv.Itoa(g)
			in.setElem(arr, k, strnum(s[loc[2*g]:loc[2*g+1]]))
			in.setElem(arr, k+subsep+"start", num(float64(charLen(s[:loc[2*g]])+1)))
			in.setElem(arr, k+subsep+"length", num(float64(charLen(s[loc[2*g]:loc[2*g+1]]))))
		}
	}
	return num(start)
}

// gensub is gawk's gensub(re, repl, how[, target]): the target ($0 when
// absent) with the matches of re replaced, all of them when how starts
// with g or G, else the how-th; target itself is unchanged. In repl, \\0
// and & are the match, \\1 to \\9 its groups, \\& a literal &.
func (in *interp) gensub(e *builtinExpr) string {
	re := in.regex(e.args[0])
	repl := in.strArg(e, 1)
	howV := in.eval(e.args[2])
	var s string
	if len(e.args) == 4 {
		s = in.strArg(e, 3)
	} else {
		s = in.toStr(in.eval(&fieldExpr{index: &numLit{v: 0}}))
	}
	how := in.toStr(howV)
	global := strings.HasPrefix(how, "g") || strings.HasPrefix(how, "G")
	which := 1
	if !global {
		n := howV.num()
		if n >= 1 {
			which = int(min(n, 1<<30))
		} else if howV.kind != kNum || n < 1 {
			which = 1 // gawk warns and treats it as 1
		}
	}
	var b strings.Builder
	prev, count, replaced := 0, 0, false
	for _, loc := range re.FindAllStringSubmatchIndex(s, -1) {
		count++
		if !global && count != which {
			continue
		}
		in.checkLen(b.Len() + (loc[0] - prev) + len(repl)*2)
		b.WriteString(s[prev:loc[0]])
		group := func(g int) string {
			if 2*g+1 >= len(loc) || loc[2*g] < 0 {
				return ""
			}
			return s[loc[2*g]:loc[2*g+1]]
		}
		for i := 0; i < len(repl); i++ {
			c := repl[i]
			switch {
			case c == '\\' && i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9':
				b.WriteString(group(int(repl[i+1] - '0')))
				i++
			case c == '\\' && i+1 < len(repl) && repl[i+1] == '&':
				b.WriteByte('&')
				i++
			case c == '\\' && i+1 < len(repl) && repl[i+1] == '\\':
				b.WriteByte('\\')
				i++
			case c == '&':
				b.WriteString(group(0))
			default:
				b.WriteByte(c)
			}
		}
		prev, replaced = loc[1], true
		if !global {
			break
		}
	}
	if !replaced {
		return s
	}
	b.WriteString(s[prev:])
	in.checkLen(b.Len())
	return b.String()
}
