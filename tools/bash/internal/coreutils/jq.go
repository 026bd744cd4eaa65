package coreutils

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"reflect"
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
	o := jqOpts{indent: 2, order: newJQKeyOrder()}
	var files []string
	positionalMode := "" // "", "args" or "jsonargs": operands after the filter are $ARGS.positional
	var positional []any
	var named map[string]any // $ARGS.named, made on first use
	var namedKeys []string   // its keys in the order given
	operand := func(a string) int {
		switch {
		case !o.haveFilter:
			o.filter, o.haveFilter = a, true
		case positionalMode == "args":
			positional = append(positional, a)
		case positionalMode == "jsonargs":
			v, err := decodeJSONValue(a, o.order)
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
				dec := newJQDecoder(data, o.order)
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
			if _, dup := named[name]; !dup {
				namedKeys = append(namedKeys, name)
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
				if v, err = decodeJSONValue(val, o.order); err != nil {
					return c.errf(2, "invalid JSON text passed to --argjson")
				}
			}
			o.varNames = append(o.varNames, "$"+name)
			o.varValues = append(o.varValues, v)
			if named == nil {
				named = map[string]any{}
			}
			if _, dup := named[name]; !dup {
				namedKeys = append(namedKeys, name)
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
		args := map[string]any{"positional": positional, "named": named}
		o.order.object(args, []string{"positional", "named"})
		o.order.object(named, namedKeys)
		o.varValues = append(o.varValues, args)
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
		iter := code.RunWithContext(ctx, v, append(o.varValues, o.order)...)
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
							b, _ := o.order.json(v)
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
				var ve gojq.ValueError
				if errors.As(err, &ve) {
					switch v := ve.Value(); v.(type) {
					case map[string]any, []any: // as jq words it, the value in order
						if b, jerr := o.order.json(v); jerr == nil {
							return c.errf(5, "error (at <stdin>:%d) (not a string): %s", inputs.line(), b)
						}
					}
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
		// The objects of an input done with are forgotten, unless the
		// filter reads other inputs and may still hold them.
		forget := !strings.Contains(o.filter, "input")
		for {
			if forget {
				o.order.forget()
			}
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
	// gojq's objects are maps: what keeps jq's key order is noted in the
	// run's jqKeyOrder by the rewritten filter and the defs it uses.
	if jqOrderOff {
		q.FuncDefs = append(jqParseDefs("def keys_unsorted: keys;"), q.FuncDefs...)
	} else {
		defs, err := jqOrderFuncDefs(filter, jqOrderRewrite(q))
		if err != nil {
			return nil, c.errf(3, "error: %v", err)
		}
		q.FuncDefs = append(defs, q.FuncDefs...)
	}
	opts := append([]gojq.CompilerOption{gojq.WithVariables(append(slices.Clone(o.varNames), jqOrderVar))}, jqOrderFuncs()...)
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
				b, err := o.order.json([]any{"DEBUG:", v})
				if err != nil {
					return err
				}
				c.out.Flush()
				c.env.Stderr.Write(append(b, '\n'))
				return v
			}),
			gojq.WithFunction("stderr", 0, 0, func(v any, _ []any) any {
				b, err := o.order.json(v)
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

// decodeJSONValue decodes one JSON text into gojq's value types, noting
// its objects' key order in order (nil: not noted).
func decodeJSONValue(s string, order *jqKeyOrder) (any, error) {
	dec := newJQDecoder([]byte(s), order)
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
				d.order.object(m, keys)
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

// jqKeyOrder keeps the order of object keys, which gojq's maps lose and
// jq keeps. An object's order is noted for its set of keys when it is the
// first with those keys, and by the object's identity (the map itself,
// held so that its address is not reused) when its order differs from
// that one's: objects decoded from the input, built by the filter where
// the sandbox sees it ({b, a}, a + b, a * b) and copied by an update (see
// derive). As long as the filter passes a map on unchanged, it prints,
// iterates and lists in that order. An object noted neither way prints
// with the keys the input had in the order they first appeared there,
// then the others sorted. What it holds is bounded; the identities are
// forgotten between inputs when the filter reads no other input.
type jqKeyOrder struct {
	sets  map[string][]string    // sorted keys joined by NUL -> input order
	rank  map[string]int         // key -> when it first appeared
	byMap map[uintptr]jqObjOrder // a noted map's identity -> its order
	held  int                    // keys held by sets and byMap together
	sig   []byte                 // signature's buffer
	// builts are the orders of the objects the filter builds, by where
	// their keys are listed in the filter
	builts map[uintptr]jqBuilt
}

// jqObjOrder is a noted map and the order of its keys.
type jqObjOrder struct {
	m    map[string]any
	keys []string
}

const (
	jqMaxKeySets = 4096
	jqMaxKeys    = 1 << 16
	jqMaxObjects = 1 << 15
	jqMaxHeld    = 1 << 18 // keys held in all (objects a reduce merges grow one by one)
)

func newJQKeyOrder() *jqKeyOrder {
	return &jqKeyOrder{sets: map[string][]string{}, rank: map[string]int{}, byMap: map[uintptr]jqObjOrder{}, builts: map[uintptr]jqBuilt{}}
}

func (k *jqKeyOrder) empty() bool {
	return len(k.rank) == 0 && len(k.byMap) == 0 && len(k.sets) == 0
}

// forget drops the identities noted (the objects of an input done with).
func (k *jqKeyOrder) forget() {
	for _, o := range k.byMap {
		k.held -= len(o.keys)
	}
	clear(k.byMap)
}

// key notes that key appeared in the input (the first time ranks it).
func (k *jqKeyOrder) key(key string) {
	if k == nil {
		return
	}
	if _, seen := k.rank[key]; !seen && len(k.rank) < jqMaxKeys {
		k.rank[key] = len(k.rank)
	}
}

// object notes the order of m's keys (each once) for its set of keys,
// unless an object with the same keys came before; and by m's identity
// when the order differs from the one its set of keys gives (most objects
// with the same keys have them in the same order, and cost nothing).
func (k *jqKeyOrder) object(m map[string]any, keys []string) {
	if k == nil || len(keys) < 2 || k.held+len(keys) > jqMaxHeld {
		return
	}
	sorted := slices.Clone(keys)
	sort.Strings(sorted)
	sig := k.signature(sorted)
	if first, ok := k.sets[string(sig)]; ok && slices.Equal(first, keys) {
		return
	} else if !ok && len(k.sets) < jqMaxKeySets {
		k.sets[string(sig)] = keys
		k.held += len(keys)
		return
	}
	if len(k.byMap) < jqMaxObjects {
		if old, ok := k.byMap[jqMapID(m)]; ok {
			k.held -= len(old.keys)
		}
		k.byMap[jqMapID(m)] = jqObjOrder{m, keys}
		k.held += len(keys)
	}
}

// signature is the sorted keys joined by NUL, the key of sets; in a
// buffer reused (a map lookup with string(sig) does not copy it).
func (k *jqKeyOrder) signature(sorted []string) []byte {
	k.sig = k.sig[:0]
	for i, key := range sorted {
		if i > 0 {
			k.sig = append(k.sig, 0)
		}
		k.sig = append(k.sig, key...)
	}
	return k.sig
}

// jqMapID is the identity of a map: where its header is.
func jqMapID(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }

// keys returns the keys of m in the order to print them.
func (k *jqKeyOrder) keys(m map[string]any) []string {
	if len(m) > 1 {
		if o, ok := k.byMap[jqMapID(m)]; ok && len(o.keys) == len(m) {
			return o.keys
		}
	}
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	if order, ok := k.sets[string(k.signature(keys))]; ok && len(order) == len(keys) {
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

// json is v as compact JSON with objects' keys in order (gojq.Marshal's
// when k is nil).
func (k *jqKeyOrder) json(v any) ([]byte, error) {
	if k == nil {
		return gojq.Marshal(v)
	}
	var b bytes.Buffer
	err := k.marshal(&b, v)
	return b.Bytes(), err
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
			if err := jqMarshalString(b, key); err != nil {
				return err
			}
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
	case string:
		return jqMarshalString(b, x)
	case int:
		b.WriteString(strconv.Itoa(x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case nil:
		b.WriteString("null")
	default:
		vb, err := gojq.Marshal(x)
		if err != nil {
			return err
		}
		b.Write(vb)
	}
	return nil
}

// jqMarshalString writes s as a JSON string as gojq does: printable ASCII
// but " and \ as it is, the rest by gojq.
func jqMarshalString(b *bytes.Buffer, s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			sb, err := gojq.Marshal(s)
			if err != nil {
				return err
			}
			b.Write(sb)
			return nil
		}
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
	return nil
}

// jqOrderOff, set by benchmarks only, compiles filters as gojq alone
// would, to measure what keeping the order costs.
var jqOrderOff bool

// jqOrderVar is the hidden variable through which the functions that keep
// key order reach the run's jqKeyOrder (compiled filters are shared
// between runs, so the functions cannot hold it).
const jqOrderVar = "$__jq_key_order"

// jqOrderDefs replace, for the filter, jq builtins whose gojq versions
// lose key order: they list, iterate and merge objects in the order the
// run noted. Each is added only when the filter names it (or a builtin
// defined with it); _jq_each is what the filter's .[] became.
var jqOrderDefs = []struct{ name, def string }{
	{"_jq_each", `def _jq_each: if type == "object" then _jq_keys(` + jqOrderVar + `)[] as $k | .[$k] else .[] end;`},
	{"keys_unsorted", `def keys_unsorted: _jq_keys(` + jqOrderVar + `);`},
	{"to_entries", `def to_entries: _jq_to_entries(` + jqOrderVar + `);`},
	{"from_entries", `def from_entries: map({ (.key // .Key // .name // .Name): (if has("value") then .value else .Value end) }) | _jq_add_all(` + jqOrderVar + `) // {};`},
	{"with_entries", `def with_entries(f): to_entries | map(f) | from_entries;`},
	{"add", `def add: _jq_add_all(` + jqOrderVar + `);`},
	{"map", `def map(f): [_jq_each | f];`},
	{"recurse", `def recurse: def r: ., (_jq_each? | r); r;`},
	{"paths", `def paths: path(..) | select(. != []); def paths(f): path(.. | select(f)) | select(. != []);`},
	{"tostream", `def tostream: path(def r: (_jq_each? | r), .; r) as $p | getpath($p) | reduce path(_jq_each?) as $q ([$p, .]; [$p + $q]);`},
	{"fromjson", `def fromjson: _jq_fromjson(` + jqOrderVar + `);`},
	{"tojson", `def tojson: _jq_tojson(` + jqOrderVar + `);`},
	{"tostring", `def tostring: if type == "string" then . else _jq_tojson(` + jqOrderVar + `) end;`},
	{"match", `def match($re; $flags): _match($re; $flags; false)[] | _jq_match(` + jqOrderVar + `); def match($re): if $re | type == "array" then match($re[0]; $re[1]) else match($re; null) end;`},
	{"capture", `def capture($re; $flags): match($re; $flags) | [.captures[] | select(.name != null) | {(.name): .string}] | _jq_add_all(` + jqOrderVar + `) // {}; def capture($re): if $re | type == "array" then capture($re[0]; $re[1]) else capture($re; null) end;`},
	// gojq's INDEX, its update and .[] rewritten below as the filter's are
	{"INDEX", `def INDEX(stream; idx_expr): reduce stream as $row ({}; .[$row | idx_expr | tostring] = $row); def INDEX(idx_expr): INDEX(.[]; idx_expr);`},
}

// jqOrderFuncDefs are the parsed jqOrderDefs the filter needs, in order
// (a def sees the ones before it).
func jqOrderFuncDefs(filter string, each bool) ([]*gojq.FuncDef, error) {
	need := map[string]bool{"_jq_each": each}
	for _, d := range jqOrderDefs {
		if strings.Contains(filter, d.name) {
			need[d.name] = true
		}
	}
	if strings.Contains(filter, `\(`) || strings.Contains(filter, "@text") { // "\(x)" is x | tostring
		need["tostring"] = true
	}
	if strings.Contains(filter, "@json") {
		need["tojson"] = true
	}
	if strings.Contains(filter, "..") || need["paths"] {
		need["recurse"] = true
	}
	if need["capture"] {
		need["match"] = true
	}
	if need["with_entries"] {
		need["to_entries"], need["from_entries"], need["map"] = true, true, true
	}
	if need["map"] || need["recurse"] || need["tostream"] || need["INDEX"] {
		need["_jq_each"] = true
	}
	var defs []*gojq.FuncDef
	for _, d := range jqOrderDefs {
		if !need[d.name] {
			continue
		}
		q, err := gojq.Parse(d.def + " .")
		if err != nil {
			return nil, fmt.Errorf("jq order def %s: %w", d.name, err)
		}
		if d.name == "INDEX" {
			jqOrderRewrite(q) // its .[] needs _jq_each, added below
		}
		defs = append(defs, q.FuncDefs...)
	}
	return defs, nil
}

// jqOrderRewrite changes the parsed filter so that what it builds and
// iterates keeps jq's key order: an object construction {k: v, ...} pipes
// its object to _jq_obj with the keys in the filter's order, a + b and a *
// b become _jq_add and _jq_mul, and .[] becomes _jq_each. It reports
// whether a .[] was rewritten.
func jqOrderRewrite(q *gojq.Query) (each bool) {
	w := jqRewriter{}
	w.query(q)
	return w.each
}

type jqRewriter struct{ each bool }

func jqOrderArg() *gojq.Query {
	return &gojq.Query{Term: &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: jqOrderVar}}}
}

func (w *jqRewriter) query(q *gojq.Query) {
	if q == nil {
		return
	}
	for _, fd := range q.FuncDefs {
		w.query(fd.Body)
	}
	w.term(q.Term)
	w.query(q.Left)
	w.query(q.Right)
	w.patterns(q.Patterns)
	if name := map[gojq.Operator]string{gojq.OpAdd: "_jq_add", gojq.OpMul: "_jq_mul"}[q.Op]; name != "" && !jqNoObject(q.Left) && !jqNoObject(q.Right) {
		q.Term = &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: name, Args: []*gojq.Query{jqOrderArg(), q.Left, q.Right}}}
		q.Left, q.Op, q.Right = nil, 0, nil
	}
	switch q.Op {
	case gojq.OpAssign, gojq.OpModify, gojq.OpUpdateAdd, gojq.OpUpdateSub, gojq.OpUpdateMul,
		gojq.OpUpdateDiv, gojq.OpUpdateMod, gojq.OpUpdateAlt:
		update := *q
		*q = *jqDeriving(&update)
	}
}

// jqNoObject reports whether q is written as a number, a string or an
// array: then a + or * with it merges no objects, and stays gojq's.
func jqNoObject(q *gojq.Query) bool {
	if q == nil || q.Term == nil || q.Op != 0 || len(q.Term.SuffixList) > 0 {
		return false
	}
	switch q.Term.Type {
	case gojq.TermTypeNumber, gojq.TermTypeString, gojq.TermTypeArray:
		return true
	}
	return false
}

// jqDerivers are the builtins that copy the objects they change.
var jqDerivers = map[string]bool{"del": true, "delpaths": true, "setpath": true, "map_values": true, "walk": true}

// jqDeriving is the update q followed by _jq_derive, which gives the
// objects it copied the order of those they were copied from.
func jqDeriving(q *gojq.Query) *gojq.Query {
	w, err := gojq.Parse(". as $__jq_in | _jq_update | _jq_derive(" + jqOrderVar + "; $__jq_in)")
	if err != nil {
		panic(err) // a constant source
	}
	w.Right.Left = q
	return w
}

func (w *jqRewriter) patterns(ps []*gojq.Pattern) {
	for _, p := range ps {
		w.patterns(p.Array)
		for _, o := range p.Object {
			w.str(o.KeyString)
			w.query(o.KeyQuery)
			w.patterns([]*gojq.Pattern{o.Val})
		}
	}
}

func (w *jqRewriter) str(s *gojq.String) {
	if s != nil {
		for _, q := range s.Queries {
			w.query(q)
		}
	}
}

func (w *jqRewriter) index(x *gojq.Index) {
	if x != nil {
		w.str(x.Str)
		w.query(x.Start)
		w.query(x.End)
	}
}

func (w *jqRewriter) term(t *gojq.Term) {
	if t == nil {
		return
	}
	w.index(t.Index)
	if t.Func != nil {
		for _, a := range t.Func.Args {
			w.query(a)
		}
	}
	if t.Array != nil {
		w.query(t.Array.Query)
	}
	if t.Unary != nil {
		w.term(t.Unary.Term)
	}
	w.str(t.Str)
	if x := t.If; x != nil {
		w.query(x.Cond)
		w.query(x.Then)
		for _, e := range x.Elif {
			w.query(e.Cond)
			w.query(e.Then)
		}
		w.query(x.Else)
	}
	if x := t.Try; x != nil {
		w.query(x.Body)
		w.query(x.Catch)
	}
	if x := t.Reduce; x != nil {
		w.query(x.Query)
		w.patterns(x.Patterns)
		w.query(x.Start)
		w.query(x.Update)
	}
	if x := t.Foreach; x != nil {
		w.query(x.Query)
		w.patterns(x.Patterns)
		w.query(x.Start)
		w.query(x.Update)
		w.query(x.Extract)
	}
	if t.Label != nil {
		w.query(t.Label.Body)
	}
	w.query(t.Query)
	for _, s := range t.SuffixList {
		w.index(s.Index)
	}
	if t.Object != nil {
		keys := make([]*gojq.Query, len(t.Object.KeyVals))
		for i, kv := range t.Object.KeyVals {
			w.str(kv.KeyString)
			w.query(kv.KeyQuery)
			w.query(kv.Val)
			key := &gojq.Term{Type: gojq.TermTypeNull}
			switch {
			case kv.Key != "" && kv.Key[0] == '$':
				key = &gojq.Term{Type: gojq.TermTypeString, Str: &gojq.String{Str: kv.Key[1:]}}
			case kv.Key != "":
				key = &gojq.Term{Type: gojq.TermTypeString, Str: &gojq.String{Str: kv.Key}}
			case kv.KeyString != nil && kv.KeyString.Queries == nil:
				key = &gojq.Term{Type: gojq.TermTypeString, Str: &gojq.String{Str: kv.KeyString.Str}}
			}
			keys[i] = &gojq.Query{Term: key}
		}
		if len(keys) > 1 {
			list := keys[0]
			for _, k := range keys[1:] {
				list = &gojq.Query{Left: list, Op: gojq.OpComma, Right: k}
			}
			obj := &gojq.Term{Type: gojq.TermTypeObject, Object: t.Object}
			call := &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: "_jq_obj",
				Args: []*gojq.Query{jqOrderArg(), {Term: &gojq.Term{Type: gojq.TermTypeArray, Array: &gojq.Array{Query: list}}}}}}
			t.Type, t.Object = gojq.TermTypeQuery, nil
			t.Query = &gojq.Query{Left: &gojq.Query{Term: obj}, Op: gojq.OpPipe, Right: &gojq.Query{Term: call}}
		}
	}
	if t.Type == gojq.TermTypeFunc && jqDerivers[t.Func.Name] {
		f := *t
		f.SuffixList = nil
		*t = gojq.Term{Type: gojq.TermTypeQuery, Query: jqDeriving(&gojq.Query{Term: &f}), SuffixList: t.SuffixList}
	}
	// T S1 .. [] Sk..: (T S1 .. | _jq_each) Sk.., until no [] is left
	for i := 0; i < len(t.SuffixList); {
		if !t.SuffixList[i].Iter {
			i++
			continue
		}
		w.each = true
		inner := *t
		inner.SuffixList = t.SuffixList[:i]
		rest := t.SuffixList[i+1:]
		each := &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: "_jq_each"}}
		if len(rest) > 0 && rest[0].Optional { // T[]? tries the [] alone, as gojq does
			each.SuffixList, rest = rest[:1], rest[1:]
		}
		*t = gojq.Term{Type: gojq.TermTypeQuery, Query: &gojq.Query{Left: &gojq.Query{Term: &inner}, Op: gojq.OpPipe,
			Right: &gojq.Query{Term: each}}}
		t.SuffixList, i = rest, 0
	}
}

