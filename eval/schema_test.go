package eval

import (
	"bytes"
	"os"
	"testing"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
)

// TestPublishedSchemas: docs/ publishes the schemas the loader checks
// against, byte for byte.
func TestPublishedSchemas(t *testing.T) {
	for file, embedded := range map[string][]byte{"../docs/eval-case.schema.json": CaseSchema, "../docs/eval-suite.schema.json": SuiteSchema} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, embedded) {
			t.Errorf("%s is not the schema the loader checks against: cp eval/%s.schema.json to it", file, map[string]string{
				"../docs/eval-case.schema.json": "case", "../docs/eval-suite.schema.json": "suite"}[file])
		}
	}
	if _, err := compiled(); err != nil {
		t.Fatal(err)
	}
}

// reportSchema compiles docs/eval-report.schema.json.
func reportSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("../docs/eval-report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("mem:///eval/report.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem:///eval/report.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkReportSchema checks that the report's JSON is valid against the
// published schema.
func checkReportSchema(t testing.TB, r *Report) {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	if err := reportSchema(t).Validate(v); err != nil {
		t.Errorf("the report is not valid against docs/eval-report.schema.json: %v", err)
	}
}
