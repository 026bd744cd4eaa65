package coreutils

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/timefmt"
)

// findEntry is the entry find is looking at.
type findEntry struct {
	p, abs string
	info   *vfs.Info
	depth  int
	prune  bool
}

// findExpr is a compiled find expression: it reports whether an entry
// matches (and runs its actions).
type findExpr func(e *findEntry) bool

// findState is one run of find.
type findState struct {
	c                  *cmd
	args               []string
	i                  int
	maxDepth, minDepth int
	depthFirst         bool
	hasAction          bool
	status             int
	quit               bool
	batches            []*findBatch
}

// findBatch collects the paths of one "-exec ... {} +".
type findBatch struct {
	argv  []string // with "{}" where the paths go
	paths []string
}

// findCmd searches a tree: find [-H|-L|-P] [PATH...] [EXPRESSION]. It
// knows -name, -iname, -path, -ipath, -regex, -iregex, -type, -maxdepth,
// -mindepth, -depth, -newer, -size, -empty, -mtime, -mmin, -perm,
// -readable, -writable, -executable, -exec ... {} \; and +, -execdir,
// -print, -print0, -printf, -delete, -prune, -quit, -true, -false, !,
// -not, -a, -and, -o, -or and parentheses. Entries are visited in name
// order.
func findCmd(c *cmd, args []string) int {
	if !c.needFS() {
		return 1
	}
	for len(args) > 0 && (args[0] == "-H" || args[0] == "-L" || args[0] == "-P") {
		args = args[1:]
	}
	var starts []string
	for len(args) > 0 && !isFindOperator(args[0]) {
		starts = append(starts, args[0])
		args = args[1:]
	}
	if len(starts) == 0 {
		starts = []string{"."}
	}
	st := &findState{c: c, args: args, maxDepth: -1}
	var expr findExpr
	if len(args) > 0 {
		e, err := st.parseOr()
		if err == nil && st.i < len(st.args) {
			err = fmt.Errorf("unexpected %s", quote(st.args[st.i]))
			if st.args[st.i] == ")" {
				err = fmt.Errorf("invalid expression; you have too many ')'")
			}
		}
		if err != nil {
			return c.errf(1, "%v", err)
		}
		expr = e
	}
	if !st.hasAction {
		inner := expr
		expr = func(e *findEntry) bool {
			if inner == nil || inner(e) {
				c.out.WriteString(e.p + "\n")
			}
			return true
		}
	}
	for _, start := range starts {
		if st.quit || c.stopped() {
			break
		}
		st.run(start, expr)
	}
	for _, b := range st.batches {
		st.flush(b)
	}
	if c.stopped() && c.ctx.Err() != nil {
		return c.errf(1, "interrupted")
	}
	return c.done(st.status)
}

func isFindOperator(a string) bool {
	return (strings.HasPrefix(a, "-") && len(a) > 1) || a == "!" || a == "(" || a == ")" || a == ","
}

// run walks one starting point.
func (st *findState) run(start string, expr findExpr) {
	c := st.c
	var visit func(p, abs string, depth int) bool
	visit = func(p, abs string, depth int) bool {
		if st.quit || c.stopped() {
			return false
		}
		info, err := c.env.FS.Stat(c.ctx, abs)
		if err != nil {
			c.errf(1, "%s: %s", quote(p), why(err))
			st.status = 1
			return true
		}
		e := findEntry{p: p, abs: abs, info: info, depth: depth}
		inRange := depth >= st.minDepth && (st.maxDepth < 0 || depth <= st.maxDepth)
		if !st.depthFirst && inRange {
			expr(&e)
		}
		if info.IsDir() && !e.prune && (st.maxDepth < 0 || depth < st.maxDepth) {
			entries, err := c.env.FS.ReadDir(c.ctx, abs)
			if err != nil {
				c.errf(1, "%s: %s", quote(p), why(err))
				st.status = 1
			}
			for _, k := range entries {
				cp := p + "/" + k.Name()
				if strings.HasSuffix(p, "/") {
					cp = p + k.Name()
				}
				ca := abs + "/" + k.Name()
				if abs == "/" {
					ca = "/" + k.Name()
				}
				if !visit(cp, ca, depth+1) {
					return false
				}
			}
		}
		if st.depthFirst && inRange {
			expr(&e)
		}
		return true
	}
	visit(start, c.abs(start), 0)
}

