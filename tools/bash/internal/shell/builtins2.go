package shell

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// builtinTest is test and [.
func builtinTest(sh *shell, args []string) int {
	name := args[0]
	args = args[1:]
	if name == "[" {
		if len(args) == 0 || args[len(args)-1] != "]" {
			sh.errorf("[: missing `]'")
			return 2
		}
		args = args[:len(args)-1]
	}
	t := &testParser{sh: sh, args: args, name: name}
	ok, err := t.run()
	if err != nil {
		sh.errorf("%s: %s", name, err.Error())
		return 2
	}
	return b2status(!ok)
}

// testParser evaluates the arguments of test: POSIX's rules for up to
// four arguments, then -a, -o, ! and ( ) with precedence.
type testParser struct {
	sh   *shell
	args []string
	pos  int
	name string
}

var testBinary = map[string]bool{"=": true, "==": true, "!=": true, "<": true, ">": true, "-eq": true, "-ne": true,
	"-lt": true, "-le": true, "-gt": true, "-ge": true, "-nt": true, "-ot": true, "-ef": true}

var testUnary = map[string]bool{"-a": true, "-b": true, "-c": true, "-d": true, "-e": true, "-f": true, "-g": true,
	"-h": true, "-k": true, "-p": true, "-r": true, "-s": true, "-t": true, "-u": true, "-w": true, "-x": true,
	"-G": true, "-L": true, "-N": true, "-O": true, "-S": true, "-z": true, "-n": true, "-o": true, "-v": true, "-R": true}

func (t *testParser) run() (bool, error) {
	a := t.args
	switch len(a) {
	case 0:
		return false, nil
	case 1:
		return a[0] != "", nil
	case 2:
		if a[0] == "!" {
			return a[1] == "", nil
		}
		if testUnary[a[0]] {
			return t.unary(a[0], a[1])
		}
		return false, &testError{a[0] + ": unary operator expected"}
	case 3:
		if testBinary[a[1]] {
			return t.binary(a[0], a[1], a[2])
		}
		if a[1] == "-a" || a[1] == "-o" {
			l, r := a[0] != "", a[2] != ""
			if a[1] == "-a" {
				return l && r, nil
			}
			return l || r, nil
		}
		if a[0] == "!" {
			sub := &testParser{sh: t.sh, args: a[1:], name: t.name}
			ok, err := sub.run()
			return !ok, err
		}
		if a[0] == "(" && a[2] == ")" {
			return a[1] != "", nil
		}
		return false, &testError{a[1] + ": binary operator expected"}
	case 4:
		if a[0] == "!" {
			sub := &testParser{sh: t.sh, args: a[1:], name: t.name}
			ok, err := sub.run()
			return !ok, err
		}
		if a[0] == "(" && a[3] == ")" {
			sub := &testParser{sh: t.sh, args: a[1:3], name: t.name}
			return sub.run()
		}
	}
	ok, err := t.or()
	if err == nil && t.pos < len(t.args) {
		err = &testError{"too many arguments"}
	}
	return ok, err
}

func (t *testParser) peek() (string, bool) {
	if t.pos < len(t.args) {
		return t.args[t.pos], true
	}
	return "", false
}

func (t *testParser) or() (bool, error) {
	l, err := t.and()
	if err != nil {
		return false, err
	}
	for {
		if a, ok := t.peek(); !ok || a != "-o" {
			return l, nil
		}
		t.pos++
		r, err := t.and()
		if err != nil {
			return false, err
		}
		l = l || r
	}
}

func (t *testParser) and() (bool, error) {
	l, err := t.not()
	if err != nil {
		return false, err
	}
	for {
		if a, ok := t.peek(); !ok || a != "-a" {
			return l, nil
		}
		t.pos++
		r, err := t.not()
		if err != nil {
			return false, err
		}
		l = l && r
	}
}

func (t *testParser) not() (bool, error) {
	if a, ok := t.peek(); ok && a == "!" {
		t.pos++
		v, err := t.not()
		return !v, err
	}
	return t.primary()
}

func (t *testParser) primary() (bool, error) {
	a, ok := t.peek()
	if !ok {
		return false, &testError{"argument expected"}
	}
	if a == "(" {
		t.pos++
		v, err := t.or()
		if err != nil {
			return false, err
		}
		if b, ok := t.peek(); !ok || b != ")" {
			return false, &testError{"`)' expected"}
		}
		t.pos++
		return v, nil
	}
	if t.pos+2 < len(t.args) && testBinary[t.args[t.pos+1]] {
		l, op, r := t.args[t.pos], t.args[t.pos+1], t.args[t.pos+2]
		t.pos += 3
		return t.binary(l, op, r)
	}
	if testUnary[a] && t.pos+1 < len(t.args) {
		t.pos += 2
		return t.unary(a, t.args[t.pos-1])
	}
	t.pos++
	return a != "", nil
}

