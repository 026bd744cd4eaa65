package llm

import (
	"encoding/hex"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
)

func TestToolChoiceCBOR(t *testing.T) {
	tests := []struct {
		c   ToolChoice
		hex string // canonical body, without the self-describe prefix
	}{
		// {"$tag":"Auto"}
		{ToolChoice{Kind: ToolChoiceAuto}, "a16424746167644175746f"},
		// {"$tag":"None"}
		{ToolChoice{Kind: ToolChoiceNone}, "a16424746167644e6f6e65"},
		// {"$tag":"Required"}
		{ToolChoice{Kind: ToolChoiceRequired}, "a16424746167685265717569726564"},
		// {"$tag":"Tool","$value":{"name":"x"}}
		{ToolChoice{Kind: ToolChoiceTool, Name: "x"}, "a2642474616764546f6f6c662476616c7565a1646e616d656178"},
	}
	for _, tc := range tests {
		t.Run(string(tc.c.Kind), func(t *testing.T) {
			b, err := cas.MarshalBody(tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(b); got != tc.hex {
				t.Errorf("encode: got %s; want %s", got, tc.hex)
			}
			var back ToolChoice
			if err := cas.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back != tc.c {
				t.Errorf("round trip: got %+v; want %+v", back, tc.c)
			}
		})
	}
}

func TestToolChoiceCBORErrors(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"unknown arm", map[string]any{"$tag": "Any"}, `"Any" is not one of`},
		{"tool without name", map[string]any{"$tag": "Tool"}, "missing $value"},
		{"tool empty name", map[string]any{"$tag": "Tool", "$value": map[string]any{"name": ""}}, "needs a tool name"},
		{"tool extra field", map[string]any{"$tag": "Tool", "$value": map[string]any{"name": "x", "why": "y"}}, `unknown field "why"`},
		{"unit arm with value", map[string]any{"$tag": "Auto", "$value": map[string]any{}}, "takes no $value"},
		{"extra key", map[string]any{"$tag": "Auto", "tag": "x"}, `unknown key "tag"`},
		{"no tag", map[string]any{"$value": "x"}, "no $tag"},
		{"tag not text", map[string]any{"$tag": 1}, "$tag is not text"},
		{"not a map", "Auto", "want a variant map"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := cas.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			var c ToolChoice
			err = cas.Unmarshal(b, &c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v; want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := cas.Marshal(ToolChoice{Kind: "auto"}); err == nil {
		t.Error("encoding an invalid kind succeeded")
	}
	if _, err := cas.Marshal(ToolChoice{Kind: ToolChoiceAuto, Name: "x"}); err == nil {
		t.Error("encoding Auto with a name succeeded")
	}
}

// TestVariantFormsMatchGenericMaps checks the struct encodings against the
// same values written as generic maps, the form the typed-value normalizer
// produces.
func TestVariantFormsMatchGenericMaps(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want any
	}{
		{"text format", TextFormat{JSONSchema: &JSONSchemaFormat{Name: "summary", SchemaJSON: `{"type":"object"}`, Strict: true}},
			map[string]any{"$tag": "JsonSchema", "$value": map[string]any{"name": "summary", "schema_json": `{"type":"object"}`, "strict": true}}},
		{"message item", OutputItem{Message: &MessageItem{Role: "assistant", Text: "hi"}},
			map[string]any{"$tag": "Message", "$value": map[string]any{"role": "assistant", "text": "hi"}}},
		{"tool call item", OutputItem{ToolCall: &ToolCall{CallID: "call_1", Name: "f", ArgumentsJSON: `{"a":`}},
			map[string]any{"$tag": "ToolCall", "$value": map[string]any{"call_id": "call_1", "name": "f", "arguments_json": `{"a":`}}},
		{"reasoning item", OutputItem{Reasoning: &ReasoningItem{}},
			map[string]any{"$tag": "Reasoning", "$value": map[string]any{"summary": []any{}}}},
		{"other item", OutputItem{Other: &OtherItem{Type: "web_search_call", JSON: `{"type":"web_search_call"}`}},
			map[string]any{"$tag": "Other", "$value": map[string]any{"type": "web_search_call", "json": `{"type":"web_search_call"}`}}},
		{"tool call node", ToolCall{CallID: "call_1", Name: "f", ArgumentsJSON: "{}"},
			map[string]any{"call_id": "call_1", "name": "f", "arguments_json": "{}"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cas.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			want, err := cas.Marshal(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("got %x; want %x", got, want)
			}
			if err := cas.CheckCanonical(got); err != nil {
				t.Error(err)
			}
			back := reflect.New(reflect.TypeOf(tc.v))
			if err := cas.Unmarshal(got, back.Interface()); err != nil {
				t.Fatal(err)
			}
			again, err := cas.Marshal(back.Elem().Interface())
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(got) {
				t.Errorf("decode/encode changed the bytes: %x; want %x", again, got)
			}
		})
	}
}

func TestOutputItemErrors(t *testing.T) {
	if _, err := cas.Marshal(OutputItem{}); err == nil {
		t.Error("encoding an item with no arm succeeded")
	}
	if _, err := cas.Marshal(OutputItem{Message: &MessageItem{}, Other: &OtherItem{}}); err == nil {
		t.Error("encoding an item with two arms succeeded")
	}
	bad := []map[string]any{
		{"$tag": "ToolOutput", "$value": map[string]any{}},
		{"$tag": "Message", "$value": map[string]any{"role": "assistant", "content": "x"}},
		{"$tag": "Message"},
	}
	for _, v := range bad {
		b, _ := cas.Marshal(v)
		var it OutputItem
		if err := cas.Unmarshal(b, &it); err == nil {
			t.Errorf("decoding %v succeeded", v)
		}
	}
	b, _ := cas.Marshal(map[string]any{"$tag": "Other"})
	var f TextFormat
	if err := cas.Unmarshal(b, &f); err == nil {
		t.Error("decoding an Other text format succeeded")
	}
	if _, err := cas.Marshal(TextFormat{}); err == nil {
		t.Error("encoding an empty text format succeeded")
	}
}

// TestParamsFromTypedValue decodes params in the form the world hands the
// dispatcher: the canonical typed value of sys/LlmGenerateParams@1.
func TestParamsFromTypedValue(t *testing.T) {
	m1 := cas.Sum([]byte("m1"))
	tools := cas.Sum([]byte("tools"))
	v := map[string]any{
		"provider":     "openai-chat",
		"model":        "gpt-5.2",
		"temperature":  "0.2",
		"max_tokens":   uint64(2048),
		"message_refs": []any{m1.String()},
		"tools_ref":    tools.String(),
		"tool_choice":  map[string]any{"$tag": "Tool", "$value": map[string]any{"name": "workspace_read"}},
		"api_key": map[string]any{"$tag": "secret", "$value": map[string]any{
			"alias": "llm/api", "version": uint64(1)}},
		"response_format":      nil,
		"instructions":         "Be brief.",
		"previous_response_id": nil,
		"reasoning_effort":     "low",
	}
	b, err := cas.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var p Params
	if err := cas.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	want := Params{
		Provider: "openai-chat", Model: "gpt-5.2", Temperature: ptr("0.2"), MaxTokens: 2048,
		MessageRefs: []cas.Ref{m1}, ToolsRef: &tools,
		ToolChoice:   &ToolChoice{Kind: ToolChoiceTool, Name: "workspace_read"},
		Instructions: ptr("Be brief."), ReasoningEffort: ptr("low"),
	}
	got := p
	got.APIKey = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v; want %+v", got, want)
	}
	if len(p.APIKey) == 0 {
		t.Error("api_key was dropped; it must round-trip opaque")
	}
	again, err := cas.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(b) {
		t.Errorf("params do not round-trip:\n got %x\nwant %x", again, b)
	}
}

