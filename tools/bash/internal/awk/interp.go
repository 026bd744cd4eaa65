package awk

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Config is what a run of a program may touch. Nothing else is reachable:
// files, commands and the environment go through these fields.
type Config struct {
	// Stdin, Stdout and Stderr are the program's streams (Stdin may be
	// nil: empty).
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Args are the operands after the program: input files, "-" for
	// stdin, and NAME=VALUE assignments done when they are reached.
	Args []string
	// Vars are the -v assignments, done before BEGIN (escape sequences
	// in values are processed).
	Vars [][2]string
	// FS, if set, is -F's field separator.
	FS *string
	// Environ fills ENVIRON ("NAME=VALUE" items).
	Environ []string
	// Open opens a file to read (operands, getline < file); nil refuses.
	Open func(name string) (io.Reader, error)
	// Create opens a file to write (print > file, >> file); nil refuses.
	// The writer is closed if it is an io.Closer.
	Create func(name string, appendTo bool) (io.Writer, error)
	// Exec runs a shell command line (system(), "cmd" | getline, print |
	// "cmd") with stdin and stdout, and returns its exit status; nil
	// refuses.
	Exec func(ctx context.Context, cmdline string, stdin io.Reader, stdout io.Writer) int
	// Now seeds srand() without an argument; nil is time.Now.
	Now func() time.Time
	// MaxDepth bounds the nesting of function calls (default 1000).
	MaxDepth int
	// MaxStringBytes bounds the strings a program builds (default 16 MiB)
	// and MaxArrayElems the elements of one array (default 1,000,000), so
	// that a program that doubles a string or fills an array in a loop
	// fails instead of exhausting memory.
	MaxStringBytes int
	MaxArrayElems  int
	// Hold, if set, is told the bytes a new array element holds (its key
	// and value, and an overhead); an error stops the program with it
	// (the script's memory budget).
	Hold func(n int64) error
}

// RuntimeError is an error that stopped a program while it ran.
type RuntimeError struct{ Msg string }

func (e *RuntimeError) Error() string { return e.Msg }

// Control flow that crosses expressions (next, exit inside functions).
type (
	ctlNext     struct{}
	ctlNextFile struct{}
	ctlExit     struct{}
)

// Results of executing a statement.
const (
	flowNormal = iota
	flowBreak
	flowContinue
	flowReturn
)

// cell holds a variable: a scalar, an array, or (a function parameter
// given an untyped variable) a reference that becomes the caller's array
// if the function uses it as one.
type cell struct {
	v   value
	arr *array
	ref *cell
}

// array is an associative array that iterates in insertion order, so that
// for (k in a) is deterministic.
type array struct {
	idx  map[string]int
	keys []string
	vals []value
	dead int
}

func newArray() *array { return &array{idx: map[string]int{}} }

func (a *array) get(k string) (value, bool) {
	i, ok := a.idx[k]
	if !ok {
		return value{}, false
	}
	return a.vals[i], true
}

func (a *array) set(k string, v value) {
	if i, ok := a.idx[k]; ok {
		a.vals[i] = v
		return
	}
	a.idx[k] = len(a.keys)
	a.keys = append(a.keys, k)
	a.vals = append(a.vals, v)
}

func (a *array) delete(k string) {
	i, ok := a.idx[k]
	if !ok {
		return
	}
	delete(a.idx, k)
	a.keys[i] = "\x00deleted"
	a.vals[i] = value{}
	a.dead++
	if a.dead > 32 && a.dead > len(a.keys)/2 {
		a.compact()
	}
}

func (a *array) compact() {
	keys := make([]string, 0, len(a.idx))
	vals := make([]value, 0, len(a.idx))
	for i, k := range a.keys {
		if j, ok := a.idx[k]; ok && j == i {
			a.idx[k] = len(keys)
			keys = append(keys, k)
			vals = append(vals, a.vals[i])
		}
	}
	a.keys, a.vals, a.dead = keys, vals, 0
}

func (a *array) clear() {
	a.idx = map[string]int{}
	a.keys, a.vals, a.dead = nil, nil, 0
}

func (a *array) len() int { return len(a.idx) }

// liveKeys returns the keys in insertion order.
func (a *array) liveKeys() []string {
	out := make([]string, 0, len(a.idx))
	for i, k := range a.keys {
		if j, ok := a.idx[k]; ok && j == i {
			out = append(out, k)
		}
	}
	return out
}

type interp struct {
	spare *bufio.Reader // the main input's buffer, kept between operands

	prog    *Program
	cfg     *Config
	ctx     context.Context
	globals []cell
	frame   []cell
	depth   int
	steps   int

	// The current record.
	line   string
	fields []string
	split  bool

	// Main input.
	argIndex int
	usedFile bool
	input    *recordReader

	inputs  map[string]*recordReader
	outputs map[string]*outStream
	stdout  *bufio.Writer

	regexes    regexCache
	rangeOn    []bool
	rng        *rand.Rand
	seed       float64
	exitCode   int
	inEnd      bool
	lastOutErr error
	frameRet   value // a function's return value
}

