// Package manpage lays out the man-page style help text that every tool
// family of demiurge returns from tools.Tool.Help, so that they share one
// header and one section layout.
package manpage

import (
	"fmt"
	"strings"
)

// Indent is the indentation of a section's lines.
const Indent = "       "

// Header writes the title line of a page, "NAME(1)  <manual>  NAME(1)"
// with name in upper case and manual centred in 78 columns, and the blank
// line after it.
func Header(b *strings.Builder, name, manual string) {
	title := strings.ToUpper(name) + "(1)"
	pad := max(1, 78-2*len(title)-len(manual))
	fmt.Fprintf(b, "%s%*s%s%*s%s\n\n", title, pad/2, "", manual, pad-pad/2, "", title)
}

// Section writes a section: its name, each line indented by Indent (an
// empty line too), and a blank line. Lines are written as they are, not
// wrapped.
func Section(b *strings.Builder, name string, lines ...string) {
	b.WriteString(name + "\n")
	for _, l := range lines {
		b.WriteString(Indent + l + "\n")
	}
	b.WriteString("\n")
}
