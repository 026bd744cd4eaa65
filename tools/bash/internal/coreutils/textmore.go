package coreutils

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// revCmd reverses the characters of each line: rev [FILE]...
func revCmd(c *cmd, args []string) int {
	files, st, ok := c.flags(args, "", 1, func(string, string) error { return errUnknownFlag })
	if !ok {
		return st
	}
	if st, ok := c.operands(files); !ok {
		return st
	}
	err := c.eachLine(func(l string, noNL bool) bool {
		rs := []rune(l)
		for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
			rs[i], rs[j] = rs[j], rs[i]
		}
		c.out.WriteString(string(rs))
		if !noNL {
			c.out.WriteByte('\n')
		}
		return true
	})
	if err != nil {
		return c.readErr(err)
	}
	return c.done(0)
}

// tacCmd prints lines last first: tac [FILE]...
func tacCmd(c *cmd, args []string) int {
	files, st, ok := c.flags(args, "", 1, func(string, string) error { return errUnknownFlag })
	if !ok {
		return st
	}
	if st, ok := c.operands(files); !ok {
		return st
	}
	data, err := c.readAll()
	if err != nil {
		return c.readErr(err)
	}
	s := string(data)
	if s == "" {
		return c.done(0)
	}
	noNL := !strings.HasSuffix(s, "\n")
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		c.out.WriteString(lines[i])
		// The last line without a newline runs into the next, as GNU tac.
		if !(i == len(lines)-1 && noNL) {
			c.out.WriteByte('\n')
		}
	}
	return c.done(0)
}

