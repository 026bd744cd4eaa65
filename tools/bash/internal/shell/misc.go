package shell

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/timefmt"
)

// xtraceQuote quotes a word as set -x shows it.
func xtraceQuote(s string) string {
	if s == "" {
		return "''"
	}
	if needsANSIQuote(s) {
		return ansiQuote(s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isAlnum(c) || strings.IndexByte("_./:=@%+,-^", c) >= 0 || c >= 0x80) {
			return aliasQuote(s)
		}
	}
	return s
}

// xtracePrefix is PS4, expanded, its first character repeated for each
// level of subshell.
func (sh *shell) xtracePrefix() string {
	ps4, ok := sh.varValue("PS4")
	if !ok {
		return ""
	}
	if strings.ContainsAny(ps4, "$`\\") {
		// no trace of PS4's own expansion
		sh.opts.xtrace = false
		ps4 = sh.expandPS4(ps4)
		sh.opts.xtrace = true
	}
	if ps4 == "" {
		return ""
	}
	_, n := firstRune(ps4)
	lvl := sh.level + sh.evalDepth
	if sh.sourceDepth > 0 {
		lvl += sh.sourceDepth
	}
	return strings.Repeat(ps4[:n], lvl) + ps4
}

// expandPS4 expands PS4; an expansion that fails (PS4='$((1/0))') is
// reported and PS4 used as it is, as bash does: the command still runs.
func (sh *shell) expandPS4(ps4 string) (out string) {
	defer func() {
		if p := recover(); p != nil {
			if fp, ok := p.(fatalPanic); ok && !fp.exit {
				out = ps4
				return
			}
			panic(p)
		}
	}()
	return sh.promptExpand(ps4)
}

func firstRune(s string) (rune, int) {
	for i, r := range s {
		_ = i
		return r, len(string(r))
	}
	return 0, 0
}

// xtraceLine writes one line of set -x.
func (sh *shell) xtraceLine(line string) {
	if !sh.opts.xtrace {
		return
	}
	fd := 2
	if v, ok := sh.varValue("BASH_XTRACEFD"); ok {
		if n, err := strconv.Atoi(v); err == nil && sh.fds.get(n) != nil {
			fd = n
		}
	}
	f := sh.fds.get(fd)
	if f == nil || f.w == nil {
		return
	}
	prefix := sh.xtracePrefix()
	f.w.Write([]byte(prefix + line + "\n"))
}

func (sh *shell) xtrace(s string) {
	if sh.opts.xtrace {
		sh.xtraceLine(s)
	}
}

func (sh *shell) xtraceArgs(args []string) {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = xtraceQuote(a)
	}
	sh.xtraceLine(strings.Join(parts, " "))
}

func (sh *shell) xtraceAssigns(assigns []tempAssign) {
	for _, a := range assigns {
		op := "="
		if a.append {
			op = "+="
		}
		sh.xtraceLine(a.name + op + xtraceQuote(a.val))
	}
}

// timeClause runs `time cmd`: the command, then its times on stderr (the
// sandbox's clock for real; user and sys are not measured).
func (sh *shell) timeClause(c *syntax.TimeClause) {
	start := sh.now()
	if c.Stmt != nil {
		sh.stmt(c.Stmt)
	} else {
		sh.status = 0
	}
	real := sh.now().Sub(start)
	format, ok := sh.varValue("TIMEFORMAT")
	if !ok {
		format = "\nreal\t%3lR\nuser\t%3lU\nsys\t%3lS"
	}
	if c.PosixFormat {
		format = "real %2R\nuser %2U\nsys %2S"
	}
	sh.writeErr(timeFormat(format, real) + "\n")
}

// timeFormat expands TIMEFORMAT: %[p][l]R, U, S, P, %%.
func timeFormat(f string, real time.Duration) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		if f[i] == '%' {
			b.WriteByte('%')
			continue
		}
		prec := 3
		if f[i] >= '0' && f[i] <= '9' {
			prec = int(f[i] - '0')
			if prec > 3 {
				prec = 3
			}
			i++
		}
		long := false
		if i < len(f) && f[i] == 'l' {
			long = true
			i++
		}
		if i >= len(f) {
			break
		}
		var d time.Duration
		switch f[i] {
		case 'R':
			d = real
		case 'U', 'S':
		case 'P':
			b.WriteString(strconv.FormatFloat(0, 'f', prec, 64))
			continue
		default:
			b.WriteByte('%')
			b.WriteByte(f[i])
			continue
		}
		secs := d.Seconds()
		if long {
			m := int(secs / 60)
			secs -= float64(m * 60)
			fmt.Fprintf(&b, "%dm%s", m, strconv.FormatFloat(secs, 'f', prec, 64)+"s")
		} else {
			b.WriteString(strconv.FormatFloat(secs, 'f', prec, 64))
		}
	}
	return b.String()
}

