package coreutils

import (
	"errors"
	"io"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/budget"
)

// jqOrderCases are inputs whose printing depends on the key order jq keeps:
// nested objects, duplicate keys, large numbers, unicode keys.
var jqOrderCases = []struct {
	name, input string
	args        []string
}{
	{"nested", `{"z":{"y":1,"b":{"q":1,"a":2}},"a":[{"m":1,"c":{"x":[],"d":{}}}],"k":null}`, []string{"."}},
	{"nested compact", `{"z":{"y":1,"b":{"q":1,"a":2}},"a":[{"m":1,"c":{"x":[],"d":{}}}]}`, []string{"-c", "."}},
	{"nested path", `{"z":{"y":1,"b":{"q":1,"a":2}},"a":[{"m":1,"c":2}]}`, []string{"-c", ".z, .z.b, .a[0]"}},
	{"nested update", `{"z":{"y":1,"b":{"q":1,"a":2}},"a":3}`, []string{"-c", ".z.b.q = 5 | .a += 1"}},
	{"arrays of objects", `[{"id":2,"name":"b","tags":["x"]},{"id":1,"name":"a","tags":[]}]`, []string{"-c", ".[]"}},
	{"stream", "{\"b\":1,\"a\":2}\n{\"d\":{\"f\":1,\"e\":2}}\n[{\"b\":3,\"a\":4}]", []string{"-c", "."}},
	{"slurp", `{"b":1,"a":2} {"c":{"y":1,"x":2}}`, []string{"-c", "-s", "."}},
	{"del", `{"c":1,"b":2,"a":3}`, []string{"-c", "del(.b)"}},
	{"duplicate key", `{"b":1,"a":2,"b":3}`, []string{"-c", "."}},
	{"duplicate key nested", `{"x":{"k":1,"j":2,"k":{"n":3,"m":4}},"k":0}`, []string{"-c", "."}},
	{"duplicate key after other objects", `{"a":0} {"b":1,"a":2,"b":3}`, []string{"-c", "."}},
	{"duplicate key only", `{"a":1,"a":2}`, []string{"-c", "."}},
	// Numbers a double holds exactly: jq 1.6 (Debian 12's) turns every
	// number into a double where 1.7 and gojq keep a large integer's digits.
	{"large numbers", `{"max":9007199254740992,"neg":-9007199254740992,"f":1.5e300,"tiny":-2.5e-300,"e":1e3,"z":0,"m":1.7976931348623157e308}`, []string{"-c", "."}},
	{"large numbers nested", `{"b":{"y":4503599627370496,"x":[1e100,{"q":2,"p":1}]},"a":-1e-100}`, []string{"-c", ".b, ."}},
	{"unicode keys", `{"日本":1,"é":2,"a":3,"😀":4,"Z":5}`, []string{"-c", "."}},
	{"escaped keys", `{"\u00e9":1,"\n":2,"a\"b":3,"\ud83d\ude00":4}`, []string{"."}},
	{"unicode nested", `{"ключ":{"値":1,"clé":[{"β":2,"α":3}]}}`, []string{"-c", `.["ключ"], .`}},
	{"to_entries", `{"b":1,"a":2}`, []string{"-c", "with_entries(.value += 1)"}},
}

// TestJQKeyOrderLikeJQ runs the cases through the sandbox's jq and the
// real jq (1.6 on Debian 12; key order is the same in 1.7): the outputs must be the same.
func TestJQKeyOrderLikeJQ(t *testing.T) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("jq not installed (.ci/run installs it)")
	}
	for _, tc := range jqOrderCases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(jq, tc.args...)
			cmd.Stdin = strings.NewReader(tc.input)
			want, err := cmd.Output()
			if err != nil {
				t.Fatalf("real jq %q: %v", tc.args, err)
			}
			got, errOut, status := runCmd(t, t.Context(), "jq", tc.args, tc.input, nil)
			if got != string(want) || status != 0 {
				t.Errorf("jq %q <<< %s:\nsandbox %q (status %d, stderr %q)\nreal jq %q", tc.args, tc.input, got, status, errOut, want)
			}
		})
	}
}

// jqOrderKnownDiffs are where the sandbox's jq still prints another order
// than jq: gojq's maps iterate sorted, and an object's order is found by its
// set of keys, not by the object.
var jqOrderKnownDiffs = []struct {
	name, input, filter, why string
}{
	{"same keys, another order", "{\"a\":1,\"b\":2}\n{\"b\":3,\"a\":4}", ".", "an input object prints in the order of the first input object with the same keys"},
	{"values of an object", `{"b":1,"a":2}`, ".[]", "gojq iterates an object's values in key order"},
	{"keys_unsorted", `{"b":1,"a":2}`, "keys_unsorted", "keys_unsorted is keys"},
	{"to_entries", `{"b":1,"a":2}`, "to_entries", "gojq lists an object's entries in key order"},
	{"object built by the filter", `{"a":1}`, "{z: 1, y: 2} + .", "an object the filter builds has no input order: its new keys print sorted"},
}