func (t *testParser) unary(op, arg string) (bool, error) {
	return t.sh.unaryTest(op, arg)
}

func (t *testParser) binary(l, op, r string) (bool, error) {
	switch op {
	case "-eq", "-ne", "-lt", "-le", "-gt", "-ge":
		a, err := testInt(l)
		if err != nil {
			return false, err
		}
		b, err := testInt(r)
		if err != nil {
			return false, err
		}
		return compareInts(op, a, b), nil
	}
	return t.sh.binaryTest(op, l, r)
}

// testInt reads an integer operand of test.
func testInt(s string) (int64, error) {
	t := strings.TrimSpace(s)
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, &testError{s + ": integer expression expected"}
	}
	return n, nil
}

// trapName normalizes a signal spec: EXIT, ERR, DEBUG, RETURN or a
// signal's name without SIG; ok is false for an invalid one.
func trapName(s string) (string, bool) {
	u := strings.ToUpper(s)
	u = strings.TrimPrefix(u, "SIG")
	switch u {
	case "EXIT", "0":
		return "EXIT", true
	case "ERR", "DEBUG", "RETURN":
		return u, true
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n > 0 && n < len(signalNames) {
			return signalNames[n], true
		}
		return "", false
	}
	for _, name := range signalNames[1:] {
		if name == u {
			return u, true
		}
	}
	return "", false
}

// trapOrder is the order trap -p lists traps in.
func trapOrder(name string) int {
	switch name {
	case "EXIT":
		return 0
	case "DEBUG":
		return 100
	case "ERR":
		return 101
	case "RETURN":
		return 102
	}
	for i, n := range signalNames {
		if n == name {
			return i
		}
	}
	return 200
}

func builtinTrap(sh *shell, args []string) int {
	args = args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	print := func(traps map[string]string, names []string) {
		if names == nil {
			names = sortedKeys(traps)
			sortBy(names, trapOrder)
		}
		var b strings.Builder
		for _, n := range names {
			cmd, ok := traps[n]
			if !ok {
				continue
			}
			sig := n
			if n != "EXIT" && n != "ERR" && n != "DEBUG" && n != "RETURN" {
				sig = "SIG" + n
			}
			b.WriteString("trap -- " + aliasQuote(cmd) + " " + sig + "\n")
		}
		sh.out("trap", b.String())
	}
	shown := sh.traps
	if len(shown) == 0 && sh.parentTraps != nil {
		shown = sh.parentTraps
	}
	if len(args) == 0 {
		print(shown, nil)
		return 0
	}
	switch args[0] {
	case "-l":
		return builtinKill(sh, []string{"kill", "-l"})
	case "-p", "-P":
		if len(args) == 1 {
			print(shown, nil)
			return 0
		}
		var names []string
		for _, a := range args[1:] {
			n, ok := trapName(a)
			if !ok {
				sh.errorf("trap: %s: invalid signal specification", a)
				return 1
			}
			names = append(names, n)
		}
		print(shown, names)
		return 0
	}
	if strings.HasPrefix(args[0], "-") && args[0] != "-" {
		sh.errorf("trap: %s: invalid option", args[0])
		sh.writeErr("trap: usage: trap [-lp] [[arg] signal_spec ...]\n")
		return 2
	}
	handler, sigs := args[0], args[1:]
	if len(args) == 1 {
		if _, ok := trapName(args[0]); ok {
			handler, sigs = "-", args
		} else {
			sh.usageLine("trap: usage: trap [-lp] [[arg] signal_spec ...]")
			return 2
		}
	} else if _, err := strconv.Atoi(handler); err == nil {
		// trap 0 1 2: all are signals, reset
		if _, ok := trapName(handler); ok {
			sigs = args
			handler = "-"
		}
	}
	status := 0
	for _, s := range sigs {
		n, ok := trapName(s)
		if !ok {
			sh.errorf("trap: %s: invalid signal specification", s)
			status = 1
			continue
		}
		if handler == "-" {
			delete(sh.traps, n)
			continue
		}
		sh.traps[n] = handler
	}
	return status
}