// jqOrderOf is the run's key order passed to a function (a new one if
// none was: the order is then the input's sorted one).
func jqOrderOf(v any) *jqKeyOrder {
	if k, ok := v.(*jqKeyOrder); ok && k != nil {
		return k
	}
	return newJQKeyOrder()
}

// jqGojqFilters are gojq's own versions of what the order-keeping
// functions replace, run for the values where order plays no part, so that
// results and errors are gojq's.
var jqGojqFilters = sync.OnceValue(func() map[string]*gojq.Code {
	codes := map[string]*gojq.Code{}
	for name, src := range map[string]string{"add": "add", "keys": "keys", "to_entries": "to_entries",
		"tojson": "tojson", "fromjson": "fromjson", "+": ".[0] + .[1]", "*": ".[0] * .[1]"} {
		q, err := gojq.Parse(src)
		if err != nil {
			panic(err) // constant sources
		}
		if codes[name], err = gojq.Compile(q); err != nil {
			panic(err)
		}
	}
	return codes
})

// jqGojq runs gojq's own filter name on v, for its first result.
func jqGojq(name string, v any) any {
	r, ok := jqGojqFilters()[name].Run(v).Next()
	if !ok {
		return nil
	}
	return r
}

// jqOrderFuncs are the Go functions the order-keeping defs and the
// rewritten filter call; each takes the run's key order first.
func jqOrderFuncs() []gojq.CompilerOption {
	return []gojq.CompilerOption{
		gojq.WithFunction("_jq_keys", 1, 1, func(v any, args []any) any {
			m, ok := v.(map[string]any)
			if !ok {
				return jqGojq("keys", v)
			}
			keys := jqOrderOf(args[0]).keys(m)
			ks := make([]any, len(keys))
			for i, key := range keys {
				ks[i] = key
			}
			return ks
		}),
		gojq.WithFunction("_jq_to_entries", 1, 1, func(v any, args []any) any {
			m, ok := v.(map[string]any)
			if !ok {
				return jqGojq("to_entries", v)
			}
			k := jqOrderOf(args[0])
			keys := k.keys(m)
			es := make([]any, len(keys))
			for i, key := range keys {
				e := map[string]any{"key": key, "value": m[key]}
				if i == 0 || !slices.Equal(k.sets["key\x00value"], jqEntryKeys) {
					k.object(e, jqEntryKeys) // (once, unless objects with key and value came in another order)
				}
				es[i] = e
			}
			return es
		}),
		gojq.WithFunction("_jq_tojson", 1, 1, func(v any, args []any) any {
			var b bytes.Buffer
			if err := jqOrderOf(args[0]).marshal(&b, v); err != nil {
				return jqGojq("tojson", v) // gojq's error
			}
			return b.String()
		}),
		gojq.WithFunction("_jq_obj", 2, 2, func(v any, args []any) any {
			if m, ok := v.(map[string]any); ok {
				if slots, ok := args[1].([]any); ok {
					jqOrderOf(args[0]).built(m, slots)
				}
			}
			return v
		}),
		gojq.WithFunction("_jq_fromjson", 1, 1, func(v any, args []any) any {
			if s, ok := v.(string); ok {
				if x, err := decodeJSONValue(s, jqOrderOf(args[0])); err == nil {
					return x
				}
			}
			return jqGojq("fromjson", v) // gojq's value or error
		}),
		gojq.WithFunction("_jq_match", 1, 1, func(v any, args []any) any {
			if m, ok := v.(map[string]any); ok {
				k := jqOrderOf(args[0])
				k.object(m, jqMatchKeys)
				if cs, ok := m["captures"].([]any); ok {
					for _, c := range cs {
						if c, ok := c.(map[string]any); ok {
							k.object(c, jqCaptureKeys)
						}
					}
				}
			}
			return v
		}),
		gojq.WithFunction("_jq_derive", 2, 2, func(v any, args []any) any {
			jqOrderOf(args[0]).derive(v, args[1], 0)
			return v
		}),
		gojq.WithFunction("_jq_add", 3, 3, func(_ any, args []any) any {
			return jqOrderOf(args[0]).add(args[1], args[2])
		}),
		gojq.WithFunction("_jq_mul", 3, 3, func(_ any, args []any) any {
			l, lok := args[1].(map[string]any)
			r, rok := args[2].(map[string]any)
			if !lok || !rok {
				if v, ok := jqMulNumbers(args[1], args[2]); ok {
					return v
				}
				return jqGojq("*", []any{args[1], args[2]})
			}
			return jqOrderOf(args[0]).merge(l, r, true)
		}),
		gojq.WithFunction("_jq_add_all", 1, 1, func(v any, args []any) any {
			k := jqOrderOf(args[0])
			a, ok := v.([]any)
			if m, isMap := v.(map[string]any); isMap { // its values, in order
				for _, key := range k.keys(m) {
					a = append(a, m[key])
				}
				ok = true
			}
			if !ok {
				return jqGojq("add", v)
			}
			var acc any
			if !slices.ContainsFunc(a, func(x any) bool { _, isMap := x.(map[string]any); return isMap }) {
				return jqGojq("add", a) // no object: gojq's add, in one pass
			}
			for _, x := range a {
				acc = k.add(acc, x)
				if err, isErr := acc.(error); isErr {
					return err
				}
			}
			return acc
		}),
	}
}

