package tools

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/internal/jsonschema/kind"
)

// maxSchemaProblems bounds the problems SchemaErrorText lists.
const maxSchemaProblems = 8

// SchemaErrorText renders an error of a JSON Schema validation
// (internal/jsonschema, in santhosh-tekuri/jsonschema's words) for a model or a user: each leaf problem as
// "at /path: message", sorted, so the text is the same on every run; past
// eight problems, how many more there are. Any other error is its Error().
// The chat reducer journals this text, so it must not depend on map order
// (see SortSchemaError).
func SchemaErrorText(err error) string {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return err.Error()
	}
	SortSchemaError(ve)
	var msgs []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			msgs = append(msgs, fmt.Sprintf("at /%s: %s", strings.Join(e.InstanceLocation, "/"), e.ErrorKind.Message()))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(msgs)
	if len(msgs) > maxSchemaProblems {
		msgs = append(msgs[:maxSchemaProblems], fmt.Sprintf("and %d more", len(msgs)-maxSchemaProblems))
	}
	return strings.Join(msgs, "; ")
}

// SortSchemaError sorts, in place, the properties an additionalProperties
// error names. internal/jsonschema lists them sorted already (santhosh,
// before it, listed them in map order: "additional properties 'y', 'x'
// not allowed" one run, "'x', 'y'" the next); this stays so that an error
// from any source renders the same.
func SortSchemaError(e *jsonschema.ValidationError) {
	if k, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
		slices.Sort(k.Properties)
	}
	for _, c := range e.Causes {
		SortSchemaError(c)
	}
}