// Run runs the program: BEGIN, then every record of the operands, then
// END. It returns the exit status (exit's argument, 0 by default) and an
// error for what stopped the program (a runtime error, 2; an unreadable
// input file; the context ending).
func (p *Program) Run(ctx context.Context, cfg *Config) (status int, err error) {
	in := &interp{prog: p, cfg: cfg, ctx: ctx, globals: make([]cell, len(p.globals)),
		inputs: map[string]*recordReader{}, outputs: map[string]*outStream{}, regexes: regexCache{},
		rangeOn: make([]bool, len(p.items)), argIndex: 1}
	if cfg.MaxDepth <= 0 {
		cfg.MaxDepth = 1000
	}
	if cfg.MaxStringBytes <= 0 {
		cfg.MaxStringBytes = 16 << 20
	}
	if cfg.MaxArrayElems <= 0 {
		cfg.MaxArrayElems = 1_000_000
	}
	in.stdout = bufio.NewWriterSize(cfg.Stdout, 8192)
	in.rng = rand.New(rand.NewPCG(0, 0))
	defer func() {
		if r := recover(); r != nil {
			switch e := r.(type) {
			case *RuntimeError:
				err = e
				status = 2
			case ctlExit, ctlNext, ctlNextFile:
				// next outside a record loop: ignore
			default:
				panic(r)
			}
		}
		in.closeAll()
		if ferr := in.stdout.Flush(); ferr != nil && err == nil {
			err = &RuntimeError{Msg: "write error: " + ferr.Error()}
			status = 2
		}
		if err == nil && in.lastOutErr != nil {
			err = &RuntimeError{Msg: "write error: " + in.lastOutErr.Error()}
			status = 2
		}
	}()
	in.init()
	return in.run()
}

// checkLen fails when a string of n bytes would pass the bound.
func (in *interp) checkLen(n int) {
	if n > in.cfg.MaxStringBytes {
		in.fail("string of %d bytes exceeds the limit of %d bytes", n, in.cfg.MaxStringBytes)
	}
}

// setElem stores an array element, within the bound on elements.
func (in *interp) setElem(a *array, k string, v value) {
	if _, ok := a.idx[k]; !ok {
		if a.len() >= in.cfg.MaxArrayElems {
			in.fail("array of more than %d elements exceeds the limit", in.cfg.MaxArrayElems)
		}
		if in.cfg.Hold != nil {
			if err := in.cfg.Hold(int64(len(k)+len(v.s)) + 64); err != nil {
				panic(&RuntimeError{Msg: err.Error()})
			}
		}
	}
	a.set(k, v)
}

func (in *interp) fail(format string, args ...any) {
	panic(&RuntimeError{Msg: fmt.Sprintf(format, args...)})
}

func (in *interp) init() {
	g := in.globals
	g[idxFS].v = str(" ")
	g[idxOFS].v = str(" ")
	g[idxORS].v = str("\n")
	g[idxRS].v = str("\n")
	g[idxSUBSEP].v = str("\x1c")
	g[idxCONVFMT].v = str("%.6g")
	g[idxOFMT].v = str("%.6g")
	g[idxNR].v = num(0)
	g[idxFNR].v = num(0)
	g[idxRSTART].v = num(0)
	g[idxRLENGTH].v = num(-1)
	g[idxFILENAME].v = str("")
	env := newArray()
	for _, kv := range in.cfg.Environ {
		k, v, _ := strings.Cut(kv, "=")
		env.set(k, strnum(v))
	}
	g[idxENVIRON].arr = env
	argv := newArray()
	argv.set("0", str("awk"))
	for i, a := range in.cfg.Args {
		argv.set(strconv.Itoa(i+1), strnum(a))
	}
	g[idxARGV].arr = argv
	g[idxARGC].v = num(float64(len(in.cfg.Args) + 1))
	if in.cfg.FS != nil {
		g[idxFS].v = str(*in.cfg.FS)
	}
	for _, kv := range in.cfg.Vars {
		in.assignVar(kv[0], kv[1])
	}
}

// assignVar does a -v or operand assignment: escapes are processed and
// the value is a strnum.
func (in *interp) assignVar(name, val string) {
	for i, n := range in.prog.globals {
		if n == name {
			if in.globals[i].arr != nil {
				in.fail("can't assign to %s; it's an array name", name)
			}
			in.setGlobal(i, strnum(unescapeAssign(val)))
			return
		}
	}
	// A variable the program never mentions: nothing to do.
}

// unescapeAssign processes the escape sequences of an assignment's value.
func unescapeAssign(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	l := &lexer{src: s + `"`}
	var b strings.Builder
	for l.pos < len(s) {
		c := s[l.pos]
		if c == '\\' && l.pos+1 < len(s) {
			l.advance(1)
			l.escape(&b)
			continue
		}
		b.WriteByte(c)
		l.advance(1)
	}
	return b.String()
}

