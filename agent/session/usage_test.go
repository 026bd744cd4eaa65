package session

import (
	"reflect"
	"testing"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

// TestReadUsage reads a model call's usage from receipts of each version.
func TestReadUsage(t *testing.T) {
	ref := cas.Sum([]byte("out"))
	rc := llm.Receipt{OutputRef: ref, Model: "claude-sonnet-4-5", UsageKnown: true, CostKnown: true,
		TokenUsage:   llm.TokenUsage{Input: 1200, Output: 80, CacheRead: 900, CacheWrite: 250, Reasoning: 30},
		CostMicroUSD: 4321, CostCents: 0, CostSource: llm.CostSource{Kind: llm.CostFromProvider, Field: "usage.cost"}, ProviderName: "openrouter"}
	for _, tc := range []struct {
		name    string
		marshal func(llm.Receipt) ([]byte, error)
		want    ModelCall
	}{
		{"@3", llm.Receipt.MarshalCBOR, ModelCall{InputTokens: 1200, OutputTokens: 80, CachedTokens: 900, CacheWriteTokens: 250, Reasoning: 30,
			CostMicroUSD: 4321, CostSource: "reported by the provider (usage.cost)", ProviderName: "openrouter"}},
		{"@2", llm.Receipt.MarshalV2, ModelCall{InputTokens: 1200, OutputTokens: 80, CachedTokens: 900, Reasoning: 30, CostMicroUSD: 4321}},
		{"@1", llm.Receipt.MarshalV1, ModelCall{InputTokens: 1200, OutputTokens: 80, CachedTokens: 900, Reasoning: 30, CostMicroUSD: 4321}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.marshal(rc)
			if err != nil {
				t.Fatal(err)
			}
			v, err := schema.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			var got ModelCall
			readUsage(&got, v.(*schema.Map))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
