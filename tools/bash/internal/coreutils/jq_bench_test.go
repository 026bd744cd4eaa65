package coreutils

import (
	"bytes"
	"io"
	"strconv"
	"testing"
)

// jqBenchInput is about 5 MB of nested objects whose keys are not in
// sorted order: an array of records, each with a nested address, a list
// of orders and a few scalars, as a tool's JSON answer has.
func jqBenchInput() []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; b.Len() < 5<<20; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		n := strconv.Itoa(i)
		b.WriteString(`{"id":` + n + `,"name":"user-` + n + `","email":"u` + n + `@example.com","active":true,` +
			`"address":{"street":"` + n + ` Main St","city":"Springfield","zip":"0` + n + `","geo":{"lat":40.7128,"lng":-74.006}},` +
			`"tags":["alpha","beta","gamma"],"orders":[{"sku":"SKU-` + n + `","qty":2,"price":19.99,"meta":{"gift":false,"note":null}},` +
			`{"sku":"SKU-X","qty":1,"price":5,"meta":{"gift":true,"note":"thanks \u00e9"}}],"score":` + n + `.5}`)
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// BenchmarkJQDecode compares, in one run, decoding with the key order
// noted in two passes (encoding/json, a number walk and a second
// tokenization, as jq did before) and in one pass (jqDecoder): over the 5
// MB input, and over the small answers of BenchmarkScript's tools.
func BenchmarkJQDecode(b *testing.B) {
	inputs := []struct {
		name string
		data []byte
	}{
		{"5MB", jqBenchInput()},
		{"small", []byte(`{"id":9,"name":"user9"}` + "\n" + `[{"total":2.5},{"total":4}]` + "\n")},
	}
	decoders := []struct {
		name string
		next func([]byte) func() (any, error)
	}{
		{"two-pass", func(d []byte) func() (any, error) { return newTwoPassDecoder(d, newJQKeyOrder()).next }},
		{"one-pass", func(d []byte) func() (any, error) { return newJQDecoder(d, newJQKeyOrder()).next }},
	}
	for _, in := range inputs {
		for _, dc := range decoders {
			b.Run(in.name+"/"+dc.name, func(b *testing.B) {
				b.SetBytes(int64(len(in.data)))
				b.ReportAllocs()
				for b.Loop() {
					next := dc.next(in.data)
					for {
						if _, err := next(); err == io.EOF {
							break
						} else if err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// BenchmarkJQLargeInput runs the jq command over the 5 MB input: reading,
// decoding, the filter and printing with the input's key order (.), and a
// filter whose output is small (length), where decoding is most of it.
func BenchmarkJQLargeInput(b *testing.B) {
	data := jqBenchInput()
	env := &Env{MaxInputBytes: 64 << 20}
	for _, args := range [][]string{{"-c", "."}, {"length"}} {
		b.Run(args[len(args)-1], func(b *testing.B) {
			if _, errOut, status := runCmdBytes(b, b.Context(), "jq", args, data, env); status != 0 {
				b.Fatalf("jq %q: status %d, %s", args, status, errOut)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				runCmdBytes(b, b.Context(), "jq", args, data, env)
			}
		})
	}
}

// BenchmarkJQOrder runs filters that iterate, build and merge objects over
// the 5 MB input, compiled as gojq alone would (gojq: objects print in
// the order noted for the input's key sets, the filter's objects sorted)
// and with jq's key order kept (ordered), in one run.
func BenchmarkJQOrder(b *testing.B) {
	data := jqBenchInput()
	env := &Env{MaxInputBytes: 64 << 20}
	for _, filter := range []string{".", "length", ".[] | {id, name}", "map(.address + {id})", "[.[] | .orders[] | .qty * .price] | add",
		"map(to_entries | length) | add", "[.[] | .address | keys_unsorted[0]] | length", "[.[] | tojson] | length"} {
		for _, mode := range []string{"gojq", "ordered"} {
			b.Run(filter+"/"+mode, func(b *testing.B) {
				defer func(off bool) { jqOrderOff = off }(jqOrderOff)
				jqOrderOff = mode == "gojq"
				args := []string{"-c", filter}
				if _, errOut, status := runCmdBytes(b, b.Context(), "jq", args, data, env); status != 0 {
					b.Fatalf("jq %q: status %d, %s", args, status, errOut)
				}
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for b.Loop() {
					runCmdBytes(b, b.Context(), "jq", args, data, env)
				}
			})
		}
	}
}

// BenchmarkJQOrderSmall runs filters over one of BenchmarkScript's small
// answers, as gojq alone would and with jq's key order kept, in one run:
// compiled once (cached, as the shell's runs are) and compiled every run
// (the order-keeping defs add to what is compiled).
func BenchmarkJQOrderSmall(b *testing.B) {
	data := []byte(`{"id":9,"name":"user9","tags":{"z":1,"a":2}}` + "\n")
	for _, filter := range []string{".name", "{id, name}", "to_entries | map(.key)", ". + {x: 1}"} {
		for _, cached := range []bool{true, false} {
			for _, mode := range []string{"gojq", "ordered"} {
				name := filter + "/uncached/" + mode
				if cached {
					name = filter + "/cached/" + mode
				}
				b.Run(name, func(b *testing.B) {
					defer func(off bool) { jqOrderOff = off }(jqOrderOff)
					jqOrderOff = mode == "gojq"
					env := &Env{}
					if cached {
						env.JQ = &JQCache{}
					}
					args := []string{"-c", filter}
					if _, errOut, status := runCmdBytes(b, b.Context(), "jq", args, data, env); status != 0 {
						b.Fatalf("jq %q: status %d, %s", args, status, errOut)
					}
					b.ReportAllocs()
					for b.Loop() {
						runCmdBytes(b, b.Context(), "jq", args, data, env)
					}
				})
			}
		}
	}
}

// BenchmarkJQOrderLoops runs, without input, loops that add numbers, build
// many small objects and grow one object key by key (an update, a merge),
// as gojq alone would and with jq's key order kept, in one run.
func BenchmarkJQOrderLoops(b *testing.B) {
	for _, filter := range []string{"reduce range(300000) as $i (0; . + $i)", "[range(100000) | {a: ., b: 1}] | length",
		`reduce range(2000) as $i ({}; .["k\($i)"] = $i) | length`, `reduce range(2000) as $i ({}; . + {("k\($i)"): $i}) | length`} {
		for _, mode := range []string{"gojq", "ordered"} {
			b.Run(filter+"/"+mode, func(b *testing.B) {
				defer func(off bool) { jqOrderOff = off }(jqOrderOff)
				jqOrderOff = mode == "gojq"
				b.ReportAllocs()
				for b.Loop() {
					if out, errOut, status := runCmd(b, b.Context(), "jq", []string{"-n", filter}, "", &Env{}); status != 0 {
						b.Fatalf("jq -n %q: %q, status %d, %s", filter, out, status, errOut)
					}
				}
			})
		}
	}
}
