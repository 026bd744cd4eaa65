//go:build wasip1

// The counter (examples/counter) as a Go reducer module with AgentOS's
// reducer ABI v1: Go's wasip1 port with //go:wasmexport, no dependencies
// (a small CBOR reader and writer below). Build it as a reactor, so that
// main never runs and the exports stay callable:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o counter.wasm .
//
// Go's runtime imports WASI (clocks, random bytes, fd_write), so a world
// runs it with the deterministic WASI: demiurge --wasi.
package main

import "unsafe"

func main() {}

// keep holds what alloc handed out, so the collector leaves it alone while
// the host writes into it; the host resets the instance after every step.
var keep [][]byte

//go:wasmexport alloc
func alloc(n int32) int32 {
	b := make([]byte, max(n, 1))
	keep = append(keep, b)
	return int32(uintptr(unsafe.Pointer(&b[0])))
}

// step is the ABI's return-pointer form, step(ret, ptr, len): Go's
// exports return one value at most. It writes the output's pointer and
// length at ret.
//
//go:wasmexport step
func step(ret, ptr, n int32) {
	in := unsafe.Slice((*byte)(unsafe.Pointer(uintptr(ptr))), n)
	out := counter(in)
	keep = append(keep, out)
	res := (*[2]int32)(unsafe.Pointer(uintptr(ret)))
	res[0], res[1] = int32(uintptr(unsafe.Pointer(&out[0]))), int32(len(out))
}

// cursor reads CBOR; a malformed input panics, which traps the step.
type cursor struct {
	b []byte
	p int
}

func (c *cursor) head() (major byte, n uint64) {
	ib := c.b[c.p]
	c.p++
	info := ib & 0x1f
	switch {
	case info < 24:
		n = uint64(info)
	case info <= 27:
		for range 1 << (info - 24) {
			n = n<<8 | uint64(c.b[c.p])
			c.p++
		}
	default:
		panic("indefinite length")
	}
	if ib>>5 == 6 { // a tag
		return c.head()
	}
	return ib >> 5, n
}

func (c *cursor) str() string {
	_, n := c.head()
	s := string(c.b[c.p : c.p+int(n)])
	c.p += int(n)
	return s
}

func (c *cursor) bytes() []byte {
	if c.b[c.p] == 0xf6 {
		c.p++
		return nil
	}
	_, n := c.head()
	b := c.b[c.p : c.p+int(n)]
	c.p += int(n)
	return b
}

func (c *cursor) skip() {
	m, n := c.head()
	switch m {
	case 2, 3:
		c.p += int(n)
	case 4:
		for range n {
			c.skip()
		}
	case 5:
		for range 2 * n {
			c.skip()
		}
	}
}

// fields calls fn with each key of a map, fn reading or skipping its value.
func (c *cursor) fields(fn func(k string)) {
	_, n := c.head()
	for range n {
		fn(c.str())
	}
}

func counter(input []byte) []byte {
	env := &cursor{b: input}
	var state, event []byte
	env.fields(func(k string) {
		switch k {
		case "state":
			state = env.bytes()
		case "event":
			env.fields(func(k string) {
				if k == "value" {
					event = env.bytes()
				} else {
					env.skip()
				}
			})
		default:
			env.skip()
		}
	})
	pc, remaining := "Idle", uint64(0)
	if state != nil {
		s := &cursor{b: state}
		s.fields(func(k string) {
			switch k {
			case "pc":
				s.fields(func(k string) {
					if k == "$tag" {
						pc = s.str()
					} else {
						s.skip()
					}
				})
			case "remaining":
				_, remaining = s.head()
			default:
				s.skip()
			}
		})
	}
	e := &cursor{b: event}
	var tag string
	var target uint64
	e.fields(func(k string) {
		switch k {
		case "$tag":
			tag = e.str()
		case "$value":
			e.fields(func(k string) {
				if k == "target" {
					_, target = e.head()
				} else {
					e.skip()
				}
			})
		default:
			e.skip()
		}
	})
	switch tag {
	case "Start":
		remaining, pc = target, "Counting"
		if target == 0 {
			pc = "Done"
		}
	case "Tick":
		if pc == "Counting" && remaining > 0 {
			remaining--
			if remaining == 0 {
				pc = "Done"
			}
		}
	default:
		panic("unknown event " + tag)
	}
	st := appendHead(nil, 5, 2)
	st = appendText(appendText(appendHead(appendText(st, "pc"), 5, 1), "$tag"), pc)
	st = appendHead(appendText(st, "remaining"), 0, remaining)
	out := appendHead(nil, 5, 4)
	out = append(appendHead(appendText(out, "state"), 2, uint64(len(st))), st...)
	out = appendHead(appendText(out, "domain_events"), 4, 0)
	out = appendHead(appendText(out, "effects"), 4, 0)
	return append(appendText(out, "ann"), 0xf6)
}

func appendHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= 0xff:
		return append(b, m|24, byte(n))
	case n <= 0xffff:
		return append(b, m|25, byte(n>>8), byte(n))
	case n <= 0xffffffff:
		return append(b, m|26, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	b = append(b, m|27)
	for i := 7; i >= 0; i-- {
		b = append(b, byte(n>>(8*i)))
	}
	return b
}

func appendText(b []byte, s string) []byte { return append(appendHead(b, 3, uint64(len(s))), s...) }