// flush runs the command of a "-exec ... +" on the paths it collected.
func (st *findState) flush(b *findBatch) {
	if len(b.paths) == 0 {
		return
	}
	var argv []string
	for _, a := range b.argv {
		if a == "{}" {
			argv = append(argv, b.paths...)
		} else {
			argv = append(argv, a)
		}
	}
	b.paths = nil
	if code := st.exec(argv); code != 0 {
		st.status = 1
	}
}

// exec runs a command line of -exec.
func (st *findState) exec(argv []string) int {
	c := st.c
	if c.env.Exec == nil {
		c.errf(1, "running commands is disabled")
		return 126
	}
	c.out.Flush()
	return c.env.Exec(c.ctx, argv, strings.NewReader(""), c.env.Stdout, c.env.Stderr)
}

func (st *findState) peek() string {
	if st.i < len(st.args) {
		return st.args[st.i]
	}
	return ""
}

func (st *findState) parseOr() (findExpr, error) {
	left, err := st.parseAnd()
	if err != nil {
		return nil, err
	}
	for st.peek() == "-o" || st.peek() == "-or" || st.peek() == "," {
		comma := st.peek() == ","
		st.i++
		right, err := st.parseAnd()
		if err != nil {
			return nil, err
		}
		l := left
		if comma {
			left = func(e *findEntry) bool { l(e); return right(e) }
		} else {
			left = func(e *findEntry) bool { return l(e) || right(e) }
		}
	}
	return left, nil
}

func (st *findState) parseAnd() (findExpr, error) {
	left, err := st.parseUnary()
	if err != nil {
		return nil, err
	}
	for {
		p := st.peek()
		if p == "" || p == "-o" || p == "-or" || p == ")" || p == "," {
			return left, nil
		}
		if p == "-a" || p == "-and" {
			st.i++
		}
		right, err := st.parseUnary()
		if err != nil {
			return nil, err
		}
		l := left
		left = func(e *findEntry) bool { return l(e) && right(e) }
	}
}

func (st *findState) parseUnary() (findExpr, error) {
	switch st.peek() {
	case "!", "-not":
		st.i++
		inner, err := st.parseUnary()
		if err != nil {
			return nil, err
		}
		return func(e *findEntry) bool { return !inner(e) }, nil
	case "(":
		st.i++
		inner, err := st.parseOr()
		if err != nil {
			return nil, err
		}
		if st.peek() != ")" {
			return nil, fmt.Errorf("invalid expression; I was expecting to find a ')' somewhere but did not see one")
		}
		st.i++
		return inner, nil
	case "":
		return nil, fmt.Errorf("invalid expression; expected an expression")
	}
	return st.parsePrimary()
}

// arg returns the argument of the primary at st.i-1.
func (st *findState) arg(name string) (string, error) {
	if st.i >= len(st.args) {
		return "", fmt.Errorf("missing argument to %s", quote(name))
	}
	a := st.args[st.i]
	st.i++
	return a, nil
}

// cmpArg parses a [+-]N argument into a comparison.
func cmpArg(name, v string) (func(int64) bool, int64, error) {
	sign := byte(0)
	if v != "" && (v[0] == '+' || v[0] == '-') {
		sign, v = v[0], v[1:]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("invalid argument %s to %s", quote(v), quote(name))
	}
	switch sign {
	case '+':
		return func(x int64) bool { return x > n }, n, nil
	case '-':
		return func(x int64) bool { return x < n }, n, nil
	}
	return func(x int64) bool { return x == n }, n, nil
}

