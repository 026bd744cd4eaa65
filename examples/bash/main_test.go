package main

import (
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"## Available tool commands\n\n- `get_user`: Fetch user by ID\n  Usage: `get_user --id <integer>`\n",
		"- `create_discount`: Create a discount code for a user\n  Usage: `create_discount --percent <integer> --user_id <integer>`\n",
		`{"id":1,"name":"Alice","email":"alice@example.com","tier":"gold"}`,
		"Bob <bob@example.com>\n",
		"Alice spent 1029.98\n",
		"laptop: 4 in stock\nmouse: SOLD OUT\nkeyboard: 12 in stock\n",
		"Alice\nuser 9: lookup failed\nCarol\nfallback: unknown item\n[stderr] get_user: user 9 not found\nget_inventory: callback failed\n",
		"SAVE10-U1-1 for user 1 (spent 1029.98)\nSAVE10-U3-2 for user 3 (spent 258.99)\n[exit 0, 8 tool calls]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(got, "no SKU") {
		t.Error("a callback's internal error reached the script")
	}
	if t.Failed() {
		t.Logf("output:\n%s", got)
	}
}
