package coreutils

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

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
	{"values of an object", `{"b":1,"a":{"d":2,"c":3}}`, []string{"-c", ".[], [.a[]], (.a | .[]?), [.[] | numbers], map(.), [..], [paths], [leaf_paths], path(.[]), [tostream]"}},
	{"optional iteration", `{"b":[1,{"y":1,"x":2}],"a":{"d":2,"c":3}}`, []string{"-c", "[.b[]?[]?], [.[]?], [.b[]?.y?], del(.b[]?), del(.a[]), (.b[1][] |= 7), (label $f | .[] | ., break $f), first(.[]), [limit(1; .a[])], [.[][]?]"}},
	{"keys_unsorted", `{"b":1,"a":2} [3,4]`, []string{"-c", "keys_unsorted"}},
	{"to_entries", `{"b":1,"a":{"d":2,"c":3}}`, []string{"-c", "to_entries, (.a | to_entries | from_entries), with_entries(select(.key != \"x\")), ([5,6] | to_entries)"}},
	{"object built by the filter", `{"a":1,"b":2}`, []string{"-c", "{z: 1, y: 2} + ., {b, a}, (. as $v | {\"q r\": 1, $v, p: 2}), {(.a | tostring): 1, z: 2, b: 3}, {b: (1, 2), a: 3}, (. as {a: $x, b: $y} | {$y, $x})"}},
	{"merges", `{"b":1,"a":{"d":2,"c":3}}`, []string{"-c", ". + {c: 3, aa: 0}, . * {a: {e: 4, c: 5}, z: 1}, ([{y: 1}, {x: 2}, null] | add), ({} + .a), (.a + {}), reduce range(3) as $i ({}; . + {(\"k\\($i)\"): $i})"}},
	{"objects as text", `{"b":1,"a":{"d":2,"c":[3]}}`, []string{"-c", "tostring, tojson, [.[] | tostring], \"\\(.)\", @json, @text, @json \"v=\\(.a)\""}},
	{"same order as the first, updated", `{"b":1,"a":2}`, []string{"-c", ".c = 3, del(.b), .a += 1, map_values(. + 1), (.[] |= 0), walk(if type == \"object\" then . + {z: 0} else . end)"}},
	{"updates of objects in another order", "{\"a\":1,\"b\":2,\"c\":3}\n{\"c\":1,\"b\":2,\"a\":{\"y\":1,\"x\":2}}", []string{"-c", "del(.a), .d = 1, .c += 1, map_values(.), walk(.), (.a |= if type == \"object\" then del(.y) + {z: 0} else . end), setpath([\"e\"]; 1), delpaths([[\"b\"]]), (.a = {q: 1, p: 2}), with_entries(.), (.a.x? = 0)"}},
	{"object put in the place of one in another order", `{"c":{"x":1,"y":2},"a":{"y":3,"x":4}}`, []string{"-c", ".a = .c, (.a |= {y, x}), .c.z = 1"}},
	{"fromjson", `"{\"b\":1,\"a\":{\"d\":2,\"c\":3}}" "[1,"`, []string{"-c", "try fromjson catch \"not JSON\""}},
	{"arguments", `null`, []string{"-c", "--argjson", "x", `{"b":1,"a":{"d":2,"c":3}}`, "--arg", "z", "1", "--arg", "c", "2", "$x, $ARGS, ($x | keys_unsorted)"}},
	{"entries after objects with value before key", `{"value":1,"key":"a"} {"b":1,"a":2}`, []string{"-c", "to_entries, with_entries(.)"}},
	{"match and capture", `"foo bar" "x"`, []string{"-c", `[match("(?<x>o+) (b)"; "g")], [capture("(?<y>o+) (?<a>b)")], [match(["O", "gi"])], [capture("(?<z>x)")]`}},
	{"INDEX and del", `{"users":[{"name":"bob","id":2,"tags":["x"]},{"id":1,"name":"al"}]}`, []string{"-c", ".users | INDEX(.name), INDEX(.[]; .id), (.[] | del(.tags))"}},
	{"add over an object", `{"b":"x","a":"y"}`, []string{"-c", "add"}},
	{"other values unchanged", `{"b":[1,2],"a":"x"}`, []string{"-c", "(.b | add), (.a + \"y\"), ([.b[] * 2.5]), (9007199254740993 + 1 > 0), ({} * {}), ([] | add)"}},
	{"same keys, another order", "{\"a\":1,\"b\":2}\n{\"b\":3,\"a\":4}\n[{\"a\":5,\"b\":6},{\"b\":7,\"a\":8}]", []string{"-c", "., .[1]?"}},
	{"same keys nested, another order", `{"x":{"a":1,"b":2},"y":{"b":3,"a":4},"z":[{"b":5,"a":6}]}`, []string{"-c", ".y, .z[0], [.x, .y], {x: .y}, del(.x)"}},
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
	{"every value of an object in another order replaced", "{\"a\":1,\"b\":2}\n{\"b\":3,\"a\":4}", "map_values(10)", "gojq copies the object; a copy that holds none of the object's values cannot be told from another object with the same keys, and prints in the order of the first such"},
	{"object built by a builtin", `{"a":{"y":1,"x":2},"b":{"x":3,"y":4}}`, "fromstream(tostream)", "fromstream is gojq's, which builds its objects in maps: they print in the order of the first object with the same keys, else the input's first order of their keys, else sorted"},
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
	if out, errOut, status := runCmd(t, t.Context(), "jq", []string{"length"}, input, &Env{Budget: budget.New(8<<20, nil), MaxInputBytes: 1 << 22}); status != 0 || out != "20001\n" {
		t.Errorf("jq within an 8 MiB budget: %q, status %d %s", out, status, errOut)
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
				if err1 == io.EOF && !hasDuplicateKeys(two.order) && (!reflect.DeepEqual(orderedSets(one.order), orderedSets(two.order)) || !reflect.DeepEqual(one.order.rank, two.order.rank)) {
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

// orderedSets are the orders noted for sets of two keys or more (the
// order of one key is no order, and the one-pass decoder notes none).
func orderedSets(k *jqKeyOrder) map[string][]string {
	sets := map[string][]string{}
	for sig, keys := range k.sets {
		if len(keys) > 1 {
			sets[sig] = keys
		}
	}
	return sets
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

// FuzzJQKeyOrder runs filters compiled with jq's key order kept and as
// gojq alone would: the rewrite must never make a filter fail to compile
// or run, nor change the exit status; and where the filter's output
// cannot depend on key order (-S, nothing that iterates, lists or
// serializes an object), the outputs are the same.
func FuzzJQKeyOrder(f *testing.F) {
	for _, tc := range jqOrderCases {
		if len(tc.args) == 2 && tc.args[0] == "-c" {
			f.Add(tc.args[1], tc.input)
		}
	}
	for _, s := range []string{".a = 1", ".[] |= 2", "{a: 1} * {a: {b: 2}}", "1 + 2 * 3", "{(.a): 1}", "del(.a, .b)",
		"[.[]?]", `"\(1 + 2)"`, "reduce .[] as $x (0; . + $x)", "def f: .[]; [path(f)]", ". as {a: $x} | $x", "{} | .a.b.c = 1",
		"try error({b: 1, a: 2}) catch .", "[limit(2; .[])]", "{a: 1} + null", "null + {a: 1}", "[.[] | {k: .}]"} {
		f.Add(s, `{"b":[1,2],"a":{"d":null,"c":"x"}}`)
	}
	order := regexp.MustCompile(`\[\]|keys_unsorted|entries|json|tostring|\\\(|@|\.\.|paths|add|map|stream|walk|first|last|limit|until|while|repeat|range|input|splits|getpath|env|\$__`)
	f.Fuzz(func(t *testing.T, filter, input string) {
		if len(filter) > 200 || len(input) > 1000 || strings.Contains(filter, "$__") {
			return
		}
		run := func(off bool) (string, int) {
			defer func(o bool) { jqOrderOff = o }(jqOrderOff)
			jqOrderOff = off
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			out, _, status := runCmd(t, ctx, "jq", []string{"-S", "-c", filter}, input, &Env{MaxOutputBytes: 1 << 16})
			return out, status
		}
		gojqOut, gojqStatus := run(true)
		out, status := run(false)
		if (status == 3) != (gojqStatus == 3) {
			t.Fatalf("jq -S -c %q <<< %q: status %d, as gojq alone %d (%q, %q)", filter, input, status, gojqStatus, out, gojqOut)
		}
		if !order.MatchString(filter) && (out != gojqOut || status != gojqStatus) {
			t.Fatalf("jq -S -c %q <<< %q: %q (status %d), as gojq alone %q (status %d)", filter, input, out, status, gojqOut, gojqStatus)
		}
	})
}

// TestJQKeyOrderStderrLikeJQ: the JSON debug and halt_error write to
// stderr keeps the key order too.
func TestJQKeyOrderStderrLikeJQ(t *testing.T) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("jq not installed (.ci/run installs it)")
	}
	input := `{"b":1,"a":{"d":2,"c":3}}`
	for _, filter := range []string{"debug | empty", ".a | halt_error", "{z: 1, y: .a} | halt_error", "error({z: 1, y: .a})"} {
		cmd := exec.Command(jq, "-c", filter)
		cmd.Stdin = strings.NewReader(input)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		_ = cmd.Run()
		_, errOut, status := runCmd(t, t.Context(), "jq", []string{"-c", filter}, input, nil)
		// (the sandbox's halt_error prefixes a value that is no string
		// with "jq: error (at <stdin>): ", and its errors name line 1
		// where jq 1.6 says 0)
		want := strings.Replace(stderr.String(), "(at <stdin>:0)", "(at <stdin>:1)", 1)
		if !strings.HasSuffix(errOut, want) || status != cmd.ProcessState.ExitCode() {
			t.Errorf("jq -c %q: stderr %q, status %d; real jq %q, %d", filter, errOut, status, stderr.String(), cmd.ProcessState.ExitCode())
		}
	}
}
