package shell

import (
	"errors"
	"io/fs"
	"regexp"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// testClause evaluates [[ ... ]]: 0 true, 1 false, 2 an error.
func (sh *shell) testClause(c *syntax.TestClause) int {
	if sh.opts.xtrace {
		sh.xtraceLine("[[ " + sh.testTrace(c.X) + " ]]")
	}
	ok, err := sh.testExpr(c.X)
	if err != nil {
		sh.errorf("%s", err.Error())
		return 2
	}
	return b2status(!ok)
}

func (sh *shell) testTrace(x syntax.TestExpr) string {
	switch x := x.(type) {
	case *syntax.Word:
		return sh.expandString(x)
	case *syntax.BinaryTest:
		return sh.testTrace(x.X) + " " + x.Op.String() + " " + sh.testTrace(x.Y)
	case *syntax.UnaryTest:
		return x.Op.String() + " " + sh.testTrace(x.X)
	case *syntax.ParenTest:
		return "( " + sh.testTrace(x.X) + " )"
	}
	return ""
}

type testError struct{ msg string }

func (e *testError) Error() string { return e.msg }

func (sh *shell) testExpr(x syntax.TestExpr) (bool, error) {
	switch x := x.(type) {
	case *syntax.Word:
		if !sh.shopt.extglob && len(x.Parts) == 1 {
			if eg, ok := x.Parts[0].(*syntax.ExtGlob); ok && eg.Op == syntax.GlobExcept {
				// without extglob, [[ !(x) ]] negates a test of x
				inner := parseWordText(eg.Pattern.Value)
				return inner == nil || sh.expandString(inner) == "", nil
			}
		}
		return sh.expandString(x) != "", nil
	case *syntax.ParenTest:
		return sh.testExpr(x.X)
	case *syntax.UnaryTest:
		if x.Op == syntax.TsNot {
			ok, err := sh.testExpr(x.X)
			return !ok, err
		}
		w, _ := x.X.(*syntax.Word)
		arg := ""
		if w != nil {
			arg = sh.expandString(w)
		} else {
			ok, err := sh.testExpr(x.X)
			if err != nil {
				return false, err
			}
			arg = map[bool]string{true: "1", false: ""}[ok]
		}
		return sh.unaryTest(x.Op.String(), arg)
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.AndTest:
			ok, err := sh.testExpr(x.X)
			if err != nil || !ok {
				return false, err
			}
			return sh.testExpr(x.Y)
		case syntax.OrTest:
			ok, err := sh.testExpr(x.X)
			if err != nil || ok {
				return ok, err
			}
			return sh.testExpr(x.Y)
		}
		left := sh.testWord(x.X)
		switch x.Op {
		case syntax.TsMatch, syntax.TsMatchShort, syntax.TsNoMatch:
			pat := sh.testPattern(x.Y)
			m := sh.matchPattern(pat, left)
			return m == (x.Op != syntax.TsNoMatch), nil
		case syntax.TsReMatch:
			return sh.regexMatch(left, x.Y)
		}
		right := sh.testWord(x.Y)
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLss, syntax.TsLeq, syntax.TsGtr, syntax.TsGeq:
			a, err := sh.arithString(left)
			if err != nil {
				return false, err
			}
			b, err := sh.arithString(right)
			if err != nil {
				return false, err
			}
			return compareInts(x.Op.String(), a, b), nil
		}
		return sh.binaryTest(x.Op.String(), left, right)
	}
	return false, nil
}

func (sh *shell) testWord(x syntax.TestExpr) string {
	if w, ok := x.(*syntax.Word); ok {
		return sh.expandString(w)
	}
	return ""
}

func (sh *shell) testPattern(x syntax.TestExpr) string {
	if w, ok := x.(*syntax.Word); ok {
		return sh.expandPattern(w)
	}
	return ""
}

func compareInts(op string, a, b int64) bool {
	switch op {
	case "-eq":
		return a == b
	case "-ne":
		return a != b
	case "-lt":
		return a < b
	case "-le":
		return a <= b
	case "-gt":
		return a > b
	case "-ge":
		return a >= b
	}
	return false
}