func (in *interp) run() (int, error) {
	exited := false
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(ctlExit); ok {
					exited = true
					return
				}
				panic(r)
			}
		}()
		for _, b := range in.prog.begins {
			in.execBlock(b)
		}
	}()
	if !exited && (len(in.prog.items) > 0 || len(in.prog.ends) > 0) {
		exited = in.records()
	}
	in.inEnd = true
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(ctlExit); ok {
					return
				}
				panic(r)
			}
		}()
		for _, b := range in.prog.ends {
			in.execBlock(b)
		}
	}()
	return in.exitCode, nil
}

// records runs the rules on every record; true when exit ended it.
func (in *interp) records() (exited bool) {
	for {
		rec, ok := in.nextMain()
		if !ok {
			return false
		}
		in.setRecord(rec)
		if in.rules() {
			return true
		}
	}
}

// rules runs the pattern-action rules on the current record; true when
// exit was called.
func (in *interp) rules() (exited bool) {
	defer func() {
		if r := recover(); r != nil {
			switch r.(type) {
			case ctlExit:
				exited = true
			case ctlNext:
			case ctlNextFile:
				in.input = nil
			default:
				panic(r)
			}
		}
	}()
	for i, it := range in.prog.items {
		if !in.matches(i, it) {
			continue
		}
		if it.body == nil {
			in.printRecord()
			continue
		}
		in.execBlock(it.body)
	}
	return false
}

func (in *interp) matches(i int, it *item) bool {
	if it.pattern == nil {
		return true
	}
	if it.pattern2 == nil {
		return in.cond(it.pattern)
	}
	if in.rangeOn[i] {
		if in.cond(it.pattern2) {
			in.rangeOn[i] = false
		}
		return true
	}
	if in.cond(it.pattern) {
		in.rangeOn[i] = !in.cond(it.pattern2)
		return true
	}
	return false
}

// cond evaluates a pattern or condition: a bare regex matches $0.
func (in *interp) cond(e expr) bool {
	return in.eval(e).bool()
}

func (in *interp) printRecord() {
	in.write(nil, in.line+in.toStr(in.globals[idxORS].v))
}

// tick checks the context now and then.
func (in *interp) tick() {
	in.steps++
	if in.steps&1023 == 0 && in.ctx.Err() != nil {
		in.fail("interrupted")
	}
}

func (in *interp) execBlock(b *blockStmt) int {
	for _, s := range b.stmts {
		if f := in.exec(s); f != flowNormal {
			return f
		}
	}
	return flowNormal
}

func (in *interp) exec(s stmt) int {
	in.tick()
	switch s := s.(type) {
	case *exprStmt:
		in.eval(s.x)
	case *printStmt:
		in.print(s)
	case *blockStmt:
		return in.execBlock(s)
	case *ifStmt:
		if in.cond(s.cond) {
			return in.exec(s.then)
		} else if s.el != nil {
			return in.exec(s.el)
		}
	case *whileStmt:
		for in.cond(s.cond) {
			in.tick()
			switch in.exec(s.body) {
			case flowBreak:
				return flowNormal
			case flowReturn:
				return flowReturn
			}
		}
	case *doStmt:
		for {
			in.tick()
			f := in.exec(s.body)
			if f == flowBreak {
				break
			}
			if f == flowReturn {
				return flowReturn
			}
			if !in.cond(s.cond) {
				break
			}
		}
	case *forStmt:
		if s.init != nil {
			in.exec(s.init)
		}
		for s.cond == nil || in.cond(s.cond) {
			in.tick()
			f := in.exec(s.body)
			if f == flowBreak {
				break
			}
			if f == flowReturn {
				return flowReturn
			}
			if s.post != nil {
				in.exec(s.post)
			}
		}
	case *forInStmt:
		arr := in.arrayOf(s.arr)
		for _, k := range arr.liveKeys() {
			if _, ok := arr.idx[k]; !ok {
				continue // deleted by the body
			}
			in.tick()
			in.assign(s.v, strnum(k))
			f := in.exec(s.body)
			if f == flowBreak {
				break
			}
			if f == flowReturn {
				return flowReturn
			}
		}
	case *nextStmt:
		if in.inEnd || in.isBegin() {
			in.fail("next used in BEGIN or END")
		}
		panic(ctlNext{})
	case *nextfileStmt:
		panic(ctlNextFile{})
	case *exitStmt:
		if s.x != nil {
			in.exitCode = int(int32(in.eval(s.x).num())) & 0xff
		}
		panic(ctlExit{})
	case *returnStmt:
		if s.x != nil {
			in.frameRet = in.eval(s.x)
		} else {
			in.frameRet = value{}
		}
		return flowReturn
	case *breakStmt:
		return flowBreak
	case *continueStmt:
		return flowContinue
	case *deleteStmt:
		arr := in.arrayOf(s.arr)
		if s.keys == nil {
			arr.clear()
		} else {
			arr.delete(in.key(s.keys))
		}
	}
	return flowNormal
}

