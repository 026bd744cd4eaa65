package arm

import (
	"testing"

	"github.com/demiurge-dev/demiurge/schema"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		event   schema.Value
		tag     string
		payload string
		ok      bool
	}{
		{"arm with a payload", schema.Variant("Start", schema.Record("url", "u")), "Start", `{"url":"u"}`, true},
		{"payload of another type", schema.Variant("Tick", uint64(3)), "Tick", "3", true},
		{"unit arm", schema.Variant("Stop", nil), "", "", false},
		{"record, no variant", schema.Record("url", "u"), "", "", false},
		{"tag is no text", schema.Record("$tag", uint64(1), "$value", "x"), "", "", false},
		{"text", "Start", "", "", false},
		{"nil", nil, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tag, payload, ok := Split(tc.event)
			got := ""
			if payload != nil {
				got = string(schema.ValueJSON(payload))
			}
			if tag != tc.tag || got != tc.payload || ok != tc.ok {
				t.Errorf("Split(%s) = %q, %s, %v; want %q, %s, %v", schema.String(tc.event), tag, got, ok, tc.tag, tc.payload, tc.ok)
			}
		})
	}
}