// regexMatch evaluates [[ s =~ re ]]: quoted parts of re match
// literally; BASH_REMATCH gets the match and its groups.
func (sh *shell) regexMatch(s string, x syntax.TestExpr) (bool, error) {
	w, _ := x.(*syntax.Word)
	if w == nil {
		return false, nil
	}
	re := sh.regexText(w)
	rx, err := sh.compileRegex(re)
	if err != nil {
		// bash: an invalid regex is status 2
		return false, &testError{"syntax error in regular expression"}
	}
	m := rx.FindStringSubmatchIndex(s)
	if m == nil {
		sh.unsetVar("BASH_REMATCH", false)
		return false, nil
	}
	items := make([]arrayItem, 0, len(m)/2)
	for i := 0; i+1 < len(m); i += 2 {
		v := ""
		if m[i] >= 0 {
			v = s[m[i]:m[i+1]]
		}
		items = append(items, arrayItem{val: v})
	}
	if err := sh.setArray("BASH_REMATCH", items, false, false); err != nil {
		return false, err
	}
	return true, nil
}

// regexText expands the right side of =~: unquoted text stays a regular
// expression, quoted text is escaped to match literally.
func (sh *shell) regexText(w *syntax.Word) string {
	var b strings.Builder
	for i, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			v := x.Value
			if i == 0 && strings.HasPrefix(v, "~") {
				// a tilde expands to a literal directory
				e := sh.newStringExpander()
				v = e.tilde(v)
				b.WriteString(regexp.QuoteMeta(e.str()))
			}
			// backslash escapes keep their meaning in the regex
			b.WriteString(v)
		case *syntax.SglQuoted:
			v := x.Value
			if x.Dollar {
				v = ansiC(v)
			}
			b.WriteString(regexp.QuoteMeta(v))
		case *syntax.DblQuoted:
			e := sh.newStringExpander()
			e.word(x.Parts, true)
			b.WriteString(regexp.QuoteMeta(e.str()))
		default:
			e := sh.newStringExpander()
			e.word([]syntax.WordPart{p}, false)
			b.WriteString(e.str())
		}
	}
	return b.String()
}

// compileRegex compiles a POSIX extended regular expression (leftmost
// longest, as regcomp's).
func (sh *shell) compileRegex(re string) (*regexp.Regexp, error) {
	if strings.HasPrefix(re, "{") || strings.Contains(re, "({") || strings.Contains(re, "|{") {
		// regcomp: "Invalid preceding regular expression"
		return nil, errors.New("invalid preceding regular expression")
	}
	re = posixToGo(re)
	if sh.shopt.nocasematch {
		re = "(?i)" + re
	}
	rx, err := regexp.CompilePOSIX(re)
	if err != nil {
		rx, err = regexp.Compile(re)
		if err != nil {
			return nil, err
		}
		rx.Longest()
	}
	return rx, nil
}

