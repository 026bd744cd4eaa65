package coreutils

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
)

// splitCmd cuts a file into pieces: split [-l LINES | -b SIZE | -n CHUNKS]
// [-d | -x] [-a LEN] [--additional-suffix=S] [FILE [PREFIX]]; the pieces
// are PREFIXaa, PREFIXab... (x by default).
func splitCmd(c *cmd, args []string) int {
	if !c.needFS() {
		return 1
	}
	lines, bytesPer, chunks := int64(1000), int64(0), int64(0)
	numeric, hexSuffix := false, false
	suffixLen, extra := 2, ""
	suffixSet := false
	start := 0
	verbose, elide := false, false
	var fixed []string
	for _, a := range args {
		// -NUM is -l NUM.
		if len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			fixed = append(fixed, "-l", a[1:])
			continue
		}
		fixed = append(fixed, a)
	}
	fixed = joinLongValues(fixed, "--lines", "--bytes", "--number", "--suffix-length", "--additional-suffix")
	ops, st, ok := c.flags(fixed, "lbnaC", 1, func(f, v string) error {
		switch f {
		case "-l", "--lines":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				return fmt.Errorf("invalid number of lines: %s", quote(v))
			}
			lines, bytesPer, chunks = n, 0, 0
		case "-b", "--bytes", "-C", "--line-bytes":
			n, err := parseSize(v)
			if err != nil || n < 1 {
				return fmt.Errorf("invalid number of bytes: %s", quote(v))
			}
			bytesPer, chunks = n, 0
		case "-n", "--number":
			if strings.Contains(v, "/") || strings.HasPrefix(v, "l/") || strings.HasPrefix(v, "r/") {
				return fmt.Errorf("-n %s: only -n CHUNKS is supported", v)
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 || n > 1<<20 {
				return fmt.Errorf("invalid number of chunks: %s", quote(v))
			}
			chunks, bytesPer = n, 0
		case "-d", "--numeric-suffixes":
			numeric = true
			if v != "" {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return fmt.Errorf("invalid start value for numerical suffix: %s", quote(v))
				}
				start = n
			}
		case "-x", "--hex-suffixes":
			hexSuffix = true
		case "-a", "--suffix-length":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 64 {
				return fmt.Errorf("invalid suffix length: %s", quote(v))
			}
			suffixLen, suffixSet = n, true
		case "--additional-suffix":
			if strings.Contains(v, "/") {
				return fmt.Errorf("invalid suffix %s, contains directory separator", quote(v))
			}
			extra = v
		case "--verbose":
			verbose = true
		case "-e", "--elide-empty-files":
			elide = true
		case "-u", "--unbuffered":
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(ops) > 2 {
		return c.errf(1, "extra operand %s\nTry 'split --help' for more information.", quote(ops[2]))
	}
	in, prefix := "-", "x"
	if len(ops) > 0 {
		in = ops[0]
	}
	if len(ops) > 1 {
		prefix = ops[1]
	}
	data, err := c.readFile(in)
	if err != nil {
		if isStdin(in) {
			return c.readErr(err)
		}
		return c.errf(1, "cannot open %s for reading: %s", quote(in), why(err))
	}
	var pieces [][]byte
	switch {
	case chunks > 0:
		n := int64(len(data))
		for i := int64(0); i < chunks; i++ {
			lo, hi := i*n/chunks, (i+1)*n/chunks
			if i == chunks-1 {
				hi = n
			}
			pieces = append(pieces, data[lo:hi])
		}
		if !suffixSet {
			for need := int64(26); need < chunks && suffixLen < 64; need *= 26 {
				suffixLen++
			}
		}
	case bytesPer > 0:
		for off := int64(0); off < int64(len(data)); off += bytesPer {
			pieces = append(pieces, data[off:min(off+bytesPer, int64(len(data)))])
		}
	default:
		rest := data
		for len(rest) > 0 {
			end, n := 0, int64(0)
			for n < lines {
				i := bytes.IndexByte(rest[end:], '\n')
				if i < 0 {
					end = len(rest)
					break
				}
				end += i + 1
				n++
			}
			pieces = append(pieces, rest[:end])
			rest = rest[end:]
		}
	}
	alphabet := "abcdefghijklmnopqrstuvwxyz"
	if numeric {
		alphabet = "0123456789"
	} else if hexSuffix {
		alphabet = "0123456789abcdef"
	}
	base := len(alphabet)
	limit := 1
	for range suffixLen {
		if limit > 1<<40 {
			break
		}
		limit *= base
	}
	k := start
	for _, p := range pieces {
		if c.stopped() {
			return c.errf(1, "interrupted")
		}
		if elide && len(p) == 0 {
			continue
		}
		if k >= limit {
			return c.errf(1, "output file suffixes exhausted")
		}
		suffix := make([]byte, suffixLen)
		v := k
		for i := suffixLen - 1; i >= 0; i-- {
			suffix[i] = alphabet[v%base]
			v /= base
		}
		name := prefix + string(suffix) + extra
		if verbose {
			fmt.Fprintf(c.out, "creating file %s\n", quote(name))
		}
		if !c.writeFile(name, p) {
			return c.done(1)
		}
		k++
	}
	return c.done(0)
}

// shufCmd prints its input lines in random order: shuf [-n COUNT] [-r]
// [-o FILE] [-z] [--random-source=FILE] [FILE] | -e ARG... | -i LO-HI. The
// randomness is the sandbox's (Env.Random), so a run is repeatable;
// --random-source draws from a file's bytes instead.
func shufCmd(c *cmd, args []string) int {
	count := int64(-1)
	repeat, echo, zero := false, false, false
	rangeArg, output, source := "", "", ""
	args = joinLongValues(args, "--head-count", "--input-range", "--output", "--random-source")
	ops, st, ok := c.flags(args, "nio", 1, func(f, v string) error {
		switch f {
		case "-n", "--head-count":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("invalid line count: %s", quote(v))
			}
			count = n
		case "-r", "--repeat":
			repeat = true
		case "-e", "--echo":
			echo = true
		case "-i", "--input-range":
			rangeArg = v
		case "-o", "--output":
			output = v
		case "-z", "--zero-terminated":
			zero = true
		case "--random-source":
			source = v
		default:
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	eol := "\n"
	if zero {
		eol = "\x00"
	}
	var items []string
	switch {
	case rangeArg != "":
		if echo || len(ops) > 0 {
			return c.errf(1, "extra operand %s", quote(strings.Join(ops, " ")))
		}
		lo, hi, found := strings.Cut(rangeArg, "-")
		a, err1 := strconv.ParseInt(lo, 10, 64)
		b, err2 := strconv.ParseInt(hi, 10, 64)
		if !found || err1 != nil || err2 != nil || a < 0 || b < a-1 {
			return c.errf(1, "invalid input range: %s", quote(rangeArg))
		}
		if b-a >= 1<<24 && !repeat && (count < 0 || count > 1<<24) {
			return c.errf(1, "input range %s exceeds %d numbers", quote(rangeArg), 1<<24)
		}
		if repeat {
			items = nil
			return c.shufRepeat(count, eol, output, source, func(r *rand.Rand) string {
				return strconv.FormatInt(a+int64(r.Uint64N(uint64(b-a+1))), 10)
			}, b >= a)
		}
		for v := a; v <= b; v++ {
			items = append(items, strconv.FormatInt(v, 10))
		}
	case echo:
		items = ops
	default:
		if len(ops) > 1 {
			return c.errf(1, "extra operand %s", quote(ops[1]))
		}
		in := "-"
		if len(ops) == 1 {
			in = ops[0]
		}
		data, err := c.readFile(in)
		if err != nil {
			if isStdin(in) {
				return c.readErr(err)
			}
			return c.fileErr(1, in, err)
		}
		s := string(data)
		if s != "" {
			items = strings.Split(strings.TrimSuffix(s, eol), eol)
		}
	}
	if repeat {
		return c.shufRepeat(count, eol, output, source, func(r *rand.Rand) string {
			return items[r.IntN(len(items))]
		}, len(items) > 0)
	}
	r, st, ok := c.shufRand(source)
	if !ok {
		return st
	}
	r.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	if count >= 0 && count < int64(len(items)) {
		items = items[:count]
	}
	var b strings.Builder
	for _, it := range items {
		b.WriteString(it + eol)
	}
	return c.shufWrite(output, b.String())
}

// shufRepeat prints count random picks (forever, within the output
// bound, without -n).
func (c *cmd) shufRepeat(count int64, eol, output, source string, pick func(*rand.Rand) string, any bool) int {
	if !any {
		if count == 0 {
			return c.done(0)
		}
		return c.errf(1, "no lines to repeat")
	}
	r, st, ok := c.shufRand(source)
	if !ok {
		return st
	}
	if output != "" {
		if count < 0 {
			return c.errf(1, "--repeat without --head-count cannot write a file")
		}
		var b strings.Builder
		for i := int64(0); i < count; i++ {
			b.WriteString(pick(r) + eol)
			if b.Len() > 1<<30 {
				return c.errf(1, "output too large")
			}
		}
		return c.shufWrite(output, b.String())
	}
	for i := int64(0); count < 0 || i < count; i++ {
		if i&1023 == 0 && c.stopped() {
			break
		}
		c.out.WriteString(pick(r) + eol)
	}
	return c.done(0)
}

// shufRand returns the random source: a file's bytes with
// --random-source, else the sandbox's entropy, else a fixed seed.
func (c *cmd) shufRand(source string) (*rand.Rand, int, bool) {
	var seed [16]byte
	switch {
	case source != "":
		data, err := c.readFile(source)
		if err != nil {
			return nil, c.fileErr(1, source, err), false
		}
		copy(seed[:], data)
		if len(data) > 16 {
			h := fnvSum(data)
			binary.LittleEndian.PutUint64(seed[8:], h)
		}
	case c.env.Random != nil:
		if _, err := io.ReadFull(c.env.Random, seed[:]); err != nil {
			return nil, c.errf(1, "cannot read the sandbox's random source: %v", err), false
		}
	}
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:]))), 0, true
}

func fnvSum(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, x := range b {
		h ^= uint64(x)
		h *= 1099511628211
	}
	return h
}

func (c *cmd) shufWrite(output, text string) int {
	if output != "" {
		if !c.writeFile(output, []byte(text)) {
			return c.done(1)
		}
		return c.done(0)
	}
	c.out.WriteString(text)
	return c.done(0)
}