// promptExpand expands a prompt string's backslash escapes and then its
// parameters (${x@P}, PS4).
func (sh *shell) promptExpand(s string) string {
	var b strings.Builder
	// what an escape inserts is not expanded again (bash quotes it for
	// the double-quote expansion that follows)
	quoted := func(v string) {
		for j := 0; j < len(v); j++ {
			if strings.IndexByte("$`\"\\", v[j]) >= 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(v[j])
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'u':
			quoted(sh.r.cfg.User)
		case 'h', 'H':
			quoted(sh.r.cfg.Host)
		case 'w':
			quoted(sh.tildeDir(sh.dir, false))
		case 'W':
			d := sh.dir
			if d != "/" {
				d = d[strings.LastIndexByte(d, '/')+1:]
			}
			quoted(d)
		case '$':
			// the sandbox's user is not root
			b.WriteString(`\$`)
		case 'D':
			// \D{format}: strftime, %X when empty
			end := strings.IndexByte(s[i:], '}')
			if i+1 >= len(s) || s[i+1] != '{' || end < 0 {
				b.WriteString(`\D`)
				continue
			}
			f := s[i+2 : i+end]
			if f == "" {
				f = "%X"
			}
			quoted(timefmt.Strftime(f, sh.now()))
			i += end
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte(7)
		case 'e':
			b.WriteByte(27)
		case 's':
			b.WriteString("bash")
		case 'v':
			b.WriteString("5.2")
		case 'V':
			b.WriteString("5.2.15")
		case '\\':
			b.WriteByte('\\')
		case '[', ']':
		case 't':
			b.WriteString(sh.now().Format("15:04:05"))
		case 'T':
			b.WriteString(sh.now().Format("03:04:05"))
		case '@':
			b.WriteString(sh.now().Format("03:04 PM"))
		case 'A':
			b.WriteString(sh.now().Format("15:04"))
		case 'd':
			b.WriteString(sh.now().Format("Mon Jan 02"))
		case 'j':
			b.WriteString("0")
		case 'l':
			// the terminal's name; "tty" when stdin is none (never one
			// in the sandbox), as bash
			b.WriteString("tty")
		case '!':
			b.WriteString(strconv.Itoa(sh.promptHistNumber()))
		case '#':
			b.WriteString("1")
		default:
			if s[i] >= '0' && s[i] <= '7' {
				n := 0
				j := i
				for ; j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7'; j++ {
					n = n*8 + int(s[j]-'0')
				}
				b.WriteByte(byte(n))
				i = j - 1
				continue
			}
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	out := b.String()
	if !strings.ContainsAny(out, "$`") {
		return out
	}
	// parameter and command substitution, as in double quotes
	p := parsers.Get().(*syntax.Parser)
	defer parsers.Put(p)
	w, err := p.Document(strings.NewReader(out))
	if err != nil {
		return out
	}
	e := sh.newStringExpander()
	e.heredoc = true
	e.word(w.Parts, true)
	return e.str()
}

// funcText prints a function as declare -f and type do.
func (sh *shell) funcText(fn *funcDef) string {
	if fn == nil {
		return ""
	}
	var b strings.Builder
	printer := syntax.NewPrinter(syntax.Indent(4))
	b.WriteString(fn.name + " () \n")
	body := fn.body
	if blk, ok := body.Cmd.(*syntax.Block); ok && len(body.Redirs) == 0 {
		b.WriteString("{ \n")
		for _, st := range blk.Stmts {
			var sb strings.Builder
			printer.Print(&sb, st)
			for _, line := range strings.Split(strings.TrimRight(sb.String(), "\n"), "\n") {
				b.WriteString("    " + line + "\n")
			}
		}
		b.WriteString("}\n")
		return b.String()
	}
	var sb strings.Builder
	printer.Print(&sb, body)
	b.WriteString(strings.TrimRight(sb.String(), "\n") + "\n")
	return b.String()
}

// aliasRegion is text that came from expanding an alias.
type aliasRegion struct {
	start, end int
	name       string
	next       bool // the alias ends in a blank: the next word is expanded too
}

// expandAliases expands the aliases of a line's commands: the line's
// text is rewritten where a command word names an alias, and parsed
// again, as bash expands aliases when it reads a line.
func (sh *shell) expandAliases(stmts []*syntax.Stmt, text string) []*syntax.Stmt {
	if len(stmts) == 0 {
		return stmts
	}
	start := int(stmts[0].Pos().Offset())
	end := int(stmts[len(stmts)-1].End().Offset())
	if end > len(text) || start > end {
		return stmts
	}
	// include a here-document's body, which follows the line
	if nl := strings.IndexByte(text[end:], '\n'); nl >= 0 {
		end += nl
	} else {
		end = len(text)
	}
	line := int(stmts[0].Pos().Line())
	prefix := strings.Repeat("\n", max(line-1, 0))
	chunk := text[start:end]
	var regions []aliasRegion
	// the same statements, their offsets in prefix+chunk
	p := parsers.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(prefix+chunk), "")
	parsers.Put(p)
	if err != nil {
		return stmts
	}
	cur := f.Stmts
	for iter := 0; iter < 200; iter++ {
		w, name, ok := sh.findAliasWord(cur, regions, len(prefix))
		if !ok {
			return cur
		}
		ws, we := int(w.Pos().Offset())-len(prefix), int(w.End().Offset())-len(prefix)
		if ws < 0 || we > len(chunk) || ws > we {
			return cur
		}
		val := sh.aliases.m[name]
		chunk = chunk[:ws] + val + chunk[we:]
		delta := len(val) - (we - ws)
		for i := range regions {
			if regions[i].start >= we {
				regions[i].start += delta
				regions[i].end += delta
			} else if regions[i].end >= we {
				regions[i].end += delta
			}
		}
		next := strings.HasSuffix(val, " ") || strings.HasSuffix(val, "\t")
		regions = append(regions, aliasRegion{start: ws, end: ws + len(val), name: name, next: next})
		p := parsers.Get().(*syntax.Parser)
		f, err := p.Parse(strings.NewReader(prefix+chunk), "")
		parsers.Put(p)
		if err != nil {
			sh.errorf("%s", syntaxMessage(err))
			sh.status = 2
			return nil
		}
		cur = f.Stmts
	}
	return cur
}