// jqMatchKeys and jqCaptureKeys are the keys of match's objects and of
// their captures, in jq's order.
var (
	jqMatchKeys   = []string{"offset", "length", "string", "captures"}
	jqCaptureKeys = []string{"offset", "length", "string", "name"}
)

// jqEntryKeys are the keys of to_entries' objects, in jq's order.
var jqEntryKeys = []string{"key", "value"}

// built notes the order of an object the filter built: its keys in the
// filter's order (slots: the keys written in the filter, nil where a key
// is computed; the computed keys fill those, sorted).
func (k *jqKeyOrder) built(m map[string]any, slots []any) {
	if len(m) < 2 {
		return
	}
	// Keys all written in the filter, each once: the same order every
	// time, worked out once per object in the filter (slots is a
	// constant of the compiled filter, which outlives the run).
	static := len(slots) == len(m) && !slices.Contains(slots, nil)
	var id uintptr
	if static {
		id = reflect.ValueOf(slots).Pointer()
		if b, ok := k.builts[id]; ok {
			if !b.noted && len(k.byMap) < jqMaxObjects && k.held+len(b.keys) <= jqMaxHeld {
				k.byMap[jqMapID(m)] = jqObjOrder{m, b.keys}
				k.held += len(b.keys)
			}
			return
		}
	}
	var computed []string
	for key := range m {
		if !slices.Contains(slots, any(key)) {
			computed = append(computed, key)
		}
	}
	sort.Strings(computed)
	keys := make([]string, 0, len(m))
	for _, s := range slots {
		if key, ok := s.(string); ok {
			if _, in := m[key]; in && !slices.Contains(keys, key) {
				keys = append(keys, key)
			}
		} else if len(computed) > 0 {
			keys = append(keys, computed[0])
			computed = computed[1:]
		}
	}
	keys = append(keys, computed...)
	k.object(m, keys)
	if static && len(k.builts) < jqMaxKeySets {
		sorted := slices.Clone(keys)
		sort.Strings(sorted)
		first := k.sets[string(k.signature(sorted))]
		k.builts[id] = jqBuilt{keys, slices.Equal(first, keys)}
	}
}

