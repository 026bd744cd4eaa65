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