// sortBy sorts names by key.
func sortBy(names []string, key func(string) int) {
	for i := 1; i < len(names); i++ {
		for j := i; j > 0 && key(names[j]) < key(names[j-1]); j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
}

// runTrap runs a trap's handler; $? is kept for it.
func (sh *shell) runTrap(handler, name string) {
	prev := sh.inTrap
	sh.inTrap = name
	status := sh.status
	line := sh.line
	defer func() {
		sh.inTrap = prev
		sh.line = line
	}()
	sh.status = status
	sh.runSource(&source{name: "trap", text: handler}, false)
	sh.syntaxError = false
}

// debugTrap runs the DEBUG trap before a command; it reports false when
// the trap's code ended the shell (exit, errexit), so that the command
// does not run.
func (sh *shell) debugTrap(cmd string) bool {
	if len(sh.traps) == 0 {
		return true
	}
	t, ok := sh.traps["DEBUG"]
	// bash runs it inside the other traps' handlers (EXIT, ERR, signals),
	// not inside its own nor anything it runs
	if !ok || t == "" || sh.inDebugTrap {
		return true
	}
	if sh.funcDepth > 0 && !sh.opts.functrace {
		return true
	}
	if sh.inTrap == "" {
		sh.lastCmd = cmd
	}
	status := sh.status
	sh.inDebugTrap = true
	sh.runTrap(t, "DEBUG")
	sh.inDebugTrap = false
	if sh.flow == flowNone {
		sh.status = status
		return true
	}
	return false
}

func builtinGetopts(sh *shell, args []string) int {
	if len(args) < 3 {
		sh.usageLine("getopts: usage: getopts optstring name [arg ...]")
		return 2
	}
	optstring, name := args[1], args[2]
	params := args[3:]
	if len(args) == 3 {
		params = sh.positional()
	}
	silent := strings.HasPrefix(optstring, ":")
	if silent {
		optstring = optstring[1:]
	}
	badName := !validName(name)
	if badName {
		defer func() {
			sh.errorf("getopts: `%s': not a valid identifier", name)
		}()
		name = ""
	}
	optind := 1
	if s, ok := sh.varValue("OPTIND"); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n > 0 {
			optind = n
		}
	}
	pos := sh.getoptsPos
	setOptind := func(n int) {
		sh.setString("OPTIND", strconv.Itoa(n), false)
	}
	setName := func(v string) {
		if name != "" {
			sh.setString(name, v, false)
		}
	}
	end := func() int {
		sh.getoptsPos = 0
		sh.unsetVar("OPTARG", false)
		setName("?")
		return 1
	}
	if optind > len(params) {
		setOptind(len(params) + 1)
		return end()
	}
	arg := params[optind-1]
	if pos == 0 {
		if arg == "--" {
			setOptind(optind + 1)
			return end()
		}
		if len(arg) < 2 || arg[0] != '-' {
			return end()
		}
		pos = 1
	}
	if pos >= len(arg) {
		// OPTIND was moved under us
		pos = 1
	}
	c := arg[pos]
	pos++
	if pos >= len(arg) {
		optind++
		pos = 0
	}
	i := strings.IndexByte(optstring, c)
	if i < 0 || c == ':' {
		if silent {
			sh.setString("OPTARG", string(c), false)
		} else {
			sh.writeErr(sh.argv0 + ": illegal option -- " + string(c) + "\n")
			sh.unsetVar("OPTARG", false)
		}
		setName("?")
		setOptind(optind)
		sh.getoptsPos = pos
		if badName {
			return 1
		}
		return 0
	}
	if i+1 < len(optstring) && optstring[i+1] == ':' {
		if pos != 0 {
			sh.setString("OPTARG", arg[pos:], false)
			optind++
			pos = 0
		} else if optind <= len(params) {
			sh.setString("OPTARG", params[optind-1], false)
			optind++
		} else {
			if silent {
				setName(":")
				sh.setString("OPTARG", string(c), false)
			} else {
				sh.writeErr(sh.argv0 + ": option requires an argument -- " + string(c) + "\n")
				setName("?")
				sh.unsetVar("OPTARG", false)
			}
			setOptind(optind)
			sh.getoptsPos = pos
			return 0
		}
	} else {
		sh.unsetVar("OPTARG", false)
	}
	setName(string(c))
	setOptind(optind)
	sh.getoptsPos = pos
	if badName {
		return 1
	}
	return 0
}

// readLineFrom reads from fd up to and including delim (or to EOF, then
// err is io.EOF); it never reads past delim, so that the next reader
// of fd sees the rest.
func (sh *shell) readLineFrom(fd int, delim byte) (string, error) {
	return sh.readUpTo(fd, delim, 0)
}

// maxReadLine bounds one line read by read or mapfile (besides the
// memory budget).
const maxReadLine = 64 << 20