func (st *findState) parsePrimary() (findExpr, error) {
	c := st.c
	name := st.args[st.i]
	st.i++
	switch name {
	case "-name", "-iname", "-path", "-wholename", "-ipath", "-iwholename":
		pat, err := st.arg(name)
		if err != nil {
			return nil, err
		}
		fold := strings.HasPrefix(name, "-i")
		if fold {
			pat = strings.ToLower(pat)
		}
		if _, err := path.Match(pat, ""); err != nil {
			return nil, fmt.Errorf("%s: invalid pattern %s", name, quote(pat))
		}
		whole := strings.Contains(name, "path") || strings.Contains(name, "wholename")
		return func(e *findEntry) bool {
			s := e.p
			if !whole {
				s = path.Base(e.p)
				if e.depth == 0 {
					s = baseName(e.p)
				}
			}
			if fold {
				s = strings.ToLower(s)
			}
			return globMatch(pat, s)
		}, nil
	case "-regex", "-iregex":
		pat, err := st.arg(name)
		if err != nil {
			return nil, err
		}
		expr := "^(?:" + breToERE(pat) + ")$"
		if name == "-iregex" {
			expr = "(?i)" + expr
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("invalid regular expression %s: %v", quote(pat), err)
		}
		return func(e *findEntry) bool { return re.MatchString(e.p) }, nil
	case "-type", "-xtype":
		t, err := st.arg(name)
		if err != nil {
			return nil, err
		}
		var kinds []byte
		for k := range strings.SplitSeq(t, ",") {
			if len(k) != 1 || strings.IndexByte("fdlbcps", k[0]) < 0 {
				return nil, fmt.Errorf("unknown argument to -type: %s", k)
			}
			kinds = append(kinds, k[0])
		}
		return func(e *findEntry) bool {
			kind := byte('f')
			switch {
			case e.info.IsDir():
				kind = 'd'
			case e.info.Mode()&fs.ModeCharDevice != 0:
				kind = 'c'
			}
			return strings.IndexByte(string(kinds), kind) >= 0
		}, nil
	case "-maxdepth", "-mindepth":
		v, err := st.arg(name)
		if err != nil {
			return nil, err
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("invalid argument %s to %s", quote(v), quote(name))
		}
		if name == "-maxdepth" {
			st.maxDepth = n
		} else {
			st.minDepth = n
		}
		return func(*findEntry) bool { return true }, nil
	case "-depth", "-d":
		st.depthFirst = true
		return func(*findEntry) bool { return true }, nil
	case "-xdev", "-mount", "-noleaf", "-follow", "-ignore_readdir_race", "-daystart", "-nowarn":
		return func(*findEntry) bool { return true }, nil
	case "-true":
		return func(*findEntry) bool { return true }, nil
	case "-false":
		return func(*findEntry) bool { return false }, nil
	case "-readable", "-writable":
		return func(*findEntry) bool { return true }, nil
	case "-executable":
		return func(e *findEntry) bool { return e.info.Mode()&0o111 != 0 }, nil
	case "-user", "-group", "-uid", "-gid":
		v, err := st.arg(name)
		if err != nil {
			return nil, err
		}
		return func(*findEntry) bool { return v == c.user() || v == "1000" }, nil
	case "-nouser", "-nogroup":
		return func(*findEntry) bool { return false }, nil
	case "-empty":
		return func(e *findEntry) bool {
			if e.info.IsDir() {
				entries, err := c.env.FS.ReadDir(c.ctx, e.abs)
				return err == nil && len(entries) == 0
			}
			return e.info.Size() == 0
		}, nil
	case "-newer", "-anewer", "-cnewer":
		ref, err := st.arg(name)
		if err != nil {
			return nil, err
		}
		info, err := c.env.FS.Stat(c.ctx, c.abs(ref))
		if err != nil {
			return nil, fmt.Errorf("%s: %s", quote(ref), why(err))
		}
		t := info.ModTime()
		return func(e *findEntry) bool { return e.info.ModTime().After(t) }, nil
	case "-size":
		v, err := st.arg(name)
		if err != nil {
			return nil, err
		}
		unit := int64(512)
		if v != "" {
			switch v[len(v)-1] {
			case 'c':
				unit, v = 1, v[:len(v)-1]
			case 'w':
				unit, v = 2, v[:len(v)-1]
			case 'b':
				unit, v = 512, v[:len(v)-1]
			case 'k':
				unit, v = 1024, v[:len(v)-1]
			case 'M':
				unit, v = 1<<20, v[:len(v)-1]
			case 'G':
				unit, v = 1<<30, v[:len(v)-1]
			}
		}
		test, _, err := cmpArg(name, v)
		if err != nil {
			return nil, err
		}
		return func(e *findEntry) bool {
			return test((e.info.Size() + unit - 1) / unit)
		}, nil
	case "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin":
		v, err := st.arg(name)
		if err != nil {
			return nil, err
		}
		test, _, err := cmpArg(name, v)
		if err != nil {
			return nil, err
		}
		unit := 24 * time.Hour
		if strings.HasSuffix(name, "min") {
			unit = time.Minute
		}
		now := c.now()
		return func(e *findEntry) bool {
			age := now.Sub(e.info.ModTime())
			n := int64(age / unit)
			if unit == time.Minute && age%unit > 0 {
				n++ // -mmin rounds up
			}
			return test(n)
		}, nil
	case "-perm":
		v, err := st.arg(name)
		if err != nil {
			return nil, err
		}
		mode := byte(0)
		if v != "" && (v[0] == '-' || v[0] == '/') {
			mode, v = v[0], v[1:]
		}
		want, err := parseMode(v, 0, false)
		if err != nil {
			return nil, fmt.Errorf("invalid mode %s", quote(v))
		}
		return func(e *findEntry) bool {
			m := e.info.Mode().Perm()
			switch mode {
			case '-':
				return m&want == want
			case '/':
				return want == 0 || m&want != 0
			}
			return m == want
		}, nil
	case "-print":
		st.hasAction = true
		return func(e *findEntry) bool { c.out.WriteString(e.p + "\n"); return true }, nil
	case "-print0":
		st.hasAction = true
		return func(e *findEntry) bool { c.out.WriteString(e.p + "\x00"); return true }, nil
	case "-printf":
		st.hasAction = true
		format, err := st.arg(name)
		if err != nil {
			return nil, err
		}
		return func(e *findEntry) bool { c.out.WriteString(st.printf(format, e)); return true }, nil
	case "-ls":
		st.hasAction = true
		return func(e *findEntry) bool {
			fmt.Fprintf(c.out, "%6d %4d %s %3d %-8s %-8s %8d %s %s\n", 1, diskBlocks(e.info), modeString(e.info.Mode()), 1,
				c.user(), c.user(), e.info.Size(), lsTime(e.info.ModTime(), c.now()), e.p)
			return true
		}, nil
	case "-delete":
		st.hasAction = true
		st.depthFirst = true
		return func(e *findEntry) bool {
			if err := c.env.FS.Remove(c.ctx, e.abs, false); err != nil {
				c.errf(1, "cannot delete %s: %s", quote(e.p), why(err))
				st.status = 1
				return false
			}
			return true
		}, nil
	case "-prune":
		return func(e *findEntry) bool { e.prune = true; return true }, nil
	case "-quit":
		return func(e *findEntry) bool { st.quit = true; return true }, nil
	case "-exec", "-execdir", "-ok", "-okdir":
		st.hasAction = true
		var argv []string
		for {
			if st.i >= len(st.args) {
				return nil, fmt.Errorf("missing argument to %s", quote(name))
			}
			a := st.args[st.i]
			st.i++
			if a == ";" {
				break
			}
			if a == "+" && len(argv) > 0 && argv[len(argv)-1] == "{}" {
				b := &findBatch{argv: argv}
				st.batches = append(st.batches, b)
				return func(e *findEntry) bool {
					b.paths = append(b.paths, st.execPath(name, e))
					if len(b.paths) >= 1000 {
						st.flush(b)
					}
					return true
				}, nil
			}
			argv = append(argv, a)
		}
		if len(argv) == 0 {
			return nil, fmt.Errorf("missing argument to %s", quote(name))
		}
		return func(e *findEntry) bool {
			p := st.execPath(name, e)
			run := make([]string, len(argv))
			for i, a := range argv {
				run[i] = strings.ReplaceAll(a, "{}", p)
			}
			return st.exec(run) == 0
		}, nil
	}
	return nil, fmt.Errorf("unknown predicate %s", quote(name))
}

