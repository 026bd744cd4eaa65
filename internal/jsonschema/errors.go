package jsonschema

import (
	"strings"

	"github.com/demiurge-dev/demiurge/internal/jsonschema/internal/msg"
	"github.com/demiurge-dev/demiurge/internal/jsonschema/kind"
)

// An ErrorKind says what failed: one of the types of package kind.
type ErrorKind interface {
	// KeywordPath is the keyword that failed (with a property, for
	// dependencies), or nil.
	KeywordPath() []string
	// Message says what failed, for a person or a model.
	Message() string
}

// A ValidationError is a value that failed a schema: a tree whose leaves
// are the problems found, each at its place in the value. The causes of a
// node are in an order the schema and the value fix (objects' properties
// sorted by name).
type ValidationError struct {
	// SchemaURL is the schema that failed, with a pointer as its fragment.
	SchemaURL string
	// InstanceLocation is the place in the value, as JSON pointer tokens.
	InstanceLocation []string
	// ErrorKind says what failed.
	ErrorKind ErrorKind
	// Causes are the errors under this one.
	Causes []*ValidationError
}

// Error writes the tree, one line a node, as santhosh-tekuri/jsonschema
// does: the root's "jsonschema validation failed with '<url>'", then
// "- at '<pointer>': <message>", indented by depth; a reference with one
// cause shows only the cause.
func (e *ValidationError) Error() string {
	var b strings.Builder
	e.write(&b, 0)
	return b.String()
}

func (e *ValidationError) write(b *strings.Builder, indent int) {
	if _, isRef := e.ErrorKind.(*kind.Reference); !isRef || len(e.Causes) != 1 {
		if indent > 0 {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat("  ", indent-1))
			b.WriteString("- ")
		}
		indent++
		if _, ok := e.ErrorKind.(*kind.Schema); ok {
			b.WriteString(e.ErrorKind.Message())
		} else {
			b.WriteString(msg.Sprintf("at %s", msg.Quote(instancePointer(e.InstanceLocation))))
			b.WriteString(": ")
			b.WriteString(e.ErrorKind.Message())
		}
	}
	for _, c := range e.Causes {
		c.write(b, indent)
	}
}
