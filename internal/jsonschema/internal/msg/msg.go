// Package msg formats the messages of JSON Schema errors. It prints with
// golang.org/x/text/message's English printer, which writes numbers as
// English does ("1,234", "1×10²¹"), because the messages must be the same
// bytes as santhosh-tekuri/jsonschema's, which prints with it: the chat
// reducer journals them. The printer is made on first use, not at init.
package msg

import (
	"fmt"
	"strings"
	"sync"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var printer = sync.OnceValue(func() *message.Printer { return message.NewPrinter(language.English) })

// Sprintf formats as fmt.Sprintf does, but numbers as English writes them.
func Sprintf(format string, args ...any) string {
	return printer().Sprintf(format, args...)
}

// Quote returns s in single quotes, escaped as Go escapes a string, with
// double quotes left bare and single quotes escaped: 'a "b" \'c\”.
func Quote(s string) string {
	s = fmt.Sprintf("%q", s)
	s = strings.ReplaceAll(s, `\"`, `"`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s[1:len(s)-1] + "'"
}
