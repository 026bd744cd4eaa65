package cli

import (
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestJSONConvention: the --json output of every command follows
// docs/cli.md. A report is one JSON document (a list an array, [] when
// empty); a stream (run, trace, journal dump, send) is JSON Lines; one
// name per concept (token counts input_tokens…, a journal head {"seq",
// "hash"}, durations *_ms); times in strings are RFC 3339.
func TestJSONConvention(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	demo := filepath.Join("..", "testdata", "sessions", "demo")
	manifest := filepath.Join("..", "examples", "demiurge")
	mustRun(t, 0, "", "--store", store, "import", demo)
	empty := filepath.Join(t.TempDir(), "empty")
	evals := filepath.Join("..", "examples", "evals")
	mustRun(t, 0, "", "--store", empty, "cas", "put", filepath.Join(demo, "bundle.json"))

	// Reports: one document each.
	for _, tc := range []struct {
		args  []string
		array bool   // a list
		empty bool   // and this one is empty: []
		has   string // a key the document holds, somewhere
	}{
		{[]string{"--store", store, "worlds", "--json"}, true, false, `"head":{"seq":49,"hash":"blake3:`},
		{[]string{"--store", empty, "worlds", "--json"}, true, true, ""},
		{[]string{"--store", store, "journal", "verify", "--json"}, true, false, `"head":{"seq":49,`},
		{[]string{"--store", empty, "journal", "verify", "--json"}, true, true, ""},
		{[]string{"--store", store, "state", "--json"}, true, false, `"state_ref":`},
		{[]string{"--store", store, "workspace", "ls", "--json"}, true, false, `"path":"notes"`},
		{[]string{"--store", store, "workspace", "ls", "--json", "--version", "1", "nothing-here"}, true, true, ""},
		{[]string{"--store", store, "approve", manifest, "--json"}, true, true, ""},
		{[]string{"--store", store, "replay", "--json"}, false, false, `"head":{"seq":49,`},
		{[]string{"--store", store, "cas", "verify", "--json"}, false, false, `"corrupt":[]`},
		{[]string{"version", "--json"}, false, false, `"go":`},
		{[]string{"mcp", "ls", "--manifest", manifest, "--json"}, true, true, ""},
		{[]string{"--store", store, "fork", "--at", "3", "--world", "forked", "--json"}, false, false, `"head":{"seq":`},
		{[]string{"--store", store, "export", "--json", filepath.Join(t.TempDir(), "bundle")}, false, false, `"head":{"seq":49,"hash":`},
		{[]string{"--store", empty, "eval", "runs", "--json"}, true, true, ""},
		{[]string{"--store", store, "eval", evals, "--llm", "cassette:" + filepath.Join(evals, "cassettes"), "--case", "count-todos", "--json", "--no-progress"}, false, false, `"usage":{"input_tokens":`},
		{[]string{"--store", store, "eval", evals, "--llm", "cassette:" + filepath.Join(evals, "cassettes"), "--case", "refuse-key", "--json", "--no-progress"}, false, false, `"judge_usage":{"input_tokens":`},
		{[]string{"--store", store, "eval", "runs", "--json"}, true, false, `"total":{"cases":1,`},
		{[]string{"--store", store, "eval", "compare", "previous", "latest", "--json"}, false, false, `"counts":{"added":1,"removed":1}`},
	} {
		r := run(t, nil, "", tc.args...)
		if r.code != 0 && !strings.Contains(strings.Join(tc.args, " "), "nothing-here") {
			t.Errorf("%q: exit %d\n%s", tc.args, r.code, r.stderr)
			continue
		}
		if strings.Contains(strings.Join(tc.args, " "), "nothing-here") {
			continue // a path that is not there is an error, not a list
		}
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Errorf("%q: not JSON: %v\n%s", tc.args, err, r.stdout)
			continue
		}
		if err := dec.Decode(new(any)); !errors.Is(err, io.EOF) {
			t.Errorf("%q: more than one JSON document:\n%s", tc.args, r.stdout)
		}
		list, isList := v.([]any)
		switch {
		case tc.array != isList:
			t.Errorf("%q: a list is %v, want %v:\n%s", tc.args, isList, tc.array, r.stdout)
		case tc.empty && (len(list) != 0 || strings.TrimSpace(r.stdout) != "[]"):
			t.Errorf("%q: want [], got\n%s", tc.args, r.stdout)
		}
		if tc.has != "" && !strings.Contains(r.stdout, tc.has) {
			t.Errorf("%q: no %s in\n%s", tc.args, tc.has, r.stdout)
		}
		checkNames(t, tc.args, r.stdout)
	}

	// Streams: JSON Lines.
	for _, args := range [][]string{
		{"--store", store, "trace", "--json"},
		{"--store", store, "trace", "--json", "--records"},
		{"--store", store, "journal", "dump", "--json"},
	} {
		r := run(t, nil, "", args...)
		if r.code != 0 {
			t.Errorf("%q: exit %d\n%s", args, r.code, r.stderr)
			continue
		}
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		for i, l := range lines {
			var v map[string]any
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Errorf("%q: line %d is not one JSON object: %v\n%s", args, i+1, err, l)
				break
			}
		}
		checkNames(t, args, r.stdout)
		if args[3] == "trace" && len(args) == 5 {
			var turn struct {
				Time string `json:"time"`
			}
			_ = json.Unmarshal([]byte(lines[0]), &turn)
			if _, err := time.Parse(time.RFC3339Nano, turn.Time); err != nil {
				t.Errorf("trace --json: time %q is not RFC 3339: %v", turn.Time, err)
			}
		}
	}
}

// checkNames fails the test if JSON output names a concept otherwise than
// docs/cli.md says: token counts, heads, durations, and times.
func checkNames(t *testing.T, args []string, out string) {
	t.Helper()
	for _, old := range []string{`"prompt":`, `"completion":`, `"head_seq"`, `"head_hash"`, `"latency_ms"`, `"duration_ns"`, `"latency_ns"`, `"tokens":`, `"usage_known"`, `"cost_known"`} {
		// The chat reducer's own state (state --json) and the journal's
		// records are data, in their schemas' names.
		if strings.Contains(out, old) && !anyOf(args, "state", "dump", "--records") {
			t.Errorf("%q: prints %s, which docs/cli.md renames:\n%.600s", args, old, out)
		}
	}
	for _, m := range regexp.MustCompile(`"(time|last_activity|deadline|started)":"([^"]*)"`).FindAllStringSubmatch(out, -1) {
		if _, err := time.Parse(time.RFC3339Nano, m[2]); err != nil {
			t.Errorf("%q: %s %q is not RFC 3339", args, m[1], m[2])
		}
	}
}

// anyOf reports whether args holds any of words.
func anyOf(args []string, words ...string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return slices.Contains(words, a) })
}
