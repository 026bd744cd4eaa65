package coreutils

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// This file keeps the decoding jq did before jqDecoder, as the reference
// the one-pass decoder is checked against (FuzzJQDecoder) and measured
// against (BenchmarkJQDecode): encoding/json decodes a value, a walk
// converts its numbers, and the value's bytes are tokenized again to note
// the order of its objects' keys.

// twoPassDecoder is the former decoding of jq's inputs.
type twoPassDecoder struct {
	data  []byte
	dec   *json.Decoder
	order *jqKeyOrder
}

func newTwoPassDecoder(data []byte, order *jqKeyOrder) *twoPassDecoder {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return &twoPassDecoder{data: data, dec: dec, order: order}
}

// next returns the next value, or io.EOF.
func (d *twoPassDecoder) next() (any, error) {
	if len(bytes.TrimLeft(d.data[min(int(d.dec.InputOffset()), len(d.data)):], " \t\r\n")) == 0 {
		return nil, io.EOF
	}
	var v any
	start := d.dec.InputOffset()
	if err := d.dec.Decode(&v); err != nil {
		return nil, err
	}
	if end := d.dec.InputOffset(); start < end && end <= int64(len(d.data)) && d.order != nil {
		twoPassRecord(d.order, d.data[start:end])
	}
	return twoPassNormalize(v), nil
}

// twoPassNormalize turns json.Number into gojq's number types.
func twoPassNormalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
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
	case []any:
		for i := range x {
			x[i] = twoPassNormalize(x[i])
		}
		return x
	case map[string]any:
		for k := range x {
			x[k] = twoPassNormalize(x[k])
		}
		return x
	}
	return v
}

// twoPassRecord notes the key order of the objects in one JSON text by
// tokenizing it again.
func twoPassRecord(k *jqKeyOrder, data []byte) {
	if !bytes.ContainsRune(data, '{') {
		return
	}
	type frame struct {
		obj       bool
		expectKey bool
		keys      []string
	}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.expectKey {
			if key, ok := tok.(string); ok {
				top.keys = append(top.keys, key)
				top.expectKey = false
				if _, seen := k.rank[key]; !seen && len(k.rank) < jqMaxKeys {
					k.rank[key] = len(k.rank)
				}
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, expectKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			if top == nil {
				return
			}
			stack = stack[:len(stack)-1]
			if top.obj && len(k.sets) < jqMaxKeySets {
				sorted := slices.Clone(top.keys)
				sort.Strings(sorted)
				sig := strings.Join(sorted, "\x00")
				if _, ok := k.sets[sig]; !ok {
					k.sets[sig] = top.keys
				}
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].obj {
			stack[len(stack)-1].expectKey = true
		}
	}
}