// isBegin reports whether no record has been read (BEGIN runs then).
func (in *interp) isBegin() bool {
	return in.globals[idxNR].v.num() == 0 && in.input == nil && !in.usedFile
}

// key renders array subscripts, joined by SUBSEP.
func (in *interp) key(keys []expr) string {
	if len(keys) == 1 {
		return in.toStr(in.eval(keys[0]))
	}
	sep := in.toStr(in.globals[idxSUBSEP].v)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(in.toStr(in.eval(k)))
	}
	return b.String()
}

// cellOf returns a variable's cell.
func (in *interp) cellOf(v *varExpr) *cell {
	if v.scope == 1 {
		return &in.frame[v.idx]
	}
	return &in.globals[v.idx]
}

// arrayOf returns the array a variable holds, making an untyped variable
// an array.
func (in *interp) arrayOf(v *varExpr) *array {
	c := in.cellOf(v)
	if c.arr != nil {
		return c.arr
	}
	if c.ref != nil {
		r := c.ref
		for r.ref != nil && r.arr == nil {
			r = r.ref
		}
		if r.arr == nil {
			if r.v.kind != kUninit {
				in.fail("can't use scalar %s as an array", v.name)
			}
			r.arr = newArray()
		}
		c.arr = r.arr
		return c.arr
	}
	if c.v.kind != kUninit || v.scope == 0 && v.idx < numSpecials {
		in.fail("can't use scalar %s as an array", v.name)
	}
	c.arr = newArray()
	return c.arr
}

func (in *interp) getVar(v *varExpr) value {
	if v.scope == 0 && v.idx == idxNF {
		in.splitRecord()
		return num(float64(len(in.fields)))
	}
	c := in.cellOf(v)
	if c.arr != nil {
		in.fail("can't use array %s in a scalar context", v.name)
	}
	return c.v
}

func (in *interp) setGlobal(i int, val value) {
	if i == idxNF {
		in.setNF(int(val.num()))
		return
	}
	in.globals[i].v = val
}

// assign stores val in an lvalue.
func (in *interp) assign(lhs expr, val value) {
	switch l := lhs.(type) {
	case *varExpr:
		if l.scope == 0 {
			if in.globals[l.idx].arr != nil {
				in.fail("can't assign to %s; it's an array name", l.name)
			}
			in.setGlobal(l.idx, val)
			return
		}
		c := &in.frame[l.idx]
		if c.arr != nil {
			in.fail("can't assign to %s; it's an array name", l.name)
		}
		c.v = val
	case *fieldExpr:
		in.setField(in.fieldIndex(l.index), in.toStr(val), val)
	case *indexExpr:
		in.setElem(in.arrayOf(l.arr), in.key(l.keys), val)
	case *groupExpr:
		in.assign(l.x, val)
	default:
		in.fail("cannot assign to this expression")
	}
}

func (in *interp) fieldIndex(e expr) int {
	n := in.eval(e).num()
	if n < 0 || math.IsNaN(n) {
		in.fail("attempt to access field %s", formatNum(n, "%.6g"))
	}
	if n > 1e6 {
		in.fail("field index %s is too large", formatNum(n, "%.6g"))
	}
	return int(n)
}

func (in *interp) toStr(v value) string {
	switch v.kind {
	case kNum:
		return formatNum(v.n, in.globals[idxCONVFMT].v.s)
	case kUninit:
		return ""
	}
	return v.s
}

// outStr is how print renders a value: numbers with OFMT.
func (in *interp) outStr(v value) string {
	if v.kind == kNum {
		return formatNum(v.n, in.globals[idxOFMT].v.s)
	}
	return in.toStr(v)
}

func (in *interp) eval(e expr) value {
	switch e := e.(type) {
	case *numLit:
		return num(e.v)
	case *strLit:
		return str(e.v)
	case *regexLit:
		return boolean(e.re.MatchString(in.line))
	case *varExpr:
		return in.getVar(e)
	case *fieldExpr:
		return in.getField(in.fieldIndex(e.index))
	case *indexExpr:
		arr := in.arrayOf(e.arr)
		k := in.key(e.keys)
		if v, ok := arr.get(k); ok {
			return v
		}
		in.setElem(arr, k, value{})
		return value{}
	case *groupExpr:
		return in.eval(e.x)
	case *listExpr:
		in.fail("a parenthesized list is only allowed before in")
	case *assignExpr:
		return in.evalAssign(e)
	case *condExpr:
		if in.cond(e.cond) {
			return in.eval(e.yes)
		}
		return in.eval(e.no)
	case *binaryExpr:
		return in.binary(e)
	case *unaryExpr:
		switch e.op {
		case tNot:
			return boolean(!in.eval(e.x).bool())
		case tMinus:
			return num(-in.eval(e.x).num())
		}
		return num(in.eval(e.x).num())
	case *incDecExpr:
		old := in.eval(e.lhs).num()
		in.assign(e.lhs, num(old+e.delta))
		if e.pre {
			return num(old + e.delta)
		}
		return num(old)
	case *inExpr:
		arr := in.arrayOf(e.arr)
		_, ok := arr.get(in.key(e.keys))
		return boolean(ok)
	case *matchExpr:
		s := in.toStr(in.eval(e.x))
		return boolean(in.regex(e.re).MatchString(s) != e.neg)
	case *callExpr:
		return in.call(e)
	case *builtinExpr:
		return in.builtin(e)
	case *getlineExpr:
		return in.getline(e)
	}
	in.fail("unknown expression %T", e)
	return value{}
}