// posixToGo adapts ERE details Go's syntax lacks: a ] first in a bracket
// expression, and \< \> word boundaries.
func posixToGo(re string) string {
	if !strings.ContainsAny(re, "[\\") {
		return re
	}
	var b strings.Builder
	for i := 0; i < len(re); i++ {
		c := re[i]
		switch {
		case c == '\\' && i+1 < len(re):
			switch re[i+1] {
			case '<', '>':
				b.WriteString(`\b`)
			default:
				b.WriteByte(c)
				b.WriteByte(re[i+1])
			}
			i++
		case c == '[':
			// copy the bracket expression, escaping what Go would read
			// differently
			j := i + 1
			b.WriteByte('[')
			if j < len(re) && re[j] == '^' {
				b.WriteByte('^')
				j++
			}
			if j < len(re) && re[j] == ']' {
				b.WriteString(`\]`)
				j++
			}
			for j < len(re) && re[j] != ']' {
				if re[j] == '[' && j+1 < len(re) && (re[j+1] == ':' || re[j+1] == '.' || re[j+1] == '=') {
					end := strings.Index(re[j+2:], string(re[j+1])+"]")
					if end >= 0 {
						b.WriteString(re[j : j+2+end+2])
						j = j + 2 + end + 2
						continue
					}
				}
				if re[j] == '\\' {
					b.WriteString(`\\`)
					j++
					continue
				}
				if re[j] == '[' {
					b.WriteString(`\[`)
					j++
					continue
				}
				b.WriteByte(re[j])
				j++
			}
			if j < len(re) {
				b.WriteByte(']')
			}
			i = j
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// unaryTest evaluates -e, -f, -z ... of test and [[ ]].
func (sh *shell) unaryTest(op, arg string) (bool, error) {
	switch op {
	case "-z":
		return arg == "", nil
	case "-n":
		return arg != "", nil
	case "-o":
		on, ok := sh.optionByName(arg)
		return ok && on, nil
	case "-v":
		return sh.isSetVar(arg), nil
	case "-R":
		v, _ := sh.lookup(arg)
		return v != nil && v.attrs&aNameref != 0 && v.set, nil
	case "-t":
		return false, nil
	}
	// file tests
	if arg == "" {
		return false, nil
	}
	abs := vfs.Abs(sh.dir, arg)
	if n, ok := strings.CutPrefix(abs, "/dev/fd/"); ok {
		fd, err := strconv.Atoi(n)
		if err == nil && sh.fds.get(fd) != nil {
			switch op {
			case "-e", "-r", "-w":
				return true, nil
			}
		}
	}
	fsys := sh.r.cfg.FS
	if fsys == nil {
		return false, nil
	}
	info, err := fsys.Stat(sh.r.ctx, abs)
	if err != nil {
		return false, nil
	}
	mode := info.Mode()
	switch op {
	case "-e", "-a":
		return true, nil
	case "-f":
		return mode.IsRegular(), nil
	case "-d":
		return mode.IsDir(), nil
	case "-s":
		return info.Size() > 0, nil
	case "-r":
		return true, nil
	case "-w":
		_, inWS := vfs.Rel(abs)
		return inWS || abs == vfs.TmpDir || strings.HasPrefix(abs, vfs.TmpDir+"/") || abs == "/dev/null", nil
	case "-x":
		return mode.IsDir() || mode&0o111 != 0, nil
	case "-c":
		return mode&fs.ModeCharDevice != 0, nil
	case "-p":
		return mode&fs.ModeNamedPipe != 0, nil
	case "-b", "-S", "-L", "-h", "-k", "-g", "-u", "-N":
		return false, nil
	case "-G", "-O":
		return true, nil
	}
	return false, nil
}

// isSetVar is test -v: a set variable, or a set element (-v a[1]).
func (sh *shell) isSetVar(name string) bool {
	if i := strings.IndexByte(name, '['); i > 0 && strings.HasSuffix(name, "]") {
		base, sub := name[:i], name[i+1:len(name)-1]
		v := sh.getVar(base)
		if v == nil || !v.set {
			return false
		}
		if sub == "@" || sub == "*" {
			return v.isArray() && (v.arr != nil && v.arr.len() > 0 || v.assc != nil && v.assc.len() > 0) || !v.isArray()
		}
		_, ok := sh.element(v, sh.expandSubscript(sub))
		return ok
	}
	if isSpecialName(name) && name != "_" {
		n, err := strconv.Atoi(name)
		if err == nil {
			return n <= len(sh.positional())
		}
		return sh.special(name).set
	}
	v := sh.getVar(name)
	if v == nil || !v.set {
		return false
	}
	if v.arr != nil {
		_, ok := v.arr.get(0)
		return ok
	}
	if v.assc != nil {
		_, ok := v.assc.get("0")
		return ok
	}
	return true
}

// binaryTest evaluates the string and file comparisons of test and [[ ]].
func (sh *shell) binaryTest(op, a, b string) (bool, error) {
	switch op {
	case "=", "==":
		return a == b, nil
	case "!=":
		return a != b, nil
	case "<":
		return a < b, nil
	case ">":
		return a > b, nil
	case "-nt", "-ot", "-ef":
		fsys := sh.r.cfg.FS
		if fsys == nil {
			return false, nil
		}
		ia, ea := fsys.Stat(sh.r.ctx, vfs.Abs(sh.dir, a))
		ib, eb := fsys.Stat(sh.r.ctx, vfs.Abs(sh.dir, b))
		switch op {
		case "-nt":
			return ea == nil && (eb != nil || ia.ModTime().After(ib.ModTime())), nil
		case "-ot":
			return eb == nil && (ea != nil || ia.ModTime().Before(ib.ModTime())), nil
		default:
			return ea == nil && eb == nil && vfs.Abs(sh.dir, a) == vfs.Abs(sh.dir, b), nil
		}
	}
	return false, &testError{op + ": binary operator expected"}
}