func (sh *shell) readUpTo(fd int, delim byte, maxBytes int) (string, error) {
	f := sh.fds.get(fd)
	if f == nil || f.r == nil {
		return "", errBadFD
	}
	if f.pipe != nil {
		s, err := f.pipe.readLine(delim, maxBytes)
		if errors.Is(err, errStopped) {
			panic(stopPanic{})
		}
		return s, err
	}
	var b []byte
	var one [1]byte
	for {
		if len(b)&4095 == 4095 {
			sh.check()
			if len(b) > maxReadLine {
				sh.r.limit("a line read by read exceeds %d bytes", maxReadLine)
			}
		}
		n, err := f.r.Read(one[:])
		if n > 0 {
			b = append(b, one[0])
			if one[0] == delim {
				return string(b), nil
			}
			if maxBytes > 0 && len(b) >= maxBytes {
				return string(b), nil
			}
		}
		if err != nil {
			if errors.Is(err, errStopped) {
				panic(stopPanic{})
			}
			if err == io.EOF {
				return string(b), io.EOF
			}
			return string(b), err
		}
	}
}

func builtinRead(sh *shell, args []string) int {
	args = args[1:]
	raw := false
	delim := byte('\n')
	fd := 0
	nchars, exactN := -1, false
	arrayName := ""
	timeout := ""
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		a := args[0]
		args = args[1:]
		if a == "--" {
			break
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			takes := strings.IndexByte("adinNptu", c) >= 0
			val := ""
			if takes {
				if j+1 < len(a) {
					val = a[j+1:]
				} else if len(args) > 0 {
					val = args[0]
					args = args[1:]
				} else {
					return sh.usage("read", "-%c: option requires an argument", c)
				}
			}
			switch c {
			case 'r':
				raw = true
			case 's', 'e':
			case 'a':
				arrayName = val
			case 'd':
				if val == "" {
					delim = 0
				} else {
					delim = val[0]
				}
			case 'i', 'p':
			case 'n', 'N':
				n, err := strconv.Atoi(val)
				if err != nil || n < 0 {
					sh.errorf("read: %s: invalid number", val)
					return 1
				}
				nchars, exactN = n, c == 'N'
			case 't':
				timeout = val
			case 'u':
				n, err := strconv.Atoi(val)
				if err != nil || n < 0 {
					sh.errorf("read: %s: invalid file descriptor specification", val)
					return 1
				}
				fd = n
			default:
				return sh.usage("read", "-%c: invalid option", c)
			}
			if takes {
				break
			}
		}
	}
	names := args
	for _, n := range names {
		if !validName(n) {
			sh.errorf("read: `%s': not a valid identifier", n)
			return 1
		}
	}
	if arrayName != "" && !validName(arrayName) {
		sh.errorf("read: `%s': not a valid identifier", arrayName)
		return 1
	}
	if f := sh.fds.get(fd); f == nil || f.r == nil {
		sh.errorf("read: %d: invalid file descriptor: Bad file descriptor", fd)
		return 1
	}
	if timeout != "" {
		t, err := strconv.ParseFloat(timeout, 64)
		if err != nil || t < 0 {
			sh.errorf("read: %s: invalid timeout specification", timeout)
			return 1
		}
		if t == 0 {
			// read -t 0: is input available?
			f := sh.fds.get(fd)
			if f.pipe != nil {
				f.pipe.mu.Lock()
				avail := len(f.pipe.buf) > 0 || f.pipe.wClosed
				f.pipe.mu.Unlock()
				return b2status(!avail)
			}
			return 0
		}
	}
	// read the input: a line (or nchars characters); without -r a
	// backslash quotes the next character (marked by a 0 byte before it)
	// and a backslash-newline is removed
	var line []byte
	gotDelim := false
	switch {
	case nchars == 0:
		gotDelim = true
	case nchars > 0:
		count := 0
		for count < nchars {
			c, err := sh.readRune(fd)
			if c == "" {
				if err != nil && !errors.Is(err, io.EOF) {
					sh.errorf("read: read error: %d: %s", fd, errReason(err))
					return 1
				}
				break
			}
			if c == "\x00" {
				continue
			}
			if !exactN && len(c) == 1 && c[0] == delim {
				gotDelim = true
				break
			}
			if !raw && c == "\\" {
				n, _ := sh.readRune(fd)
				if n == "" {
					break
				}
				if n == "\n" {
					continue
				}
				line = append(line, 0)
				line = append(line, n...)
				count++
				continue
			}
			line = append(line, c...)
			count++
		}
		if count >= nchars {
			gotDelim = true
		}
	default:
		for {
			chunk, err := sh.readLineFrom(fd, delim)
			if err != nil && !errors.Is(err, io.EOF) {
				sh.errorf("read: read error: %d: %s", fd, errReason(err))
				return 1
			}
			ends := len(chunk) > 0 && chunk[len(chunk)-1] == delim
			if ends {
				chunk = chunk[:len(chunk)-1]
			}
			if strings.IndexByte(chunk, 0) >= 0 {
				chunk = strings.ReplaceAll(chunk, "\x00", "")
			}
			if raw {
				line = append(line, chunk...)
				gotDelim = ends
				break
			}
			more := false
			for i := 0; i < len(chunk); i++ {
				if chunk[i] != '\\' {
					line = append(line, chunk[i])
					continue
				}
				if i+1 < len(chunk) {
					if chunk[i+1] != '\n' {
						line = append(line, 0, chunk[i+1])
					}
					i++
					continue
				}
				// a backslash before the delimiter
				if ends {
					if delim != '\n' {
						line = append(line, 0, delim)
					}
					more = true
				}
			}
			if !more {
				gotDelim = ends
				break
			}
		}
	}
	status := 0
	if !gotDelim {
		status = 1
	}
	if len(line) > 0 {
		if e := sh.r.budget.Check(int64(len(line))); e != nil {
			sh.r.stop(e)
			panic(stopPanic{})
		}
	}
	if arrayName != "" {
		fields := sh.readSplit(line, -1)
		items := make([]arrayItem, len(fields))
		for i, f := range fields {
			items[i] = arrayItem{val: f}
		}
		if err := sh.setArray(arrayName, items, false, false); err != nil {
			sh.errorf("read: %s", err.Error())
			return 1
		}
		return status
	}
	if len(names) == 0 {
		// REPLY gets the line as it is (no field splitting or trimming)
		if err := sh.setString("REPLY", string(stripMarks(line)), false); err != nil {
			sh.errorf("read: %s", err.Error())
			return 1
		}
		return status
	}
	var fields []string
	if exactN {
		fields = []string{string(stripMarks(line))}
	} else {
		fields = sh.readSplit(line, len(names))
	}
	for i, n := range names {
		v := ""
		if i < len(fields) {
			v = fields[i]
		}
		if err := sh.setString(n, v, false); err != nil {
			sh.errorf("%s", err.Error())
			return 1
		}
	}
	return status
}