// findAliasWord finds the first word of the statements, in source order,
// that is in command position, names an alias, and is not the alias
// being expanded where it stands.
func (sh *shell) findAliasWord(stmts []*syntax.Stmt, regions []aliasRegion, base int) (*syntax.Word, string, bool) {
	var found *syntax.Word
	var foundName string
	best := -1
	consider := func(w *syntax.Word) {
		if w == nil || len(w.Parts) != 1 {
			return
		}
		lit, ok := w.Parts[0].(*syntax.Lit)
		if !ok || strings.ContainsAny(lit.Value, "\\'\"$`") {
			return
		}
		name := lit.Value
		if _, ok := sh.aliases.m[name]; !ok {
			return
		}
		off := int(w.Pos().Offset()) - base
		for _, r := range regions {
			if off >= r.start && off < r.end && r.name == name {
				return
			}
		}
		if best < 0 || off < best {
			best, found, foundName = off, w, name
		}
	}
	syntax.Walk(&syntax.File{Stmts: stmts}, func(n syntax.Node) bool {
		ce, ok := n.(*syntax.CallExpr)
		if !ok || len(ce.Args) == 0 {
			return true
		}
		consider(ce.Args[0])
		// after an alias ending in a blank, the next word too
		for i := 1; i < len(ce.Args); i++ {
			prevStart := int(ce.Args[i-1].Pos().Offset()) - base
			prevEnd := int(ce.Args[i-1].End().Offset()) - base
			curStart := int(ce.Args[i].Pos().Offset()) - base
			for _, r := range regions {
				if r.next && prevStart >= r.start && prevEnd <= r.end && curStart >= r.end {
					consider(ce.Args[i])
					break
				}
			}
		}
		return true
	})
	return found, foundName, found != nil
}