func TestReceiptCBORFields(t *testing.T) {
	ref := cas.Sum([]byte("x"))
	r := Receipt{OutputRef: ref, OutputItemsRef: &ref, Attempts: 1, UsageKnown: true, CostKnown: true,
		TokenUsage:   TokenUsage{Input: 1000, Output: 300, CacheRead: 600, CacheWrite: 200, Reasoning: 100},
		CostMicroUSD: 12_345, CostCents: 1, CostSource: CostSource{Kind: CostFromProvider, Field: "usage.cost"}, ProviderName: "openrouter"}
	common := []string{"attempts", "failed_attempts_ref", "finish_reason", "model", "output_items_ref",
		"output_ref", "output_text", "provider_id", "request_ref", "response_ref", "token_usage", "tool_call_refs"}
	for _, tc := range []struct {
		schema  string
		marshal func(Receipt) ([]byte, error)
		keys    []string
		usage   map[string]uint64
	}{
		{"sys/LlmGenerateReceipt@3", Receipt.MarshalCBOR, append([]string{"cost_microusd", "cost_source", "provider_name"}, common...),
			map[string]uint64{"input": 1000, "output": 300, "cache_read": 600, "cache_write": 200, "reasoning": 100}},
		{"sys/LlmGenerateReceipt@2", Receipt.MarshalV2, append([]string{"cost_cents", "cost_microusd"}, common...),
			map[string]uint64{"prompt": 1000, "completion": 300, "cached": 600, "reasoning": 100}},
		{"sys/LlmGenerateReceipt@1", Receipt.MarshalV1, append([]string{"cost_cents", "cost_microusd"}, common...),
			map[string]uint64{"prompt": 1000, "completion": 300, "cached": 600, "reasoning": 100}},
	} {
		t.Run(tc.schema, func(t *testing.T) {
			b, err := tc.marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			v, err := schema.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := schema.Normalize(schema.BuiltinTypes, schema.RefType(tc.schema), v); err != nil {
				t.Errorf("the receipt does not fit %s: %v", tc.schema, err)
			}
			var m map[string]cbor.RawMessage
			if err := cas.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			keys := slices.Sorted(maps.Keys(m))
			slices.Sort(tc.keys)
			if !slices.Equal(keys, tc.keys) {
				t.Errorf("receipt keys %v; want %v", keys, tc.keys)
			}
			if got := hex.EncodeToString(m["tool_call_refs"]); got != "80" {
				t.Errorf("nil tool_call_refs encodes as %s; want 80 (empty list)", got)
			}
			if got := hex.EncodeToString(m["request_ref"]); got != "f6" {
				t.Errorf("nil request_ref encodes as %s; want f6 (null)", got)
			}
			var usage map[string]uint64
			if err := cas.Unmarshal(m["token_usage"], &usage); err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(usage, tc.usage) {
				t.Errorf("token_usage %v; want %v", usage, tc.usage)
			}
			var back Receipt
			if err := cas.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			want := r
			if tc.schema != "sys/LlmGenerateReceipt@3" {
				// Cache writes are counted in the input, not apart; the
				// cost's source and the provider are not said.
				want.TokenUsage.CacheWrite, want.CostSource, want.ProviderName = 0, CostSource{}, ""
			}
			want.ToolCallRefs = []cas.Ref{}
			if !reflect.DeepEqual(back, want) {
				t.Errorf("round trip:\n got %+v\nwant %+v", back, want)
			}
			// What is unknown is null in @2 and @3, and 0 in @1.
			unknown := r
			unknown.UsageKnown, unknown.CostKnown = false, false
			b, err = tc.marshal(unknown)
			if err != nil {
				t.Fatal(err)
			}
			if err := cas.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			null := hex.EncodeToString(m["token_usage"]) == "f6" && hex.EncodeToString(m["cost_microusd"]) == "f6"
			if null == (tc.schema == "sys/LlmGenerateReceipt@1") {
				t.Errorf("an unknown usage and cost encode as %x and %x", m["token_usage"], m["cost_microusd"])
			}
		})
	}
	// A nil message_refs encodes as an empty list too.
	pb, err := cas.Marshal(Params{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	var pm map[string]cbor.RawMessage
	if err := cas.Unmarshal(pb, &pm); err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(pm["message_refs"]); got != "80" {
		t.Errorf("nil message_refs encodes as %s; want 80", got)
	}
}
