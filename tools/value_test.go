package tools_test

import (
	"testing"

	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools"
)

// TestResponseValue: a response without a recorder has empty lists, and
// an error category only when there is one; a recorder's commits and calls
// are listed.
func TestResponseValue(t *testing.T) {
	rec := &tools.Recorder{}
	rec.AddCall(tools.SubCall{Seq: 1, Tool: "ls", Arguments: `{}`, ExitCode: 2, Error: "not_found"})
	for _, tc := range []struct {
		resp tools.Response
		rec  *tools.Recorder
		want string
	}{
		{tools.Response{}, nil, `{"calls":[],"error":null,"stderr":"","stdout":"","commits":[],"exit_code":0,"stderr_truncated":false,"stdout_truncated":false}`},
		{tools.Response{Stdout: "o", Stderr: "e", ExitCode: -1, Error: "cancelled", StdoutTruncated: true}, nil,
			`{"calls":[],"error":"cancelled","stderr":"e","stdout":"o","commits":[],"exit_code":-1,"stderr_truncated":false,"stdout_truncated":true}`},
		{tools.Response{}, rec,
			`{"calls":[{"seq":1,"tool":"ls","error":"not_found","exit_code":2,"duration_ns":0,"arguments_json":"{}"}],"error":null,"stderr":"","stdout":"","commits":[],"exit_code":0,"stderr_truncated":false,"stdout_truncated":false}`},
	} {
		v := tc.resp.Value(tc.rec)
		n, err := schema.Normalize(schema.BuiltinTypes, schema.RefType(tools.ResponseSchema), v)
		if err != nil {
			t.Fatalf("%s does not fit %s: %v", schema.String(v), tools.ResponseSchema, err)
		}
		if got := schema.String(n); got != tc.want {
			t.Errorf("%+v.Value\n= %s\nwant %s", tc.resp, got, tc.want)
		}
	}
}