func (in *interp) evalAssign(e *assignExpr) value {
	var v value
	if e.op == tAssign {
		v = in.eval(e.rhs)
		if v.kind == kUninit {
			v = value{kind: kUninit}
		}
	} else {
		r := in.eval(e.rhs).num()
		l := in.eval(e.lhs).num()
		v = num(in.arith(e.op, l, r))
	}
	in.assign(e.lhs, v)
	return v
}

func (in *interp) arith(op tokKind, l, r float64) float64 {
	switch op {
	case tPlus, tAddAssign:
		return l + r
	case tMinus, tSubAssign:
		return l - r
	case tStar, tMulAssign:
		return l * r
	case tSlash, tDivAssign:
		if r == 0 {
			in.fail("division by zero")
		}
		return l / r
	case tPercent, tModAssign:
		if r == 0 {
			in.fail("division by zero in %%")
		}
		return math.Mod(l, r)
	case tCaret, tPowAssign:
		return pow(l, r)
	}
	return 0
}

// pow is x^y, exact for integer exponents as awks compute them.
func pow(x, y float64) float64 {
	if y == math.Trunc(y) && math.Abs(y) <= 1024 {
		n := int(math.Abs(y))
		r := 1.0
		b := x
		for n > 0 {
			if n&1 == 1 {
				r *= b
			}
			b *= b
			n >>= 1
		}
		if y < 0 {
			return 1 / r
		}
		return r
	}
	return math.Pow(x, y)
}

func (in *interp) binary(e *binaryExpr) value {
	switch e.op {
	case tAnd:
		return boolean(in.cond(e.l) && in.cond(e.r))
	case tOr:
		return boolean(in.cond(e.l) || in.cond(e.r))
	case tString:
		l := in.toStr(in.eval(e.l))
		r := in.toStr(in.eval(e.r))
		in.checkLen(len(l) + len(r))
		return str(l + r)
	case tLess, tLessEqual, tGreater, tGreaterEqual, tEqual, tNotEqual:
		c := in.compare(in.eval(e.l), in.eval(e.r))
		switch e.op {
		case tLess:
			return boolean(c < 0)
		case tLessEqual:
			return boolean(c <= 0)
		case tGreater:
			return boolean(c > 0)
		case tGreaterEqual:
			return boolean(c >= 0)
		case tEqual:
			return boolean(c == 0)
		}
		return boolean(c != 0)
	}
	l := in.eval(e.l).num()
	r := in.eval(e.r).num()
	return num(in.arith(e.op, l, r))
}

// compare orders two values: as numbers when neither is a string (a
// strnum counts as a number), else as strings.
func (in *interp) compare(a, b value) int {
	if a.kind != kStr && b.kind != kStr {
		x, y := a.num(), b.num()
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		case x == y:
			return 0
		}
		// NaN: fall back to strings.
	}
	return strings.Compare(in.toStr(a), in.toStr(b))
}

// call runs a user function.
func (in *interp) call(e *callExpr) value {
	fn := in.prog.funcs[e.fn]
	if len(e.args) > len(fn.params) {
		in.fail("function %s called with %d arguments, accepts only %d", fn.name, len(e.args), len(fn.params))
	}
	if in.depth >= in.cfg.MaxDepth {
		in.fail("function call nesting too deep (more than %d)", in.cfg.MaxDepth)
	}
	frame := make([]cell, fn.nlocals)
	for i, a := range e.args {
		if v, ok := a.(*varExpr); ok && !(v.scope == 0 && v.idx == idxNF) {
			c := in.cellOf(v)
			switch {
			case c.arr != nil:
				frame[i].arr = c.arr
				continue
			case c.ref != nil && c.v.kind == kUninit:
				frame[i].ref = c.ref
				continue
			case c.v.kind == kUninit && !(v.scope == 0 && v.idx < numSpecials):
				frame[i].ref = c
				continue
			}
			frame[i].v = c.v
			continue
		}
		frame[i].v = in.eval(a)
	}
	saved := in.frame
	in.frame = frame
	in.depth++
	in.frameRet = value{}
	defer func() {
		in.frame = saved
		in.depth--
	}()
	in.execBlock(fn.body)
	ret := in.frameRet
	in.frameRet = value{}
	return ret
}

