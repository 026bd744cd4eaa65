package demiurge_test

import (
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/schema"
)

// TestTokenUsageCBOR: a usage encodes as the schema V2 says, decodes as
// the one its fields say, and an @1 usage cannot hold cache writes.
func TestTokenUsageCBOR(t *testing.T) {
	tests := []struct {
		name string
		u    demiurge.TokenUsage
		want string // its value as JSON
		err  string
	}{
		{"v1", demiurge.TokenUsage{Prompt: 10, Completion: 5, Cached: 4, Reasoning: 2},
			`{"cached":4,"prompt":10,"reasoning":2,"completion":5}`, ""},
		{"v2", demiurge.TokenUsage{Prompt: 10, Completion: 5, Cached: 4, CacheWrite: 3, Reasoning: 2, V2: true},
			`{"input":10,"output":5,"reasoning":2,"cache_read":4,"cache_write":3}`, ""},
		{"v2 zero", demiurge.TokenUsage{V2: true}, `{"input":0,"output":0,"reasoning":0,"cache_read":0,"cache_write":0}`, ""},
		{"v1 with cache writes", demiurge.TokenUsage{Prompt: 10, CacheWrite: 3}, "", "cannot be counted in a sys/LlmTokenUsage@1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := cas.Marshal(tc.u)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v; want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v, err := schema.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(schema.ValueJSON(v)); got != tc.want {
				t.Errorf("encoded %s; want %s", got, tc.want)
			}
			var back demiurge.TokenUsage
			if err := cas.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back != tc.u {
				t.Errorf("decoded %+v; want %+v", back, tc.u)
			}
		})
	}
}
