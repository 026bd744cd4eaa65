package jsonschema_test

import (
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	santhosh "github.com/santhosh-tekuri/jsonschema/v6"
)

// benchSchema is a workspace tool's input schema, as models get it.
const benchSchema = `{"additionalProperties":false,"properties":{"cursor":{"description":"Where the previous page ended.","type":"string"},"path":{"description":"The directory to list.","type":"string"},"recursive":{"type":"boolean"},"version":{"minimum":0,"type":"integer"},"workspace":{"pattern":"^[A-Za-z0-9._~-]{1,255}$","type":"string"}},"type":"object"}`

const benchArgs = `{"path":"src","recursive":true,"version":"3","extra":1}`

// BenchmarkCompile compiles a tool schema (with its meta-schema check),
// ours beside santhosh's, as the chat reducer does once per tool list.
func BenchmarkCompile(b *testing.B) {
	doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(benchSchema))
	b.Run("ours", func(b *testing.B) {
		for b.Loop() {
			c := jsonschema.NewCompiler()
			_ = c.AddResource(testURL, doc)
			if _, err := c.Compile(testURL); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("santhosh", func(b *testing.B) {
		for b.Loop() {
			c := santhosh.NewCompiler()
			_ = c.AddResource(testURL, doc)
			if _, err := c.Compile(testURL); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkValidate validates a call's arguments that fail twice.
func BenchmarkValidate(b *testing.B) {
	doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(benchSchema))
	args, _ := jsonschema.UnmarshalJSON(strings.NewReader(benchArgs))
	b.Run("ours", func(b *testing.B) {
		c := jsonschema.NewCompiler()
		_ = c.AddResource(testURL, doc)
		s, _ := c.Compile(testURL)
		for b.Loop() {
			if s.Validate(args) == nil {
				b.Fatal("valid")
			}
		}
	})
	b.Run("santhosh", func(b *testing.B) {
		c := santhosh.NewCompiler()
		_ = c.AddResource(testURL, doc)
		s, _ := c.Compile(testURL)
		for b.Loop() {
			if s.Validate(args) == nil {
				b.Fatal("valid")
			}
		}
	})
}