// regex returns the regular expression of a match operand: a literal, or
// the string value of any other expression.
func (in *interp) regex(e expr) *regexpT {
	if r, ok := e.(*regexLit); ok {
		return r.re
	}
	return in.dynRegex(in.toStr(in.eval(e)))
}

func (in *interp) dynRegex(src string) *regexpT {
	if re, ok := in.regexes[src]; ok {
		return re
	}
	re, err := compileRegex(src)
	if err != nil {
		in.fail("invalid regular expression %q: %v", src, err)
	}
	if len(in.regexes) > 1000 {
		clear(in.regexes)
	}
	in.regexes[src] = re
	return re
}

// --- records and fields ---

func (in *interp) setRecord(s string) {
	in.line = s
	in.split = false
}

func (in *interp) splitRecord() {
	if in.split {
		return
	}
	in.split = true
	in.fields = in.splitFS(in.line, in.toStr(in.globals[idxFS].v), in.toStr(in.globals[idxRS].v) == "", in.fields[:0])
}

// splitFS splits s by the field separator fs; paragraph mode (RS "")
// also splits at newlines.
func (in *interp) splitFS(s, fs string, paragraph bool, out []string) []string {
	if s == "" {
		return out
	}
	switch {
	case fs == " ":
		return appendFields(out, s)
	case fs == "":
		for _, r := range s {
			out = append(out, string(r))
		}
		return out
	case len(fs) == 1 && fs != "\\" && !paragraph:
		return append(out, strings.Split(s, fs)...)
	}
	expr := fs
	if len(fs) == 1 {
		expr = regexpQuote(fs)
	}
	if paragraph {
		expr = "(" + expr + ")|\n"
	}
	re := in.dynRegex(expr)
	prev := 0
	for _, loc := range re.FindAllStringIndex(s, -1) {
		if loc[1] == loc[0] {
			continue
		}
		out = append(out, s[prev:loc[0]])
		prev = loc[1]
	}
	return append(out, s[prev:])
}

// appendFields splits at runs of blanks (space, tab, newline), ignoring
// those at the ends.
func appendFields(out []string, s string) []string {
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
			i++
		}
		if i >= len(s) {
			return out
		}
		j := i
		for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != '\n' {
			j++
		}
		out = append(out, s[i:j])
		i = j
	}
}

func (in *interp) getField(i int) value {
	if i == 0 {
		return strnum(in.line)
	}
	in.splitRecord()
	if i > len(in.fields) {
		return value{}
	}
	return strnum(in.fields[i-1])
}

func (in *interp) setField(i int, s string, v value) {
	if i == 0 {
		in.setRecord(s)
		return
	}
	in.splitRecord()
	for len(in.fields) < i {
		in.fields = append(in.fields, "")
	}
	in.fields[i-1] = s
	in.rebuild()
}

func (in *interp) setNF(n int) {
	if n < 0 {
		in.fail("NF set to a negative value")
	}
	in.splitRecord()
	for len(in.fields) < n {
		in.fields = append(in.fields, "")
	}
	in.fields = in.fields[:n]
	in.rebuild()
}

// rebuild makes $0 from the fields, joined by OFS.
func (in *interp) rebuild() {
	in.line = strings.Join(in.fields, in.toStr(in.globals[idxOFS].v))
	in.split = true
}

// --- input ---

// recordReader reads records of one input.
type recordReader struct {
	br     *bufio.Reader
	rest   string // regex RS: the unread input
	loaded bool
	closer io.Closer
	eof    bool
}

func newRecordReader(r io.Reader) *recordReader {
	return &recordReader{br: bufio.NewReaderSize(r, 32*1024)}
}

// read returns the next record, split by rs.
func (in *interp) read(rr *recordReader, rs string) (string, bool) {
	if rr.eof {
		return "", false
	}
	switch {
	case rs == "\n" || len(rs) == 1:
		s, err := rr.br.ReadString(rs[0])
		if err != nil && err != io.EOF {
			in.fail("read error: %v", err)
		}
		if s == "" && err == io.EOF {
			rr.eof = true
			return "", false
		}
		return strings.TrimSuffix(s, rs), true
	case rs == "":
		// Paragraph mode: skip blank lines, read to the next one.
		var b strings.Builder
		for {
			line, err := rr.br.ReadString('\n')
			if err != nil && err != io.EOF {
				in.fail("read error: %v", err)
			}
			text := strings.TrimSuffix(line, "\n")
			if text == "" && line != "" {
				if b.Len() > 0 {
					// End of the paragraph: swallow further blank lines.
					for {
						bs, perr := rr.br.Peek(1)
						if perr != nil || bs[0] != '\n' {
							break
						}
						rr.br.ReadByte()
					}
					return b.String(), true
				}
				continue
			}
			if text != "" {
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(text)
			}
			if err == io.EOF {
				rr.eof = true
				if b.Len() > 0 {
					return b.String(), true
				}
				return "", false
			}
		}
	}
	// A regular expression RS: read the whole input, then cut.
	if !rr.loaded {
		data, err := io.ReadAll(rr.br)
		if err != nil {
			in.fail("read error: %v", err)
		}
		rr.rest, rr.loaded = string(data), true
	}
	if rr.rest == "" {
		rr.eof = true
		return "", false
	}
	re := in.dynRegex(rs)
	loc := re.FindStringIndex(rr.rest)
	for loc != nil && loc[0] == loc[1] {
		loc = nil
	}
	if loc == nil {
		s := rr.rest
		rr.rest = ""
		return s, true
	}
	s := rr.rest[:loc[0]]
	rr.rest = rr.rest[loc[1]:]
	return s, true
}

