package coreutils

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/itchyny/gojq"
)

// JQCache keeps compiled jq filters for reuse across runs. Filters whose
// compiled form depends on the run ($ENV, env, input, inputs) are never
// cached. It is safe for concurrent use.
type JQCache struct {
	mu    sync.Mutex
	codes map[string]*gojq.Code
}

// maxJQCache bounds the cache; it is emptied when full.
const maxJQCache = 512

func (c *JQCache) get(key string) *gojq.Code {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.codes[key]
}

func (c *JQCache) put(key string, code *gojq.Code) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.codes == nil || len(c.codes) >= maxJQCache {
		c.codes = make(map[string]*gojq.Code)
	}
	c.codes[key] = code
}

type jqOpts struct {
	raw, join, compact, nullInput, slurp, exitStatus, rawInput, tab, sortKeys bool
	ascii                                                                     bool
	indent                                                                    int
	filter                                                                    string
	haveFilter                                                                bool
	varNames                                                                  []string
	varValues                                                                 []any
	order                                                                     *jqKeyOrder
}

// jqCmd implements jq with gojq: jq [-r -j -a -c -n -s -e -R -S -M -C
// --tab --indent N --arg k v --argjson k json --rawfile k f --slurpfile k
// f --args --jsonargs] [FILTER] [FILE...], reading JSON from the files or
// stdin; without a filter, "." prints the input. $ARGS holds the named
// and positional arguments; debug and stderr write to stderr,
// input_filename names the file of the current input. Exit status: 0 ok,
// 1 last output false/null with -e, 2 usage or input error, 3 compile
// error, 4 no output with -e, 5 runtime error.
func jqCmd(c *cmd, args []string) int {
	o := jqOpts{indent: 2}
	var files []string
	positionalMode := "" // "", "args" or "jsonargs": operands after the filter are $ARGS.positional
	var positional []any
	var named map[string]any // $ARGS.named, made on first use
	operand := func(a string) int {
		switch {
		case !o.haveFilter:
			o.filter, o.haveFilter = a, true
		case positionalMode == "args":
			positional = append(positional, a)
		case positionalMode == "jsonargs":
			v, err := decodeJSONValue(a)
			if err != nil {
				return c.errf(2, "invalid JSON text passed to --jsonargs")
			}
			positional = append(positional, v)
		default:
			files = append(files, a)
		}
		return -1
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			for _, r := range args[i+1:] {
				if st := operand(r); st >= 0 {
					return st
				}
			}
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			if st := operand(a); st >= 0 {
				return st
			}
			continue
		}
		switch a {
		case "--args":
			positionalMode = "args"
		case "--jsonargs":
			positionalMode = "jsonargs"
		case "--ascii-output":
			o.ascii = true
		case "--rawfile", "--slurpfile":
			if i+2 >= len(args) {
				return c.errf(2, "%s takes two parameters (e.g. %s varname filename)", a, a)
			}
			name, f := args[i+1], args[i+2]
			data, err := c.readFile(f)
			if err != nil {
				return c.errf(2, "error: Could not open %s: %s", f, why(err))
			}
			var v any = string(data)
			if a == "--slurpfile" {
				all := []any{}
				dec := newJQDecoder(data, nil)
				for {
					x, err := dec.next()
					if err == io.EOF {
						break
					} else if err != nil {
						return c.errf(2, "error: %s: %v", f, err)
					}
					all = append(all, x)
				}
				v = all
			}
			o.varNames = append(o.varNames, "$"+name)
			o.varValues = append(o.varValues, v)
			if named == nil {
				named = map[string]any{}
			}
			named[name] = v
			i += 2
		case "--seq", "--stream-errors", "--unbuffered":
		case "--raw-output":
			o.raw = true
		case "--join-output":
			o.raw, o.join = true, true
		case "--compact-output":
			o.compact = true
		case "--null-input":
			o.nullInput = true
		case "--slurp":
			o.slurp = true
		case "--exit-status":
			o.exitStatus = true
		case "--raw-input":
			o.rawInput = true
		case "--sort-keys":
			o.sortKeys = true
		case "--monochrome-output", "--color-output":
		case "-f", "--from-file":
			if i+1 >= len(args) {
				return c.errf(2, "%s takes a file name", a)
			}
			data, err := c.readFile(args[i+1])
			if err != nil {
				return c.errf(2, "error: Could not open %s: %s", args[i+1], why(err))
			}
			if o.haveFilter {
				files = append([]string{o.filter}, files...)
			}
			o.filter, o.haveFilter = string(data), true
			i++
		case "--tab":
			o.tab = true
		case "--indent":
			if i+1 >= len(args) {
				return c.errf(2, "--indent takes a number")
			}
			n, err := strconv.Atoi(args[i+1])
			if err != nil || n < 0 || n > 7 {
				return c.errf(2, "--indent takes a number between 0 and 7")
			}
			o.indent = n
			i++
		case "--arg", "--argjson":
			if i+2 >= len(args) {
				return c.errf(2, "%s takes two parameters (e.g. %s varname value)", a, a)
			}
			name, val := args[i+1], args[i+2]
			var v any = val
			if a == "--argjson" {
				var err error
				if v, err = decodeJSONValue(val); err != nil {
					return c.errf(2, "invalid JSON text passed to --argjson")
				}
			}
			o.varNames = append(o.varNames, "$"+name)
			o.varValues = append(o.varValues, v)
			if named == nil {
				named = map[string]any{}
			}
			named[name] = v
			i += 2
		default:
			if strings.HasPrefix(a, "--") {
				return c.errf(2, "unknown option: %s", a)
			}
			for _, f := range a[1:] {
				switch f {
				case 'r':
					o.raw = true
				case 'j':
					o.raw, o.join = true, true
				case 'c':
					o.compact = true
				case 'n':
					o.nullInput = true
				case 's':
					o.slurp = true
				case 'e':
					o.exitStatus = true
				case 'R':
					o.rawInput = true
				case 'S':
					o.sortKeys = true
				case 'a':
					o.ascii = true
				case 'M', 'C':
				default:
					return c.errf(2, "unknown option: %s", a)
				}
			}
		}
	}
	if !o.haveFilter {
		o.filter = "." // as jq does when its input is not a terminal
	}
	if strings.Contains(o.filter, "$ARGS") { // bound only when used: it costs a map per run
		if positional == nil {
			positional = []any{}
		}
		if named == nil {
			named = map[string]any{}
		}
		o.varNames = append(o.varNames, "$ARGS")
		o.varValues = append(o.varValues, map[string]any{"positional": positional, "named": named})
	}
	var names []jqFile
	if len(files) > 0 {
		// Read the files here, to know which one each input came from.
		var all []byte
		for _, f := range files {
			data, err := c.readFile(f)
			if err != nil {
				c.errf(2, "error: Could not open %s: %s", f, why(err))
				c.fail(2)
				continue
			}
			all = append(all, data...)
			if len(data) > 0 && data[len(data)-1] != '\n' {
				all = append(all, '\n')
			}
			names = append(names, jqFile{name: f, end: len(all)})
		}
		c.in = &limitedReader{r: bytes.NewReader(all), n: c.inputBound()}
	}
	return c.done(runJQ(c, &o, names))
}

