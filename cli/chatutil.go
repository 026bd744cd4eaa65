package cli

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/demiurge-dev/demiurge/agent"
)

// Exit codes of run -m beyond those of every command (see root.go).
const (
	exitGuardStop  = 3 // a guard stopped the turn
	exitIncomplete = 4 // the answer was cut off
	exitAwaiting   = 5 // calls wait for the user's approval
)

// exitCode is the exit code of run -m for a turn that ended so.
func exitCode(o agent.Outcome) int {
	switch o {
	case agent.OutcomeAnswer:
		return exitOK
	case agent.OutcomeStopped:
		return exitGuardStop
	case agent.OutcomeCut:
		return exitIncomplete
	case agent.OutcomeAwaitingApproval:
		return exitAwaiting
	}
	return exitFailure
}

// clipLine puts s on one line and cuts it to about n bytes.
func clipLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ⏎ ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// argsText is a tool call's arguments JSON as a person reads it: the
// escapes \u003c, \u003e and \u0026 that Go's encoder writes for <, > and &
// (the chat's entries keep the arguments so) are shown as the characters,
// so that "echo hi \u003e a.txt" reads "echo hi > a.txt". The JSON means
// the same; other escapes are left as they are.
func argsText(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == 'u' && i+6 <= len(s) {
			switch strings.ToLower(s[i+2 : i+6]) {
			case "003c":
				b.WriteByte('<')
				i += 5
				continue
			case "003e":
				b.WriteByte('>')
				i += 5
				continue
			case "0026":
				b.WriteByte('&')
				i += 5
				continue
			}
		}
		b.WriteString(s[i : i+2]) // an escape: \\ is not the start of another
		i++
	}
	return b.String()
}

// shellQuote returns s as one word of a POSIX shell command line, quoted
// only where it must be; s as it is if it cannot be quoted.
func shellQuote(s string) string {
	q, err := syntax.Quote(s, syntax.LangPOSIX)
	if err != nil {
		return s
	}
	return q
}
