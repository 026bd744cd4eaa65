package tools

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var englishPrinter = message.NewPrinter(language.English)

// maxSchemaProblems bounds the problems SchemaErrorText lists.
const maxSchemaProblems = 8

// SchemaErrorText renders an error of a JSON Schema validation
// (santhosh-tekuri/jsonschema) for a model or a user: each leaf problem as
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
			msgs = append(msgs, fmt.Sprintf("at /%s: %s", strings.Join(e.InstanceLocation, "/"), e.ErrorKind.LocalizedString(englishPrinter)))
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

// SortSchemaError sorts, in place, the lists of an error of a JSON Schema
// validation that the validator makes in map order: the properties an
// additionalProperties error names are those of the instance, a Go map, in
// the order the map gives them ("additional properties 'y', 'x' not
// allowed" one run, "'x', 'y'" the next). Every other kind of error is
// built in an order that the schema or the instance fixes.
func SortSchemaError(e *jsonschema.ValidationError) {
	if k, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
		slices.Sort(k.Properties)
	}
	for _, c := range e.Causes {
		SortSchemaError(c)
	}
}