// nextMain reads the next record of the main input, moving through the
// operands; it counts NR and FNR.
func (in *interp) nextMain() (string, bool) {
	for {
		if in.input == nil && !in.openNext() {
			return "", false
		}
		rec, ok := in.read(in.input, in.toStr(in.globals[idxRS].v))
		if ok {
			in.globals[idxNR].v = num(in.globals[idxNR].v.num() + 1)
			in.globals[idxFNR].v = num(in.globals[idxFNR].v.num() + 1)
			return rec, true
		}
		if in.input.closer != nil {
			in.input.closer.Close()
		}
		in.spare = in.input.br
		in.input = nil
	}
}

// mainReader reads the main input from r, reusing the buffer of the
// previous operand (awk over many small files would otherwise allocate a
// buffer per file).
func (in *interp) mainReader(r io.Reader) *recordReader {
	if in.spare == nil {
		return newRecordReader(r)
	}
	br := in.spare
	in.spare = nil
	br.Reset(r)
	return &recordReader{br: br}
}

// openNext opens the next input operand (doing the assignments before
// it); false when there is none left.
func (in *interp) openNext() bool {
	argv := in.globals[idxARGV].arr
	for {
		argc := int(in.globals[idxARGC].v.num())
		if in.argIndex >= argc {
			if in.usedFile {
				return false
			}
			in.usedFile = true
			in.input = in.mainReader(orEmpty(in.cfg.Stdin))
			in.globals[idxFNR].v = num(0)
			return true
		}
		v, _ := argv.get(strconv.Itoa(in.argIndex))
		in.argIndex++
		arg := in.toStr(v)
		if arg == "" {
			continue
		}
		if name, val, ok := strings.Cut(arg, "="); ok && isName(name) {
			in.assignVar(name, val)
			continue
		}
		in.usedFile = true
		in.globals[idxFILENAME].v = str(arg)
		in.globals[idxFNR].v = num(0)
		if arg == "-" || arg == "/dev/stdin" {
			in.input = in.mainReader(orEmpty(in.cfg.Stdin))
			return true
		}
		r, err := in.openFile(arg)
		if err != nil {
			in.fail("cannot open %s: %v", arg, err)
		}
		in.input = in.mainReader(r)
		if c, ok := r.(io.Closer); ok {
			in.input.closer = c
		}
		return true
	}
}