// execPath is the path -exec passes: the entry's, or for -execdir its
// name in its directory ("./name").
func (st *findState) execPath(primary string, e *findEntry) string {
	if strings.HasSuffix(primary, "dir") {
		return "./" + path.Base(e.p)
	}
	return e.p
}

// printf expands find's -printf directives.
func (st *findState) printf(format string, e *findEntry) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		ch := format[i]
		if ch == '\\' && i+1 < len(format) {
			i++
			switch format[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '0':
				b.WriteByte(0)
			case '\\':
				b.WriteByte('\\')
			default:
				b.WriteByte('\\')
				b.WriteByte(format[i])
			}
			continue
		}
		if ch != '%' || i+1 >= len(format) {
			b.WriteByte(ch)
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("-0123456789.", format[j]) >= 0 {
			j++
		}
		if j >= len(format) {
			b.WriteString(format[i:])
			break
		}
		width := format[i+1 : j]
		var v string
		switch format[j] {
		case 'p':
			v = e.p
		case 'f':
			v = path.Base(e.p)
		case 'h':
			v = path.Dir(e.p)
		case 'P':
			v = ""
			if e.depth > 0 {
				v = relativeToStart(e)
			}
		case 's':
			v = strconv.FormatInt(e.info.Size(), 10)
		case 'd':
			v = strconv.Itoa(e.depth)
		case 'y':
			v = "f"
			if e.info.IsDir() {
				v = "d"
			}
		case 'm':
			v = strconv.FormatUint(uint64(e.info.Mode().Perm()), 8)
		case 'M':
			v = modeString(e.info.Mode())
		case 'u', 'g':
			v = st.c.user()
		case 't':
			v = e.info.ModTime().Format("Mon Jan _2 15:04:05.0000000000 2006")
		case 'T':
			if j+1 < len(format) {
				j++
				v = timefmt.Strftime("%"+string(format[j]), e.info.ModTime())
			}
		case '%':
			v = "%"
		default:
			v = "%" + string(format[j])
		}
		if width != "" {
			if w, err := strconv.Atoi(strings.TrimPrefix(width, "-")); err == nil {
				if strings.HasPrefix(width, "-") {
					v = fmt.Sprintf("%-*s", w, v)
				} else {
					v = fmt.Sprintf("%*s", w, v)
				}
			}
		}
		b.WriteString(v)
		i = j
	}
	return b.String()
}