// jqBuilt is the order of the objects built at one place of the filter,
// and whether their set of keys gives it (else each is noted by itself).
type jqBuilt struct {
	keys  []string
	noted bool
}

// add is l + r, as gojq computes it, with an object's keys in jq's order:
// l's, then r's new ones in r's order.
func (k *jqKeyOrder) add(l, r any) any {
	switch l := l.(type) {
	case nil:
		return r
	case map[string]any:
		if r, ok := r.(map[string]any); ok {
			return k.merge(l, r, false)
		}
	case int:
		switch r := r.(type) {
		case int:
			if v := l + r; (v >= l) == (r >= 0) {
				return v
			}
		case float64:
			return float64(l) + r
		}
	case float64:
		switch r := r.(type) {
		case float64:
			return l + r
		case int:
			return l + float64(r)
		}
	case string:
		if r, ok := r.(string); ok {
			return l + r
		}
	}
	if r == nil {
		return l
	}
	return jqGojq("+", []any{l, r})
}

// merge is l + r (deep: l * r) for objects, noting the keys' order.
func (k *jqKeyOrder) merge(l, r map[string]any, deep bool) map[string]any {
	if len(r) == 0 && !deep {
		return l
	}
	if len(l) == 0 && !deep {
		return r
	}
	if k.held+len(l)+len(r) > jqMaxHeld && !deep { // past what is noted: gojq's merge
		m := make(map[string]any, len(l)+len(r))
		maps.Copy(m, l)
		maps.Copy(m, r)
		return m
	}
	m := make(map[string]any, len(l)+len(r))
	keys := slices.Clone(k.keys(l))
	for _, key := range keys {
		m[key] = l[key]
	}
	for _, key := range k.keys(r) {
		v := r[key]
		if old, had := m[key]; !had {
			keys = append(keys, key)
		} else if deep {
			if om, ok := old.(map[string]any); ok {
				if rm, ok := v.(map[string]any); ok {
					v = k.merge(om, rm, true)
				}
			}
		}
		m[key] = v
	}
	if len(keys) > 32 && len(k.byMap) < jqMaxObjects && k.held+len(keys) <= jqMaxHeld {
		// a large object, most likely grown key by key (reduce): by
		// itself, without sorting its keys for its set
		k.byMap[jqMapID(m)] = jqObjOrder{m, keys}
		k.held += len(keys)
	} else {
		k.object(m, keys)
	}
	return m
}