func orEmpty(r io.Reader) io.Reader {
	if r == nil {
		return strings.NewReader("")
	}
	return r
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func (in *interp) openFile(name string) (io.Reader, error) {
	if in.cfg.Open == nil {
		return nil, errors.New("reading files is disabled")
	}
	return in.cfg.Open(name)
}

func (in *interp) getline(e *getlineExpr) value {
	var rec string
	var ok bool
	switch e.from {
	case getSimple:
		if in.inEnd && in.input == nil && in.usedFile && in.argIndex >= int(in.globals[idxARGC].v.num()) {
			return num(0)
		}
		rec, ok = in.nextMain()
		if !ok {
			return num(0)
		}
	case getFile:
		name := in.toStr(in.eval(e.src))
		rr, err := in.inputFile(name)
		if err != nil {
			return num(-1)
		}
		rec, ok = in.read(rr, in.toStr(in.globals[idxRS].v))
		if !ok {
			return num(0)
		}
	case getCmd:
		cmdline := in.toStr(in.eval(e.src))
		rr := in.inputs["|"+cmdline]
		if rr == nil {
			if in.cfg.Exec == nil {
				in.fail("running commands is disabled")
			}
			in.stdout.Flush()
			var out bytes.Buffer
			in.cfg.Exec(in.ctx, cmdline, strings.NewReader(""), &out)
			rr = newRecordReader(&out)
			in.inputs["|"+cmdline] = rr
		}
		rec, ok = in.read(rr, in.toStr(in.globals[idxRS].v))
		if !ok {
			return num(0)
		}
		in.globals[idxNR].v = num(in.globals[idxNR].v.num() + 1)
	}
	if e.lhs == nil {
		in.setRecord(rec)
	} else {
		in.assign(e.lhs, strnum(rec))
	}
	return num(1)
}

func (in *interp) inputFile(name string) (*recordReader, error) {
	if rr, ok := in.inputs[name]; ok {
		return rr, nil
	}
	var r io.Reader
	if name == "-" || name == "/dev/stdin" {
		r = orEmpty(in.cfg.Stdin)
	} else {
		f, err := in.openFile(name)
		if err != nil {
			return nil, err
		}
		r = f
	}
	rr := newRecordReader(r)
	if c, ok := r.(io.Closer); ok {
		rr.closer = c
	}
	in.inputs[name] = rr
	return rr, nil
}

// --- output ---

// outStream is a file or command print writes to.
type outStream struct {
	w      io.Writer
	pipe   bool
	cmd    string
	buf    bytes.Buffer
	closer io.Closer
}

func (in *interp) print(s *printStmt) {
	var text string
	if s.printf {
		args := make([]value, len(s.args)-1)
		for i, a := range s.args[1:] {
			args[i] = in.eval(a)
		}
		text = in.sprintf(in.toStr(in.eval(s.args[0])), args)
	} else if len(s.args) == 0 {
		text = in.line + in.toStr(in.globals[idxORS].v)
	} else {
		var b strings.Builder
		ofs := in.toStr(in.globals[idxOFS].v)
		for i, a := range s.args {
			if i > 0 {
				b.WriteString(ofs)
			}
			b.WriteString(in.outStr(in.eval(a)))
		}
		b.WriteString(in.toStr(in.globals[idxORS].v))
		text = b.String()
	}
	var dest *outStream
	if s.redir != 0 {
		dest = in.stream(in.toStr(in.eval(s.dest)), s.redir)
	}
	in.write(dest, text)
}

func (in *interp) write(dest *outStream, text string) {
	var err error
	switch {
	case dest == nil:
		_, err = in.stdout.WriteString(text)
	case dest.pipe:
		dest.buf.WriteString(text)
	default:
		_, err = io.WriteString(dest.w, text)
	}
	if err != nil {
		in.lastOutErr = err
		panic(&RuntimeError{Msg: "write error: " + err.Error()})
	}
}

// stream returns the output stream for print > name, >> name or | name.
func (in *interp) stream(name string, redir tokKind) *outStream {
	key := name
	if redir == tPipe {
		key = "|" + name
	}
	if st, ok := in.outputs[key]; ok {
		return st
	}
	st := &outStream{}
	switch {
	case redir == tPipe:
		if in.cfg.Exec == nil {
			in.fail("running commands is disabled")
		}
		st.pipe, st.cmd = true, name
	case name == "/dev/stdout" || name == "-":
		st.w = flushingWriter{in}
	case name == "/dev/stderr":
		in.stdout.Flush()
		st.w = in.cfg.Stderr
	default:
		if in.cfg.Create == nil {
			in.fail("writing files is disabled")
		}
		w, err := in.cfg.Create(name, redir == tAppend)
		if err != nil {
			in.fail("can't redirect to %s: %v", name, err)
		}
		st.w = w
		if c, ok := w.(io.Closer); ok {
			st.closer = c
		}
	}
	in.outputs[key] = st
	return st
}

// flushingWriter writes to the program's stdout (for "/dev/stdout").
type flushingWriter struct{ in *interp }

func (f flushingWriter) Write(p []byte) (int, error) { return f.in.stdout.Write(p) }

// closeStream closes an output stream or input; the status of a command.
func (in *interp) closeStream(name string) int {
	status := -1
	for _, key := range []string{name, "|" + name} {
		if st, ok := in.outputs[key]; ok {
			status = in.finish(st)
			delete(in.outputs, key)
		}
		if rr, ok := in.inputs[key]; ok {
			if rr.closer != nil {
				rr.closer.Close()
			}
			delete(in.inputs, key)
			if status < 0 {
				status = 0
			}
		}
	}
	return status
}

// finish flushes a stream: a pipe's command runs now, on what was printed
// to it.
func (in *interp) finish(st *outStream) int {
	if st.pipe {
		in.stdout.Flush()
		return in.cfg.Exec(in.ctx, st.cmd, bytes.NewReader(st.buf.Bytes()), flushingWriter{in})
	}
	if st.closer != nil {
		st.closer.Close()
	}
	return 0
}

func (in *interp) closeAll() {
	for _, key := range sortedKeys(in.outputs) {
		in.finish(in.outputs[key])
	}
	clear(in.outputs)
	for _, rr := range in.inputs {
		if rr.closer != nil {
			rr.closer.Close()
		}
	}
}

func sortedKeys(m map[string]*outStream) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Pipes run in the order their names sort: deterministic.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// charLen is the length of s in characters.
func charLen(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return utf8.RuneCountInString(s)
		}
	}
	return len(s)
}
