package tools

import (
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
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
func SchemaErrorText(err error) string {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return err.Error()
	}
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