// jqMulNumbers is l * r for the numbers whose product is plain: floats,
// and ints small enough not to overflow (gojq's own * does the rest).
func jqMulNumbers(l, r any) (any, bool) {
	switch l := l.(type) {
	case int:
		switch r := r.(type) {
		case int:
			if l > -1<<31 && l < 1<<31 && r > -1<<31 && r < 1<<31 {
				return l * r, true
			}
		case float64:
			return float64(l) * r, true
		}
	case float64:
		switch r := r.(type) {
		case float64:
			return l * r, true
		case int:
			return l * float64(r), true
		}
	}
	return nil, false
}

// jqParseDefs parses constant jq definitions.
func jqParseDefs(src string) []*gojq.FuncDef {
	q, err := gojq.Parse(src + " .")
	if err != nil {
		panic(err) // constant sources
	}
	return q.FuncDefs
}

// derive gives the objects of v that an update copied from orig (the
// objects at the same place, another map) the order of orig's: its keys
// that are left, then the new ones sorted. An object whose order is known
// (noted by itself or by its set of keys) is left as it is.
func (k *jqKeyOrder) derive(v, orig any, depth int) {
	if depth > 512 || k.held >= jqMaxHeld {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		o, ok := orig.(map[string]any)
		if !ok || len(v) == 0 || len(o) == 0 || jqMapID(v) == jqMapID(o) {
			return
		}
		if _, known := k.byMap[jqMapID(v)]; !known && len(v) > 1 {
			k.copied(v, o)
		}
		for _, key := range k.keys(v) {
			if x, ok := o[key]; ok {
				k.derive(v[key], x, depth+1)
			}
		}
	case []any:
		o, ok := orig.([]any)
		if !ok || len(v) == 0 || len(o) == 0 || &v[0] == &o[0] {
			return
		}
		for i := range min(len(v), len(o)) {
			k.derive(v[i], o[i], depth+1)
		}
	}
}