// jqFile is an input file and where its data ends in the input.
type jqFile struct {
	name string
	end  int
}

func runJQ(c *cmd, o *jqOpts, files []jqFile) int {
	inputs := newJQInputs(c, o)
	inputs.files = files
	code, status := compileJQ(c, o, inputs)
	if code == nil {
		return status
	}
	var last any
	outputs := 0
	bound := jqHeapBound
	if b := c.env.Budget; b != nil {
		// no more than what is left of the script's budget
		if left := b.Limit() - b.Used(); left < int64(bound) {
			bound = uint64(max(left, 1<<20))
		}
	}
	ctx, stopWatch := watchHeap(c.ctx, bound)
	defer stopWatch()
	runOne := func(v any) int {
		iter := code.RunWithContext(ctx, v, o.varValues...)
		for {
			r, ok := iter.Next()
			if !ok {
				return 0
			}
			if err, isErr := r.(error); isErr {
				var he *gojq.HaltError
				if errors.As(err, &he) {
					if v := he.Value(); v != nil {
						if s, isStr := v.(string); isStr {
							c.out.Flush()
							io.WriteString(c.env.Stderr, s)
						} else {
							b, _ := gojq.Marshal(v)
							c.out.Flush()
							fmt.Fprintf(c.env.Stderr, "jq: error (at <stdin>): %s\n", b)
						}
					}
					return he.ExitCode() + 1000 // marker: halt
				}
				if errors.Is(context.Cause(ctx), errHeapBound) {
					if b := c.env.Budget; b != nil && bound < jqHeapBound {
						// charged past the budget: the script stops there
						b.Charge(b.Limit())
					}
					return c.errf(5, "error: the filter grew the heap past %d MiB (a collection too large for the sandbox?)", bound>>20)
				}
				if c.stopped() {
					return c.errf(5, "interrupted")
				}
				return c.errf(5, "error (at <stdin>:%d): %v", inputs.line(), err)
			}
			outputs++
			last = r
			if err := writeJQ(c, o, r); err != nil {
				return c.errf(5, "error (at <stdin>:%d): %v", inputs.line(), err)
			}
			if c.outLimit != nil && c.outLimit.exceeded {
				return 1
			}
		}
	}
	var st int
	if o.nullInput {
		st = runOne(nil)
	} else {
		for {
			v, err := inputs.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return inputs.fail(err)
			}
			if st = runOne(v); st != 0 {
				break
			}
		}
	}
	if st >= 1000 {
		return st - 1000
	}
	if st != 0 {
		return st
	}
	if o.exitStatus {
		if outputs == 0 {
			return 4
		}
		if last == nil || last == false {
			return 1
		}
	}
	return 0
}