// relativeToStart strips the starting point from a path (find's %P).
func relativeToStart(e *findEntry) string {
	parts := strings.Split(e.p, "/")
	if e.depth >= len(parts) {
		return e.p
	}
	return strings.Join(parts[len(parts)-e.depth:], "/")
}

// globMatch matches a shell pattern like fnmatch without FNM_PATHNAME:
// '*' also matches '/' (as find's -path needs).
func globMatch(pat, s string) bool {
	if !strings.Contains(pat, "/") && !strings.Contains(s, "/") {
		ok, _ := path.Match(pat, s)
		return ok
	}
	re, err := regexp.Compile("^" + globToRegex(pat) + "$")
	if err != nil {
		return false
	}
	return re.MatchString(s)
}

// globToRegex translates a shell pattern into a regular expression in
// which '*' and '?' match any character.
func globToRegex(pat string) string {
	var b strings.Builder
	for i := 0; i < len(pat); i++ {
		switch ch := pat[i]; ch {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := i + 1
			if j < len(pat) && (pat[j] == '!' || pat[j] == '^') {
				j++
			}
			if j < len(pat) && pat[j] == ']' {
				j++
			}
			for j < len(pat) && pat[j] != ']' {
				j++
			}
			if j >= len(pat) {
				b.WriteString(`\[`)
				continue
			}
			class := pat[i+1 : j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i = j
		case '\\':
			if i+1 < len(pat) {
				i++
				b.WriteString(regexp.QuoteMeta(string(pat[i])))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(ch)))
		}
	}
	return b.String()
}