// copied notes, by v itself, the order of v copied from o, unless v's
// set of keys has an order noted and v is not seen to be a copy (more
// than one of its values is not o's: then v may as well be another
// object put in o's place, in the order of its set).
func (k *jqKeyOrder) copied(v, o map[string]any) {
	if len(k.byMap) >= jqMaxObjects {
		return
	}
	_, oNoted := k.byMap[jqMapID(o)]
	if len(v) <= 32 || !oNoted { // (a large object noted, most likely grown key by key, is not sorted)
		sorted := make([]string, 0, len(v))
		for key := range v {
			sorted = append(sorted, key)
		}
		sort.Strings(sorted)
		if _, ok := k.sets[string(k.signature(sorted))]; ok && jqSharedValues(v, o) < len(v)-1 {
			return
		}
	}
	keys := make([]string, 0, len(v))
	for _, key := range k.keys(o) {
		if _, in := v[key]; in {
			keys = append(keys, key)
		}
	}
	var added []string
	for key := range v {
		if _, in := o[key]; !in {
			added = append(added, key)
		}
	}
	sort.Strings(added)
	keys = append(keys, added...)
	k.byMap[jqMapID(v)] = jqObjOrder{v, keys}
	k.held += len(keys)
}

// jqSharedValues counts the keys under which v and o hold the same
// value: a scalar equal, an object or array the very same.
func jqSharedValues(v, o map[string]any) int {
	n := 0
	for key, x := range v {
		y, ok := o[key]
		if !ok {
			continue
		}
		switch x := x.(type) {
		case nil, bool, int, float64, string:
			if x == y {
				n++
			}
		case map[string]any:
			if y, ok := y.(map[string]any); ok && jqMapID(x) == jqMapID(y) {
				n++
			}
		case []any:
			if y, ok := y.([]any); ok && len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0]) {
				n++
			}
		}
	}
	return n
}