// TestJQKeyOrderKnownDiffs: each known difference is still one (when one
// is fixed, it moves to jqOrderCases).
func TestJQKeyOrderKnownDiffs(t *testing.T) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("jq not installed (.ci/run installs it)")
	}
	for _, tc := range jqOrderKnownDiffs {
		cmd := exec.Command(jq, "-c", tc.filter)
		cmd.Stdin = strings.NewReader(tc.input)
		want, err := cmd.Output()
		if err != nil {
			t.Fatalf("real jq %q: %v", tc.filter, err)
		}
		if got, _, _ := runCmd(t, t.Context(), "jq", []string{"-c", tc.filter}, tc.input, nil); got == string(want) {
			t.Errorf("%s (%s): the sandbox now prints what jq does, %q: move it to jqOrderCases", tc.name, tc.why, got)
		}
	}
}

// TestJQInputChargesBudget: jq's input is held within the memory budget.
func TestJQInputChargesBudget(t *testing.T) {
	input := "[" + strings.Repeat(`{"b":1,"a":"xxxxxxxx"},`, 20000) + "{}]"
	b := budget.New(64<<10, nil)
	_, errOut, status := runCmd(t, t.Context(), "jq", []string{"length"}, input, &Env{Budget: b, MaxInputBytes: 1 << 22})
	if status == 0 || !strings.Contains(errOut, "memory budget exceeded") {
		t.Errorf("jq over a 64 KiB budget: status %d, stderr %q", status, errOut)
	}
	if out, _, status := runCmd(t, t.Context(), "jq", []string{"length"}, input, &Env{Budget: budget.New(8<<20, nil), MaxInputBytes: 1 << 22}); status != 0 || out != "20001\n" {
		t.Errorf("jq within an 8 MiB budget: %q, status %d", out, status)
	}
}

// TestJQDecoderErrors: malformed input is an error naming what is wrong,
// after the values before it.
func TestJQDecoderErrors(t *testing.T) {
	for _, tc := range []struct{ input, out, err string }{
		{`{bad`, "", "invalid character 'b'"},
		{`{"a":1} [1,]`, "{\"a\":1}\n", "invalid character"},
		{`{"a":1}x`, "{\"a\":1}\n", "invalid character 'x'"},
		{`[1, 2`, "", "unexpected EOF"},
		{"{\"a\":\n1,\n\"b\" 2}", "", "(at <stdin>:3)"},
	} {
		out, errOut, status := runCmd(t, t.Context(), "jq", []string{"-c", "."}, tc.input, nil)
		if out != tc.out || status != 2 || !strings.Contains(errOut, "Cannot parse input: ") || !strings.Contains(errOut, tc.err) || strings.Contains(errOut, "jsontext") {
			t.Errorf("jq <<< %q: %q, status %d, stderr %q; want %q, 2, %q", tc.input, out, status, errOut, tc.out, tc.err)
		}
	}
}

// FuzzJQDecoder checks the one-pass decoder against the two-pass decoding
// it replaced: the same values, the same place of the first error, and
// (without duplicate keys, where the old one noted each occurrence) the
// same key order noted.
func FuzzJQDecoder(f *testing.F) {
	for _, tc := range jqOrderCases {
		f.Add([]byte(tc.input))
	}
	for _, s := range []string{"", " ", "1 2", "{}{}", `"a""b"`, "[1][2]", `{"a":"\ud800"}`, "\"\xff\"", "nul", "[1,]", `{"a":1}x`,
		"-0", "1e400", "-1.5e-7", `{"a":{"b":{"c":[{"d":1}]}}}`, `"\u0000\t"`, "[[[[]]]]", "\t{\"a\":[true,false,null]}\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		one, two := newJQDecoder(data, newJQKeyOrder()), newTwoPassDecoder(data, newJQKeyOrder())
		for i := 0; ; i++ {
			v1, err1 := one.next()
			v2, err2 := two.next()
			if (err1 == nil) != (err2 == nil) || (err1 == io.EOF) != (err2 == io.EOF) {
				t.Fatalf("value %d of %q: one pass %v, %v; two passes %v, %v", i, data, v1, err1, v2, err2)
			}
			if err1 != nil {
				var pe *jqParseError
				if err1 != io.EOF && !errors.As(err1, &pe) {
					t.Fatalf("value %d of %q: error %v is no parse error", i, data, err1)
				}
				if err1 == io.EOF && !hasDuplicateKeys(two.order) && !reflect.DeepEqual(one.order, two.order) {
					t.Fatalf("key order of %q: one pass %v, two passes %v", data, one.order, two.order)
				}
				return
			}
			if !reflect.DeepEqual(v1, v2) {
				t.Fatalf("value %d of %q: one pass %#v, two passes %#v", i, data, v1, v2)
			}
		}
	})
}

// hasDuplicateKeys reports whether an object noted has a key twice.
func hasDuplicateKeys(k *jqKeyOrder) bool {
	for _, keys := range k.sets {
		s := slices.Clone(keys)
		slices.Sort(s)
		if len(slices.Compact(s)) != len(keys) {
			return true
		}
	}
	return false
}