// stripMarks removes the quote marks (0 bytes before quoted bytes) that
// read puts in a line.
func stripMarks(line []byte) []byte {
	if !containsZero(line) {
		return line
	}
	out := make([]byte, 0, len(line))
	for i := 0; i < len(line); i++ {
		if line[i] == 0 && i+1 < len(line) {
			i++
		}
		out = append(out, line[i])
	}
	return out
}

func containsZero(b []byte) bool {
	for _, c := range b {
		if c == 0 {
			return true
		}
	}
	return false
}

// readRune reads one UTF-8 character from fd ("" at EOF).
func (sh *shell) readRune(fd int) (string, error) {
	s, err := sh.readUpTo(fd, 0xff, 1)
	if s == "" || s[0] < 0x80 {
		return s, err
	}
	b := []byte(s)
	for !utf8.FullRune(b) && len(b) < 4 {
		more, err := sh.readUpTo(fd, 0xff, 1)
		if more == "" {
			return string(b), err
		}
		b = append(b, more...)
	}
	return string(b), nil
}

// readSplit splits a line read by read into at most n fields (n < 0:
// all) on IFS; the last field keeps the rest of the line. Quoted bytes
// (marked by a 0 before them) never split.
func (sh *shell) readSplit(line []byte, n int) []string {
	ifs := sh.ifs()
	isSep := func(i int) bool {
		if line[i] == 0 {
			return false
		}
		return isIFS(ifs, line[i])
	}
	isWS := func(i int) bool { return isSep(i) && isIFSSpace(line[i]) }
	var fields []string
	i := 0
	// leading IFS whitespace
	for i < len(line) && isWS(i) {
		i++
	}
	for i < len(line) {
		if n > 0 && len(fields) == n-1 {
			// the rest, without trailing IFS whitespace
			rest := line[i:]
			end := len(rest)
			for end > 0 && isIFS(ifs, rest[end-1]) && isIFSSpace(rest[end-1]) && !(end >= 2 && rest[end-2] == 0) {
				end--
			}
			rest = rest[:end]
			// a single trailing non-whitespace separator is removed too
			if end > 0 && isIFS(ifs, rest[end-1]) && !isIFSSpace(rest[end-1]) && !(end >= 2 && rest[end-2] == 0) {
				// bash keeps it unless it is the only one left
				trimmed := rest[:end-1]
				has := false
				for k := 0; k < len(trimmed); k++ {
					if trimmed[k] == 0 {
						k++
						continue
					}
					if isIFS(ifs, trimmed[k]) && !isIFSSpace(trimmed[k]) {
						has = true
						break
					}
				}
				if !has {
					rest = trimmed
				}
			}
			fields = append(fields, string(stripMarks(rest)))
			return fields
		}
		start := i
		for i < len(line) && !isSep(i) {
			if line[i] == 0 {
				i++
			}
			i++
		}
		fields = append(fields, string(stripMarks(line[start:min(i, len(line))])))
		// the separator: whitespace, one other IFS char, whitespace
		for i < len(line) && isWS(i) {
			i++
		}
		if i < len(line) && isSep(i) && !isIFSSpace(line[i]) {
			i++
			for i < len(line) && isWS(i) {
				i++
			}
		}
	}
	return fields
}