func compileJQ(c *cmd, o *jqOpts, inputs *jqInputs) (*gojq.Code, int) {
	dynamic := strings.Contains(o.filter, "env") || strings.Contains(o.filter, "ENV") ||
		strings.Contains(o.filter, "input") || strings.Contains(o.filter, "debug") || strings.Contains(o.filter, "stderr")
	key := o.filter + "\x00" + strings.Join(o.varNames, "\x00")
	if !dynamic {
		if code := c.env.JQ.get(key); code != nil {
			return code, 0
		}
	}
	filter := o.filter
	// jq builtins gojq lacks, defined in jq itself.
	if strings.Contains(filter, "leaf_paths") {
		filter = "def leaf_paths: paths(scalars); " + filter
	}
	q, err := gojq.Parse(filter)
	if err != nil {
		c.errf(3, "error: %v", err)
		fmt.Fprintln(c.env.Stderr, "jq: 1 compile error")
		return nil, 3
	}
	opts := []gojq.CompilerOption{gojq.WithVariables(o.varNames),
		// gojq keeps no key order (objects print sorted): keys_unsorted is
		// keys.
		gojq.WithFunction("keys_unsorted", 0, 0, func(v any, _ []any) any {
			m, ok := v.(map[string]any)
			if !ok {
				return &jqFuncError{"keys_unsorted", v}
			}
			ks := make([]any, 0, len(m))
			for k := range m {
				ks = append(ks, k)
			}
			slices.SortFunc(ks, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
			return ks
		})}
	if dynamic {
		environ := c.env.Environ
		opts = append(opts,
			gojq.WithEnvironLoader(func() []string {
				if environ == nil {
					return nil
				}
				return environ()
			}),
			gojq.WithInputIter(inputs),
			gojq.WithFunction("debug", 0, 0, func(v any, _ []any) any {
				b, err := gojq.Marshal([]any{"DEBUG:", v})
				if err != nil {
					return err
				}
				c.out.Flush()
				c.env.Stderr.Write(append(b, '\n'))
				return v
			}),
			gojq.WithFunction("stderr", 0, 0, func(v any, _ []any) any {
				b, err := gojq.Marshal(v)
				if err != nil {
					return err
				}
				if s, ok := v.(string); ok {
					b = []byte(s)
				}
				c.out.Flush()
				c.env.Stderr.Write(b)
				return v
			}),
			gojq.WithFunction("input_filename", 0, 0, func(any, []any) any {
				return inputs.filename()
			}))
	}
	code, err := gojq.Compile(q, opts...)
	if err != nil {
		c.errf(3, "error: %v", err)
		fmt.Fprintln(c.env.Stderr, "jq: 1 compile error")
		return nil, 3
	}
	if !dynamic {
		c.env.JQ.put(key, code)
	}
	return code, 0
}

func writeJQ(c *cmd, o *jqOpts, v any) error {
	if s, ok := v.(string); ok && o.raw {
		if o.ascii {
			s = asciiEscape(s, false)
		}
		c.out.WriteString(s)
		if !o.join {
			c.out.WriteByte('\n')
		}
		return nil
	}
	var b []byte
	var err error
	if o.sortKeys || o.order == nil || o.order.empty() {
		b, err = gojq.Marshal(v)
	} else {
		var buf bytes.Buffer
		err = o.order.marshal(&buf, v)
		b = buf.Bytes()
	}
	if err != nil {
		return err
	}
	if !o.compact && len(b) > 0 && (b[0] == '{' || b[0] == '[') && len(b) > 2 {
		var buf bytes.Buffer
		indent := strings.Repeat(" ", o.indent)
		if o.tab {
			indent = "\t"
		}
		if o.indent == 0 && !o.tab {
			buf.Write(b)
		} else if err := json.Indent(&buf, b, "", indent); err != nil {
			return err
		}
		b = buf.Bytes()
	}
	if o.ascii {
		b = []byte(asciiEscape(string(b), true))
	}
	c.out.Write(b)
	if !o.join {
		c.out.WriteByte('\n')
	}
	return nil
}

// asciiEscape replaces every non-ASCII character by \uXXXX (a surrogate
// pair above U+FFFF), as jq -a does; in JSON text only strings hold any.
func asciiEscape(s string, _ bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x80:
			b.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&b, "\\u%04x\\u%04x", 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

// jqInputs yields the JSON values (or raw lines with -R) of stdin; it is
// also gojq's input iterator for input/inputs. Stdin is read whole first
// (within MaxInputBytes), like jq does for most filters.
type jqInputs struct {
	files   []jqFile // nil: stdin
	c       *cmd
	o       *jqOpts
	data    []byte
	loaded  bool
	dec     *jqDecoder
	lines   []string
	slurped bool
	err     error
}

func newJQInputs(c *cmd, o *jqOpts) *jqInputs {
	if o.order == nil {
		o.order = newJQKeyOrder()
	}
	return &jqInputs{c: c, o: o}
}

// load reads stdin once.
func (in *jqInputs) load() error {
	if in.loaded {
		return nil
	}
	in.loaded = true
	data, err := in.c.readAll()
	if err != nil {
		return err
	}
	in.data = data
	if !in.o.rawInput {
		in.dec = newJQDecoder(data, in.o.order)
	}
	return nil
}

// line is the 1-based line of the decoder's position, for messages.
func (in *jqInputs) line() int {
	off := len(in.data)
	if in.dec != nil {
		off = min(int(in.dec.offset()), len(in.data))
	}
	return bytes.Count(in.data[:off], []byte{'\n'}) + 1
}

// next returns the next input value, or io.EOF.
func (in *jqInputs) next() (any, error) {
	if err := in.load(); err != nil {
		return nil, err
	}
	if in.o.slurp {
		if in.slurped {
			return nil, io.EOF
		}
		in.slurped = true
		if in.o.rawInput {
			return string(in.data), nil
		}
		all := []any{}
		for {
			v, err := in.decode()
			if err == io.EOF {
				return all, nil
			}
			if err != nil {
				return nil, err
			}
			all = append(all, v)
		}
	}
	if in.o.rawInput {
		if in.lines == nil {
			b := in.data
			s := strings.TrimSuffix(string(b), "\n")
			if len(b) == 0 {
				in.lines = []string{}
			} else {
				in.lines = strings.Split(s, "\n")
			}
		}
		if len(in.lines) == 0 {
			return nil, io.EOF
		}
		l := in.lines[0]
		in.lines = in.lines[1:]
		return l, nil
	}
	return in.decode()
}

func (in *jqInputs) decode() (any, error) {
	if in.c.stopped() {
		return nil, errStopped
	}
	// At the end of the data, report EOF without asking the decoder.
	if len(bytes.TrimLeft(in.data[min(int(in.dec.dec.InputOffset()), len(in.data)):], " \t\r\n")) == 0 {
		return nil, io.EOF
	}
	return in.dec.next()
}

// filename is the file the last input came from (nil for stdin).
func (in *jqInputs) filename() any {
	if len(in.files) == 0 {
		return nil
	}
	off := len(in.data)
	if in.dec != nil {
		off = int(in.dec.dec.InputOffset())
	}
	for _, f := range in.files {
		if off <= f.end {
			return f.name
		}
	}
	return in.files[len(in.files)-1].name
}

// Next implements gojq.Iter for input and inputs.
func (in *jqInputs) Next() (any, bool) {
	if in.err != nil {
		return nil, false
	}
	v, err := in.next()
	if err == io.EOF {
		return nil, false
	}
	if err != nil {
		in.err = err
		return err, true
	}
	return v, true
}

func (in *jqInputs) fail(err error) int {
	if errors.Is(err, errInputTooLarge) {
		return in.c.readErr(err)
	}
	if in.c.stopped() {
		return in.c.errf(2, "interrupted")
	}
	return in.c.errf(2, "error (at <stdin>:%d): Cannot parse input: %v", in.line(), err)
}

// decodeJSONValue decodes one JSON text into gojq's value types.
func decodeJSONValue(s string) (any, error) {
	dec := newJQDecoder([]byte(s), nil)
	v, err := dec.next()
	if err != nil {
		return nil, err
	}
	if _, err := dec.next(); err != io.EOF {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

// jqDecoder reads a stream of JSON texts into gojq's value types in one
// pass over the tokens, noting the key order of every object it builds
// in order (gojq's maps lose it). Numbers become int when the value is an
// integer that fits, *big.Int for larger integers, float64 otherwise;
// invalid UTF-8 becomes U+FFFD and a duplicate key keeps its first
// position and last value, as in jq.
type jqDecoder struct {
	dec   *jsontext.Decoder
	order *jqKeyOrder // nil: order not kept
	err   error       // the first error, returned from then on
}

func newJQDecoder(data []byte, order *jqKeyOrder) *jqDecoder {
	// jsontext parses a *bytes.Buffer in place, without copying it.
	dec := jsontext.NewDecoder(bytes.NewBuffer(data),
		jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	return &jqDecoder{dec: dec, order: order}
}

// next returns the next JSON text's value, or io.EOF after the last.
func (d *jqDecoder) next() (any, error) {
	if d.err != nil {
		return nil, d.err
	}
	tok, err := d.dec.ReadToken()
	if err != nil {
		d.err = jqSyntaxError(err)
		return nil, d.err
	}
	v, err := d.value(tok)
	if err != nil {
		d.err = jqSyntaxError(err)
		return nil, d.err
	}
	return v, nil
}

// offset is where the decoder is in the data: after the last value read,
// or where the data is malformed.
func (d *jqDecoder) offset() int64 {
	var se *jsontext.SyntacticError
	if errors.As(d.err, &se) {
		return se.ByteOffset
	}
	return d.dec.InputOffset()
}

// value builds the value that starts with tok.
func (d *jqDecoder) value(tok jsontext.Token) (any, error) {
	switch tok.Kind() {
	case 'n':
		return nil, nil
	case 't', 'f':
		return tok.Bool(), nil
	case '"':
		return tok.String(), nil
	case '0':
		return jqNumber(tok.String()), nil
	case '[':
		a := []any{}
		for {
			tok, err := d.dec.ReadToken()
			if err != nil {
				return nil, err
			}
			if tok.Kind() == ']' {
				return a, nil
			}
			v, err := d.value(tok)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
	case '{':
		m := map[string]any{}
		var keys []string
		for {
			tok, err := d.dec.ReadToken()
			if err != nil {
				return nil, err
			}
			if tok.Kind() == '}' {
				d.order.object(keys)
				return m, nil
			}
			key := tok.String()
			if _, dup := m[key]; !dup && d.order != nil {
				keys = append(keys, key)
				d.order.key(key)
			}
			if tok, err = d.dec.ReadToken(); err != nil {
				return nil, err
			}
			v, err := d.value(tok)
			if err != nil {
				return nil, err
			}
			m[key] = v
		}
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok.Kind())
}

// jqSyntaxError drops the package prefix of a jsontext error.
func jqSyntaxError(err error) error {
	if err == io.EOF {
		return err
	}
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		return &jqParseError{se}
	}
	return err
}

// jqParseError is malformed JSON input.
type jqParseError struct{ se *jsontext.SyntacticError }

func (e *jqParseError) Error() string { return strings.TrimPrefix(e.se.Error(), "jsontext: ") }
func (e *jqParseError) Unwrap() error { return e.se }

// jqNumber is the gojq value of a JSON number literal.
func jqNumber(s string) any {
	if !strings.ContainsAny(s, ".eE") {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= math.MinInt && n <= math.MaxInt {
			return int(n)
		}
		if b, ok := new(big.Int).SetString(s, 10); ok {
			return b
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.Inf(1)
	}
	return f
}

// jqFuncError is the error of a function given a value of the wrong type.
type jqFuncError struct {
	name string
	v    any
}

func (e *jqFuncError) Error() string {
	b, _ := gojq.Marshal(e.v)
	return fmt.Sprintf("%s cannot be applied to: %s", e.name, b)
}

// jqKeyOrder keeps the order of object keys in the input, which gojq's
// maps lose and jq keeps: an object printed with the keys of an input
// object (., .[1], an update of a key it has) prints them in that
// object's order; another (del(.k), . + {new: 1}) puts the keys the input
// had in the order they first appeared there, then the others sorted (an
// object the filter built, {b: 1, a: 2}, is printed sorted: jq would keep
// the order of the filter's text). What it holds is bounded.
type jqKeyOrder struct {
	sets map[string][]string // sorted keys joined by NUL -> input order
	rank map[string]int      // key -> when it first appeared
}

const (
	jqMaxKeySets = 4096
	jqMaxKeys    = 1 << 16
)

func newJQKeyOrder() *jqKeyOrder {
	return &jqKeyOrder{sets: map[string][]string{}, rank: map[string]int{}}
}

func (k *jqKeyOrder) empty() bool { return len(k.rank) == 0 }

// key notes that key appeared in the input (the first time ranks it).
func (k *jqKeyOrder) key(key string) {
	if k == nil {
		return
	}
	if _, seen := k.rank[key]; !seen && len(k.rank) < jqMaxKeys {
		k.rank[key] = len(k.rank)
	}
}

// object notes the order of an input object's keys (each once), unless an
// object with the same keys came before.
func (k *jqKeyOrder) object(keys []string) {
	if k == nil || len(k.sets) >= jqMaxKeySets {
		return
	}
	sorted := slices.Clone(keys)
	sort.Strings(sorted)
	sig := strings.Join(sorted, "\x00")
	if _, ok := k.sets[sig]; !ok {
		k.sets[sig] = keys
	}
}

// keys returns the keys of m in the order to print them.
func (k *jqKeyOrder) keys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	if order, ok := k.sets[strings.Join(keys, "\x00")]; ok && len(order) == len(keys) {
		return order
	}
	sort.SliceStable(keys, func(i, j int) bool {
		ri, oki := k.rank[keys[i]]
		rj, okj := k.rank[keys[j]]
		if oki && okj {
			return ri < rj
		}
		return oki && !okj
	})
	return keys
}

// marshal writes v as compact JSON, as gojq.Marshal does, with objects'
// keys in the order keys gives.
func (k *jqKeyOrder) marshal(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case map[string]any:
		b.WriteByte('{')
		for i, key := range k.keys(x) {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, err := gojq.Marshal(key)
			if err != nil {
				return err
			}
			b.Write(kb)
			b.WriteByte(':')
			if err := k.marshal(b, x[key]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := k.marshal(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		vb, err := gojq.Marshal(x)
		if err != nil {
			return err
		}
		b.Write(vb)
	}
	return nil
}
