package tools

import "github.com/demiurge-dev/demiurge/schema"

// ResponseSchema names the value a tool call's receipt carries.
const ResponseSchema = "sys/ToolResponse@1"

// Value returns the response, and what rec saw of the call (the workspace
// commits it made and the tools it called), as a sys/ToolResponse@1 value:
// the receipt of a tool call's effect. rec may be nil: no commits and no
// calls.
func (r Response) Value(rec *Recorder) schema.Value {
	var errv schema.Value
	if r.Error != "" {
		errv = r.Error
	}
	commits := []schema.Value{}
	for _, c := range rec.Commits() {
		commits = append(commits, schema.Record("workspace", c.Workspace, "expected_head", c.ExpectedHead,
			"meta", schema.Record("root_hash", c.Root.String(), "owner", c.Owner, "created_at", uint64(0))))
	}
	calls := []schema.Value{}
	for _, c := range rec.Calls() {
		var ce schema.Value
		if c.Error != "" {
			ce = c.Error
		}
		d := c.Duration.Nanoseconds()
		if d < 0 {
			d = 0
		}
		calls = append(calls, schema.Record("seq", c.Seq, "tool", c.Tool, "arguments_json", c.Arguments,
			"exit_code", schema.Int(int64(c.ExitCode)), "error", ce, "duration_ns", uint64(d)))
	}
	return schema.Record("stdout", r.Stdout, "stderr", r.Stderr, "exit_code", schema.Int(int64(r.ExitCode)),
		"error", errv, "stdout_truncated", r.StdoutTruncated, "stderr_truncated", r.StderrTruncated,
		"commits", commits, "calls", calls)
}