func builtinMapfile(sh *shell, args []string) int {
	name := args[0]
	args = args[1:]
	delim := byte('\n')
	count, origin, skip := 0, -1, 0
	trim := false
	fd := 0
	callback := ""
	quantum := 5000
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		a := args[0]
		args = args[1:]
		if a == "--" {
			break
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			takes := strings.IndexByte("dnOsuCc", c) >= 0
			val := ""
			if takes {
				if j+1 < len(a) {
					val = a[j+1:]
				} else if len(args) > 0 {
					val = args[0]
					args = args[1:]
				} else {
					return sh.usage(name, "-%c: option requires an argument", c)
				}
			}
			num := func() (int, bool) {
				n, err := strconv.Atoi(val)
				if err != nil || n < 0 {
					sh.errorf("%s: %s: invalid number", name, val)
					return 0, false
				}
				return n, true
			}
			var ok = true
			switch c {
			case 'd':
				if val == "" {
					delim = 0
				} else {
					delim = val[0]
				}
			case 'n':
				count, ok = num()
			case 'O':
				origin, ok = num()
			case 's':
				skip, ok = num()
			case 't':
				trim = true
			case 'u':
				fd, ok = num()
			case 'C':
				callback = val
			case 'c':
				quantum, ok = num()
			default:
				return sh.usage(name, "-%c: invalid option", c)
			}
			if !ok {
				return 1
			}
			if takes {
				break
			}
		}
	}
	arr := "MAPFILE"
	if len(args) > 0 {
		arr = args[0]
	}
	if !validName(arr) {
		sh.errorf("%s: `%s': not a valid identifier", name, arr)
		return 1
	}
	if f := sh.fds.get(fd); f == nil || f.r == nil {
		sh.errorf("%s: %d: invalid file descriptor: Bad file descriptor", name, fd)
		return 1
	}
	v := sh.getVar(arr)
	if v != nil && v.assc != nil {
		sh.errorf("%s: %s: not an indexed array", name, arr)
		return 1
	}
	start := int64(0)
	if origin >= 0 {
		start = int64(origin)
	} else if v != nil {
		// without -O the array is cleared
		if err := sh.setArray(arr, nil, false, false); err != nil {
			sh.errorf("%s: %s", name, err.Error())
			return 1
		}
	}
	if origin < 0 {
		if err := sh.setArray(arr, nil, false, false); err != nil {
			sh.errorf("%s: %s", name, err.Error())
			return 1
		}
	}
	idx := start
	read := 0
	for count == 0 || read < count {
		line, err := sh.readLineFrom(fd, delim)
		if line == "" && err != nil {
			break
		}
		if skip > 0 {
			skip--
			continue
		}
		if trim && len(line) > 0 && line[len(line)-1] == delim {
			line = line[:len(line)-1]
		}
		// a NUL ends the line (bash's strings are C strings)
		if i := strings.IndexByte(line, 0); i >= 0 {
			line = line[:i]
		}
		if err := sh.setElem(arr, strconv.FormatInt(idx, 10), line, false); err != nil {
			sh.errorf("%s: %s", name, err.Error())
			return 1
		}
		if callback != "" && quantum > 0 && (read+1)%quantum == 0 {
			sh.runSource(&source{name: "mapfile", text: callback + " " + strconv.FormatInt(idx, 10) + " " + shellQuote(line)}, false)
		}
		idx++
		read++
		if err != nil {
			break
		}
	}
	return 0
}

