package main

import (
	"strings"

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