// nlCmd numbers lines: nl [-b a|t|n|pRE] [-n ln|rn|rz] [-w N] [-s SEP]
// [-v START] [-i INCR] [FILE]...
func nlCmd(c *cmd, args []string) int {
	style, format, width, sep, start, incr := "t", "rn", 6, "\t", 1, 1
	var re *regexp.Regexp
	files, st, ok := c.flags(args, "bnwsvi", 1, func(f, v string) error {
		switch f {
		case "-b", "--body-numbering":
			switch {
			case v == "a" || v == "t" || v == "n":
				style = v
			case strings.HasPrefix(v, "p"):
				r, err := compileRegex(v[1:], false, false)
				if err != nil {
					return fmt.Errorf("invalid regular expression: %v", err)
				}
				style, re = "p", r
			default:
				return fmt.Errorf("invalid body numbering style: %s", quote(v))
			}
		case "-n", "--number-format":
			if v != "ln" && v != "rn" && v != "rz" {
				return fmt.Errorf("invalid line numbering format: %s", quote(v))
			}
			format = v
		case "-w", "--number-width":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1<<10 {
				return fmt.Errorf("invalid line number field width: %s", quote(v))
			}
			width = n
		case "-s", "--number-separator":
			sep = v
		case "-v", "--starting-line-number":
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("invalid starting line number: %s", quote(v))
			}
			start = n
		case "-i", "--line-increment":
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("invalid line number increment: %s", quote(v))
			}
			incr = n
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if st, ok := c.operands(files); !ok {
		return st
	}
	n := start
	err := c.eachLine(func(l string, noNL bool) bool {
		number := false
		switch style {
		case "a":
			number = true
		case "t":
			number = l != ""
		case "p":
			number = re.MatchString(l)
		}
		if number {
			var num string
			switch format {
			case "ln":
				num = fmt.Sprintf("%-*d", width, n)
			case "rz":
				num = fmt.Sprintf("%0*d", width, n)
			default:
				num = fmt.Sprintf("%*d", width, n)
			}
			c.out.WriteString(num + sep + l)
			n += incr
		} else {
			c.out.WriteString(strings.Repeat(" ", width+len(sep)) + l)
		}
		if !noNL {
			c.out.WriteByte('\n')
		}
		return true
	})
	if err != nil {
		return c.readErr(err)
	}
	return c.done(0)
}

// readLines reads an operand whole and splits it into lines.
func (c *cmd) readLines(name string) ([]string, bool) {
	data, err := c.readFile(name)
	if err != nil {
		c.fileErr(1, name, err)
		return nil, false
	}
	return splitLines(string(data)), true
}

// pasteCmd merges lines: paste [-s] [-d LIST] FILE...
func pasteCmd(c *cmd, args []string) int {
	serial := false
	delims := "\t"
	files, st, ok := c.flags(args, "d", 1, func(f, v string) error {
		switch f {
		case "-s", "--serial":
			serial = true
		case "-d", "--delimiters":
			delims = pasteDelims(v)
		case "-z":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	ds := []rune(delims)
	delim := func(i int) string {
		if len(ds) == 0 || ds[i%len(ds)] == 0 {
			return ""
		}
		return string(ds[i%len(ds)])
	}
	var inputs [][]string
	stdinLines := -1 // stdin is read once; several "-" take turns
	var stdin []string
	for _, f := range files {
		if isStdin(f) {
			if stdinLines < 0 {
				data, err := c.readAll()
				if err != nil {
					return c.readErr(err)
				}
				stdin = splitLines(string(data))
				stdinLines = 0
			}
			inputs = append(inputs, nil) // filled below
			continue
		}
		ls, ok := c.readLines(f)
		if !ok {
			return c.done(1)
		}
		inputs = append(inputs, ls)
	}
	// Several "-" operands read stdin's lines in turn.
	dashes := 0
	for _, f := range files {
		if isStdin(f) {
			dashes++
		}
	}
	if dashes > 0 {
		idx := 0
		for i, f := range files {
			if !isStdin(f) {
				continue
			}
			var mine []string
			for j := idx; j < len(stdin); j += dashes {
				mine = append(mine, stdin[j])
			}
			inputs[i] = mine
			idx++
		}
	}
	if serial {
		for _, ls := range inputs {
			for j, l := range ls {
				if j > 0 {
					c.out.WriteString(delim(j - 1))
				}
				c.out.WriteString(l)
			}
			c.out.WriteByte('\n')
		}
		return c.done(0)
	}
	rows := 0
	for _, ls := range inputs {
		rows = max(rows, len(ls))
	}
	for r := 0; r < rows; r++ {
		for i, ls := range inputs {
			if i > 0 {
				c.out.WriteString(delim(i - 1))
			}
			if r < len(ls) {
				c.out.WriteString(ls[r])
			}
		}
		c.out.WriteByte('\n')
	}
	return c.done(0)
}

// commCmd compares two sorted files: comm [-1] [-2] [-3] FILE1 FILE2.
func commCmd(c *cmd, args []string) int {
	var hide [4]bool
	outSep := "\t"
	files, st, ok := c.flags(args, "", 1, func(f, v string) error {
		switch {
		case f == "--output-delimiter":
			outSep = v
			return nil
		case f == "--nocheck-order" || f == "--check-order":
			return nil
		case len(f) == 2 && f[1] >= '1' && f[1] <= '3':
			hide[f[1]-'0'] = true
			return nil
		}
		return errUnknownFlag
	})
	if !ok {
		return st
	}
	if len(files) != 2 {
		return c.errf(1, "missing operand: comm FILE1 FILE2")
	}
	var a, b []string
	if a, ok = c.readLines(files[0]); !ok {
		return c.done(1)
	}
	if b, ok = c.readLines(files[1]); !ok {
		return c.done(1)
	}
	col := func(n int, s string) {
		if hide[n] {
			return
		}
		for i := 1; i < n; i++ {
			if !hide[i] {
				c.out.WriteString(outSep)
			}
		}
		c.out.WriteString(s + "\n")
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || i < len(a) && a[i] < b[j]:
			col(1, a[i])
			i++
		case i >= len(a) || b[j] < a[i]:
			col(2, b[j])
			j++
		default:
			col(3, a[i])
			i++
			j++
		}
	}
	return c.done(0)
}

// foldCmd wraps lines: fold [-w N] [-s] [-b] [FILE]...
func foldCmd(c *cmd, args []string) int {
	width, spaces := 80, false
	var fixed []string
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			fixed = append(fixed, "-w", a[1:])
		} else {
			fixed = append(fixed, a)
		}
	}
	files, st, ok := c.flags(fixed, "w", 1, func(f, v string) error {
		switch f {
		case "-w", "--width":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("invalid number of columns: %s", quote(v))
			}
			width = n
		case "-s", "--spaces":
			spaces = true
		case "-b", "--bytes":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if st, ok := c.operands(files); !ok {
		return st
	}
	err := c.eachLine(func(l string, noNL bool) bool {
		rs := []rune(l)
		for len(rs) > width {
			cut := width
			if spaces {
				for k := width - 1; k > 0; k-- {
					if rs[k] == ' ' || rs[k] == '\t' {
						cut = k + 1
						break
					}
				}
			}
			c.out.WriteString(string(rs[:cut]) + "\n")
			rs = rs[cut:]
		}
		c.out.WriteString(string(rs))
		if !noNL {
			c.out.WriteByte('\n')
		}
		return true
	})
	if err != nil {
		return c.readErr(err)
	}
	return c.done(0)
}

// hashCmd prints or checks checksums: sha256sum, sha1sum, sha512sum,
// md5sum [-c] [--quiet] [--status] [FILE]...
func hashCmd(newHash func() hash.Hash) impl {
	return func(c *cmd, args []string) int {
		check, quiet, status := false, false, false
		files, st, ok := c.flags(args, "", 1, func(f, _ string) error {
			switch f {
			case "-c", "--check":
				check = true
			case "--quiet":
				quiet = true
			case "--status":
				status = true
			case "-b", "-t", "--binary", "--text", "--tag", "-z", "--strict", "-w", "--warn":
			default:
				return errUnknownFlag
			}
			return nil
		})
		if !ok {
			return st
		}
		if len(files) == 0 {
			files = []string{"-"}
		}
		sum := func(r io.Reader) (string, error) {
			h := newHash()
			if _, err := io.Copy(h, r); err != nil {
				return "", err
			}
			return hex.EncodeToString(h.Sum(nil)), nil
		}
		if !check {
			code := 0
			for _, f := range files {
				r, err := c.openInput(f)
				if err != nil {
					c.fileErr(1, f, err)
					code = 1
					continue
				}
				s, err := sum(r)
				if err != nil {
					return c.readErr(err)
				}
				c.out.WriteString(s + "  " + f + "\n")
			}
			return c.done(code)
		}
		code, bad := 0, 0
		for _, f := range files {
			lines, ok := c.readLines(f)
			if !ok {
				code = 1
				continue
			}
			for _, l := range lines {
				want, name, found := strings.Cut(l, "  ")
				if !found {
					want, name, found = strings.Cut(l, " *")
				}
				if !found {
					continue
				}
				r, err := c.openInput(name)
				got := ""
				if err == nil {
					got, err = sum(r)
				}
				switch {
				case err != nil:
					if !status {
						c.out.WriteString(name + ": FAILED open or read\n")
					}
					bad++
				case got != strings.ToLower(want):
					if !status {
						c.out.WriteString(name + ": FAILED\n")
					}
					bad++
				case !quiet && !status:
					c.out.WriteString(name + ": OK\n")
				}
			}
		}
		if bad > 0 {
			if !status {
				c.out.Flush()
				plural := "s"
				if bad == 1 {
					plural = ""
				}
				fmt.Fprintf(c.env.Stderr, "%s: WARNING: %d computed checksum%s did NOT match\n", c.name, bad, plural)
			}
			code = 1
		}
		return c.done(code)
	}
}

var (
	sha256Cmd = hashCmd(sha256.New)
	sha1Cmd   = hashCmd(sha1.New)
	sha512Cmd = hashCmd(sha512.New)
	md5Cmd    = hashCmd(md5.New)
)

// cmpCmd compares two files byte by byte: cmp [-s] FILE1 FILE2.
func cmpCmd(c *cmd, args []string) int {
	silent := false
	files, st, ok := c.flags(args, "", 2, func(f, _ string) error {
		switch f {
		case "-s", "--silent", "--quiet":
			silent = true
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(files) != 2 {
		return c.errf(2, "missing operand: cmp FILE1 FILE2")
	}
	a, err := c.readFile(files[0])
	if err != nil {
		return c.fileErr(2, files[0], err)
	}
	b, err := c.readFile(files[1])
	if err != nil {
		return c.fileErr(2, files[1], err)
	}
	line := 1
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if !silent {
				fmt.Fprintf(c.out, "%s %s differ: byte %d, line %d\n", files[0], files[1], i+1, line)
			}
			return c.done(1)
		}
		if a[i] == '\n' {
			line++
		}
	}
	if len(a) != len(b) {
		if !silent {
			short := files[0]
			if len(b) < len(a) {
				short = files[1]
			}
			c.out.Flush()
			fmt.Fprintf(c.env.Stderr, "cmp: EOF on %s after byte %d\n", short, min(len(a), len(b)))
		}
		return c.done(1)
	}
	return c.done(0)
}

// exprCmd evaluates an expression: expr ARG... with | & < <= = == != >=
// > + - * / % : (match), match, substr, index, length and parentheses.
// Exit 0 when the value is neither null nor 0, 1 when it is, 2 on error.
func exprCmd(c *cmd, args []string) int {
	p := &exprParser{args: args}
	v, err := p.or()
	if err == nil && p.i < len(p.args) {
		err = fmt.Errorf("syntax error: unexpected argument %s", quote(p.args[p.i]))
	}
	if err != nil {
		return c.errf(2, "%v", err)
	}
	c.out.WriteString(v + "\n")
	if v == "" || v == "0" || v == "-0" {
		return c.done(1)
	}
	return c.done(0)
}

type exprParser struct {
	args []string
	i    int
}

func (p *exprParser) peek() string {
	if p.i < len(p.args) {
		return p.args[p.i]
	}
	return ""
}

func (p *exprParser) more() bool { return p.i < len(p.args) }

func exprInt(s string) (*big.Int, bool) {
	n, ok := new(big.Int).SetString(strings.TrimPrefix(s, "+"), 10)
	return n, ok && s != ""
}

func (p *exprParser) or() (string, error) {
	l, err := p.and()
	for err == nil && p.peek() == "|" && p.more() {
		p.i++
		var r string
		if r, err = p.and(); err != nil {
			break
		}
		if l == "" || l == "0" {
			l = r
		}
		if l == "" {
			l = "0"
		}
	}
	return l, err
}

func (p *exprParser) and() (string, error) {
	l, err := p.compare()
	for err == nil && p.peek() == "&" && p.more() {
		p.i++
		var r string
		if r, err = p.compare(); err != nil {
			break
		}
		if l == "" || l == "0" || r == "" || r == "0" {
			l = "0"
		}
	}
	return l, err
}

func (p *exprParser) compare() (string, error) {
	l, err := p.additive()
	for err == nil {
		op := p.peek()
		switch op {
		case "<", "<=", "=", "==", "!=", ">=", ">":
		default:
			return l, nil
		}
		p.i++
		var r string
		if r, err = p.additive(); err != nil {
			break
		}
		var cmp int
		ln, lok := exprInt(l)
		rn, rok := exprInt(r)
		if lok && rok {
			cmp = ln.Cmp(rn)
		} else {
			cmp = strings.Compare(l, r)
		}
		res := map[string]bool{"<": cmp < 0, "<=": cmp <= 0, "=": cmp == 0, "==": cmp == 0, "!=": cmp != 0, ">=": cmp >= 0, ">": cmp > 0}[op]
		l = "0"
		if res {
			l = "1"
		}
	}
	return l, err
}

func (p *exprParser) additive() (string, error) {
	l, err := p.multiplicative()
	for err == nil && (p.peek() == "+" || p.peek() == "-") {
		op := p.peek()
		p.i++
		var r string
		if r, err = p.multiplicative(); err != nil {
			break
		}
		l, err = exprArith(op, l, r)
	}
	return l, err
}

func (p *exprParser) multiplicative() (string, error) {
	l, err := p.match()
	for err == nil && (p.peek() == "*" || p.peek() == "/" || p.peek() == "%") {
		op := p.peek()
		p.i++
		var r string
		if r, err = p.match(); err != nil {
			break
		}
		l, err = exprArith(op, l, r)
	}
	return l, err
}

func exprArith(op, l, r string) (string, error) {
	a, ok1 := exprInt(l)
	b, ok2 := exprInt(r)
	if !ok1 || !ok2 {
		return "", fmt.Errorf("non-integer argument")
	}
	switch op {
	case "+":
		return new(big.Int).Add(a, b).String(), nil
	case "-":
		return new(big.Int).Sub(a, b).String(), nil
	case "*":
		return new(big.Int).Mul(a, b).String(), nil
	}
	if b.Sign() == 0 {
		return "", fmt.Errorf("division by zero")
	}
	q, m := new(big.Int).QuoRem(a, b, new(big.Int))
	if op == "/" {
		return q.String(), nil
	}
	return m.String(), nil
}

func (p *exprParser) match() (string, error) {
	l, err := p.unary()
	for err == nil && p.peek() == ":" {
		p.i++
		var r string
		if r, err = p.unary(); err != nil {
			break
		}
		l, err = exprMatch(l, r)
	}
	return l, err
}

// exprMatch anchors a basic regular expression at the start: the
// matched length, or the first \(group\).
func exprMatch(s, pat string) (string, error) {
	re, err := compileRegex("^(?:"+breToERE(pat)+")", true, false)
	if err != nil {
		return "", fmt.Errorf("invalid regular expression: %v", err)
	}
	m := re.FindStringSubmatch(s)
	if re.NumSubexp() > 0 {
		if m == nil {
			return "", nil
		}
		return m[1], nil
	}
	if m == nil {
		return "0", nil
	}
	return strconv.Itoa(utf8.RuneCountInString(m[0])), nil
}

func (p *exprParser) unary() (string, error) {
	if !p.more() {
		return "", fmt.Errorf("syntax error: missing argument")
	}
	a := p.args[p.i]
	switch a {
	case "(":
		p.i++
		v, err := p.or()
		if err != nil {
			return "", err
		}
		if p.peek() != ")" || !p.more() {
			return "", fmt.Errorf("syntax error: expecting ')'")
		}
		p.i++
		return v, nil
	case "match":
		if p.i+2 < len(p.args) {
			p.i += 3
			return exprMatch(p.args[p.i-2], p.args[p.i-1])
		}
	case "length":
		if p.i+1 < len(p.args) {
			p.i += 2
			return strconv.Itoa(utf8.RuneCountInString(p.args[p.i-1])), nil
		}
	case "index":
		if p.i+2 < len(p.args) {
			p.i += 3
			s, chars := p.args[p.i-2], p.args[p.i-1]
			for i, r := range []rune(s) {
				if strings.ContainsRune(chars, r) {
					return strconv.Itoa(i + 1), nil
				}
			}
			return "0", nil
		}
	case "substr":
		if p.i+3 < len(p.args) {
			p.i += 4
			s := []rune(p.args[p.i-3])
			pos, err1 := strconv.Atoi(p.args[p.i-2])
			n, err2 := strconv.Atoi(p.args[p.i-1])
			if err1 != nil || err2 != nil || pos < 1 || n < 1 || pos > len(s) {
				return "", nil
			}
			end := min(len(s), pos-1+n)
			return string(s[pos-1 : end]), nil
		}
	case "+":
		if p.i+1 < len(p.args) {
			p.i += 2
			return p.args[p.i-1], nil
		}
	}
	p.i++
	return a, nil
}

// pasteDelims expands paste -d's list: \n, \t, \\ and \0 (no
// delimiter; here the empty string stands for it).
func pasteDelims(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' || i+1 >= len(v) {
			b.WriteByte(v[i])
			continue
		}
		i++
		switch v[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '0':
			b.WriteByte(0)
		default:
			b.WriteByte(v[i])
		}
	}
	return b.String()
}