func builtinSet(sh *shell, args []string) int {
	args = args[1:]
	if len(args) == 0 {
		sh.printSet()
		return 0
	}
	setParams := false
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			args = args[1:]
			setParams = true
			break
		}
		if a == "-" {
			sh.opts.xtrace, sh.opts.verbose = false, false
			args = args[1:]
			setParams = len(args) > 0
			break
		}
		if a == "+" {
			args = args[1:]
			continue
		}
		if len(a) < 2 || a[0] != '-' && a[0] != '+' {
			setParams = true
			break
		}
		on := a[0] == '-'
		args = args[1:]
		for j := 1; j < len(a); j++ {
			c := a[j]
			if c == 'o' {
				if len(args) == 0 {
					sh.printOptions(on)
					continue
				}
				opt := args[0]
				args = args[1:]
				p := sh.optionPtr(opt)
				if p == nil {
					sh.errorf("set: %s: invalid option name", opt)
					return 2
				}
				if opt == "posix" && on {
					sh.enterPosix()
				}
				*p = on
				if opt == "history" {
					sh.historyOption(on)
				}
				// emacs and vi exclude each other
				if on && opt == "emacs" {
					sh.opts.vi = false
				} else if on && opt == "vi" {
					sh.opts.emacs = false
				}
				continue
			}
			optName, ok := shortOption[c]
			if ok && c == 'e' && on && !sh.opts.errexit && sh.condDepth == 0 {
				// bash: set -e where errexit is ignored by ! turns it
				// back on (not in a condition or an && || list)
				sh.noErrexit = 0
			}
			if !ok {
				sh.errorf("set: %c%c: invalid option", a[0], c)
				sh.usageLine("set: usage: set [-abefhkmnptuvxBCEHPT] [-o option-name] [--] [-] [arg ...]")
				return 2
			}
			*sh.optionPtr(optName) = on
		}
	}
	if setParams {
		sh.setPositional(append([]string(nil), args...))
	}
	return 0
}

// printOptions is set -o (on) and set +o.
func (sh *shell) printOptions(on bool) {
	var b strings.Builder
	for _, n := range optionNames {
		v, _ := sh.optionByName(n)
		if on {
			st := "off"
			if v {
				st = "on"
			}
			fmt.Fprintf(&b, "%-15s\t%s\n", n, st)
		} else {
			sign := "+"
			if v {
				sign = "-"
			}
			fmt.Fprintf(&b, "set %so %s\n", sign, n)
		}
	}
	sh.out("set", b.String())
}

// printSet is set without arguments: every variable, then every
// function.
func (sh *shell) printSet() {
	var b strings.Builder
	for _, n := range sh.allNames() {
		v := sh.getVar(n)
		if v == nil || !v.set && !v.isArray() {
			continue
		}
		switch {
		case v.arr != nil || v.assc != nil:
			b.WriteString(n + "=" + arrayLiteral(v) + "\n")
		default:
			b.WriteString(n + "=" + setQuote(v.str) + "\n")
		}
	}
	for _, n := range sortedKeys(sh.funcs.m) {
		b.WriteString(sh.funcText(sh.funcs.m[n]))
	}
	sh.out("set", b.String())
}

// setQuote quotes a value as set prints it: as is when safe, else in
// single quotes, or $'...' for control characters.
func setQuote(s string) string {
	if s == "" {
		return "''"
	}
	if needsANSIQuote(s) {
		return ansiQuote(s)
	}
	safe := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isAlnum(c) || strings.IndexByte("_/.,:=@%+-", c) >= 0 || c >= 0x80) {
			safe = false
		}
	}
	if safe {
		return s
	}
	return aliasQuote(s)
}

