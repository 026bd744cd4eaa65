package cli

import (
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// validate checks the values of run's flags before anything is opened: a
// value that cannot mean anything is a usage error (exit 2), not a failure
// found later, nor a value silently replaced by a default.
func (f *runFlags) validate(cmd *cobra.Command) error {
	fl := cmd.Flags()
	f.worldChosen = fl.Changed("world")
	if fl.Changed("message") && strings.TrimSpace(f.message) == "" {
		return usagef("run: -m is empty: give the message to send, or leave -m out to chat")
	}
	if f.temperature != "" {
		t, err := strconv.ParseFloat(f.temperature, 64)
		if err != nil || math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
			return usagef("--temperature %q: want a number of 0 or more, such as 0.2", f.temperature)
		}
	}
	for _, n := range []struct {
		flag string
		v    uint64
	}{
		{"max-tokens", f.maxTokens}, {"max-rounds", f.maxRounds}, {"max-repeats", f.maxRepeats}, {"output-limit", f.outputLimit},
	} {
		if n.v == 0 {
			return usagef("--%s 0: it must be at least 1 (leave it out for the default, %s)", n.flag, fl.Lookup(n.flag).DefValue)
		}
	}
	if f.wait <= 0 {
		return usagef("--wait %s: it must be positive", f.wait)
	}
	return nil
}