func builtinShopt(sh *shell, args []string) int {
	args = args[1:]
	set, unset, quiet, print, useSet := false, false, false, false, false
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		for _, c := range args[0][1:] {
			switch c {
			case 's':
				set = true
			case 'u':
				unset = true
			case 'q':
				quiet = true
			case 'p':
				print = true
			case 'o':
				useSet = true
			default:
				return sh.usage("shopt", "-%c: invalid option", c)
			}
		}
		args = args[1:]
	}
	if set && unset {
		sh.errorf("shopt: cannot set and unset shell options simultaneously")
		return 1
	}
	get := func(n string) (bool, bool) {
		if useSet {
			return sh.optionByName(n)
		}
		return sh.shoptValue(n)
	}
	names := args
	all := len(names) == 0
	if all {
		if useSet {
			names = optionNames
		} else {
			names = shoptNames
		}
	}
	if (set || unset) && !all {
		status := 0
		for _, n := range names {
			ok := false
			if useSet {
				if p := sh.optionPtr(n); p != nil {
					if n == "posix" && set {
						sh.enterPosix()
					}
					*p = set
					if n == "history" {
						sh.historyOption(set)
					}
					ok = true
				}
			} else {
				ok = sh.setShopt(n, set)
			}
			if !ok {
				sh.errorf("shopt: %s: invalid shell option name", n)
				status = 1
			}
		}
		return status
	}
	status := 0
	var b strings.Builder
	for _, n := range names {
		v, ok := get(n)
		if !ok {
			sh.errorf("shopt: %s: invalid shell option name", n)
			status = 1
			continue
		}
		if (set && !v) || (unset && v) {
			continue
		}
		if !v && !all {
			status = 1
		}
		if quiet {
			continue
		}
		if print || useSet && print {
			flag := "-u"
			if v {
				flag = "-s"
			}
			if useSet {
				flag = "+o"
				if v {
					flag = "-o"
				}
				fmt.Fprintf(&b, "set %s %s\n", flag, n)
				continue
			}
			fmt.Fprintf(&b, "shopt %s %s\n", flag, n)
			continue
		}
		st := "off"
		if v {
			st = "on"
		}
		fmt.Fprintf(&b, "%-15s\t%s\n", n, st)
	}
	sh.out("shopt", b.String())
	return status
}

func builtinUnset(sh *shell, args []string) int {
	args = args[1:]
	mode := ""
	args, st := sh.shortOptions("unset", args, func(c rune) bool {
		switch c {
		case 'f', 'v', 'n':
			mode = string(c)
		default:
			return false
		}
		return true
	})
	if st != 0 {
		return st
	}
	status := 0
	for _, n := range args {
		if mode == "f" {
			if fn, ok := sh.funcs.m[n]; ok {
				if fn.ro {
					sh.errorf("unset: %s: cannot unset: readonly function", n)
					status = 1
					continue
				}
				delete(sh.funcsWritable(), n)
			}
			continue
		}
		if i := strings.IndexByte(n, '['); i > 0 && strings.HasSuffix(n, "]") {
			base, sub := n[:i], n[i+1:len(n)-1]
			if !validName(base) {
				sh.errorf("unset: `%s': not a valid identifier", n)
				status = 1
				continue
			}
			if sub != "@" && sub != "*" {
				sub = sh.expandSubscript(sub)
			}
			if sub == "@" || sub == "*" {
				if err := sh.unsetVar(base, mode == "n"); err != nil {
					sh.errorf("unset: %s", err.Error())
					status = 1
				}
				continue
			}
			v := sh.getVar(base)
			if v != nil && !v.isArray() && v.attrs&aNameref == 0 {
				if idx, err := sh.arithString(sub); err == nil && idx == 0 {
					// s[0] of a scalar is s (s["key"] too: key is 0)
					if err := sh.unsetVar(base, false); err != nil {
						sh.errorf("unset: %s", err.Error())
						status = 1
					}
					continue
				}
				sh.errorf("unset: %s: not an array variable", base)
				status = 1
				continue
			}
			if v != nil && v.assc != nil {
				if err := sh.unsetElem(base, sub); err != nil {
					sh.errorf("unset: %s", err.Error())
					status = 1
				}
				continue
			}
			idx, err := sh.arithString(sub)
			if err != nil {
				sh.errorf("%s", err.Error())
				status = 1
				continue
			}
			if err := sh.unsetElem(base, strconv.FormatInt(idx, 10)); err != nil {
				sh.errorf("unset: %s", err.Error())
				status = 1
			}
			continue
		}
		if !validName(n) {
			if mode == "" || mode == "f" {
				// not a variable: maybe a function's name
				if fn, ok := sh.funcs.m[n]; ok && !fn.ro {
					delete(sh.funcsWritable(), n)
				}
				continue
			}
			sh.errorf("unset: `%s': not a valid identifier", n)
			status = 1
			continue
		}
		v, _ := sh.lookup(n)
		if v == nil && mode == "" {
			if fn, ok := sh.funcs.m[n]; ok && !fn.ro {
				delete(sh.funcsWritable(), n)
			}
			continue
		}
		if err := sh.unsetVar(n, mode == "n"); err != nil {
			sh.errorf("unset: %s", err.Error())
			status = 1
		}
	}
	return status
}

// enterPosix makes the change that set -o posix makes beside the option:
// inherit_errexit goes on (and stays on after set +o posix, as in bash).
func (sh *shell) enterPosix() {
	sh.shopt.inheritErrexit = true
}
