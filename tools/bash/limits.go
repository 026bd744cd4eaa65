package bash

import (
	"fmt"
	"time"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// Limits bound one execution of a script. Every limit applies to each
// run separately; counters start at zero. A value ≤ 0 means the
// default of DefaultLimits.
type Limits struct {
	// MaxScriptBytes bounds the script's size (checked before parsing).
	MaxScriptBytes int
	// MaxASTDepth bounds how deeply the script's syntax nests.
	MaxASTDepth int
	// Timeout bounds the wall time of a whole execution, callbacks
	// included; a request's timeout_ms can lower it, never raise it.
	Timeout time.Duration
	// MaxCommands bounds the commands run (every simple command written
	// in the script counts: builtins, functions, tools, utilities).
	MaxCommands int64
	// MaxLoopIterations bounds the iterations of one loop, counted from
	// the time the loop starts.
	MaxLoopIterations int64
	// MaxTotalLoopIterations bounds the iterations of all loops together.
	MaxTotalLoopIterations int64
	// MaxFunctionDepth bounds nested shell function calls.
	MaxFunctionDepth int64
	// MaxPipelineStages bounds the pipes open at the same time: `a | b | c`
	// holds two (each is a goroutine and an OS pipe).
	MaxPipelineStages int64
	// MaxToolCalls bounds the tool callbacks invoked.
	MaxToolCalls int64
	// MaxStdoutBytes and MaxStderrBytes bound the output kept, cut on a
	// UTF-8 boundary as it is written; the rest is counted
	// (Result.StdoutBytes, StderrBytes), not kept, and the Response's
	// StdoutTruncated/StderrTruncated set. The exit status is unchanged.
	MaxStdoutBytes int
	MaxStderrBytes int
	// MaxVarBytes bounds the total size of the shell's variables.
	MaxVarBytes int64
	// MaxMemoryBytes is the script's memory budget: the bytes its
	// variables, expansions and utility buffers may hold at once.
	MaxMemoryBytes int64
	// MaxToolStdinBytes bounds the piped input a tool receives and
	// MaxToolOutputBytes the output a callback may return.
	MaxToolStdinBytes  int
	MaxToolOutputBytes int
	// MaxCommandInputBytes bounds what one utility (sort, jq, ...) reads
	// from its standard input, and MaxCommandOutputBytes what it writes.
	MaxCommandInputBytes  int64
	MaxCommandOutputBytes int64
	// MaxFlagBytes bounds the parsed flag data of one tool call, and
	// MaxArrayItems the items of one array flag.
	MaxFlagBytes  int
	MaxArrayItems int
	// MaxTraceCalls bounds the entries kept in an execution's trace; later
	// calls are counted in Result.TraceDropped.
	MaxTraceCalls int
	// MaxFileBytes bounds one file's size, MaxWriteBytes the bytes a
	// script writes to files in all, and MaxFiles the files and
	// directories it creates (in the in-memory file system Run makes when
	// RunOptions.FS is nil; a caller's FS carries its own).
	MaxFileBytes  int64
	MaxWriteBytes int64
	MaxFiles      int64
}

// DefaultLimits returns the limits used when none are configured.
func DefaultLimits() Limits {
	return Limits{
		MaxScriptBytes:         64 * 1024,
		MaxASTDepth:            100,
		Timeout:                30 * time.Second,
		MaxCommands:            10_000,
		MaxLoopIterations:      10_000,
		MaxTotalLoopIterations: 1_000_000,
		MaxFunctionDepth:       100,
		MaxPipelineStages:      128,
		MaxToolCalls:           1_000,
		MaxStdoutBytes:         1 << 20,
		MaxStderrBytes:         1 << 20,
		MaxVarBytes:            16 << 20,
		MaxMemoryBytes:         256 << 20,
		MaxToolStdinBytes:      1 << 20,
		MaxToolOutputBytes:     8 << 20,
		MaxCommandInputBytes:   16 << 20,
		MaxCommandOutputBytes:  16 << 20,
		MaxFlagBytes:           64 * 1024,
		MaxArrayItems:          4096,
		MaxTraceCalls:          1024,
		MaxFileBytes:           vfs.DefaultLimits().MaxFileBytes,
		MaxWriteBytes:          vfs.DefaultLimits().MaxWriteBytes,
		MaxFiles:               vfs.DefaultLimits().MaxFiles,
	}
}

// withDefaults fills every unset (≤ 0) limit from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set64 := func(v *int64, def int64) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.MaxScriptBytes, d.MaxScriptBytes)
	set(&l.MaxASTDepth, d.MaxASTDepth)
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
	}
	set64(&l.MaxCommands, d.MaxCommands)
	set64(&l.MaxLoopIterations, d.MaxLoopIterations)
	set64(&l.MaxTotalLoopIterations, d.MaxTotalLoopIterations)
	set64(&l.MaxFunctionDepth, d.MaxFunctionDepth)
	set64(&l.MaxPipelineStages, d.MaxPipelineStages)
	set64(&l.MaxToolCalls, d.MaxToolCalls)
	set(&l.MaxStdoutBytes, d.MaxStdoutBytes)
	set(&l.MaxStderrBytes, d.MaxStderrBytes)
	set64(&l.MaxVarBytes, d.MaxVarBytes)
	set64(&l.MaxMemoryBytes, d.MaxMemoryBytes)
	set(&l.MaxToolStdinBytes, d.MaxToolStdinBytes)
	set(&l.MaxToolOutputBytes, d.MaxToolOutputBytes)
	set64(&l.MaxCommandInputBytes, d.MaxCommandInputBytes)
	set64(&l.MaxCommandOutputBytes, d.MaxCommandOutputBytes)
	set(&l.MaxFlagBytes, d.MaxFlagBytes)
	set(&l.MaxArrayItems, d.MaxArrayItems)
	set(&l.MaxTraceCalls, d.MaxTraceCalls)
	set64(&l.MaxFileBytes, d.MaxFileBytes)
	set64(&l.MaxWriteBytes, d.MaxWriteBytes)
	set64(&l.MaxFiles, d.MaxFiles)
	return l
}

// WithTimeout returns l with Timeout set to d.
func (l Limits) WithTimeout(d time.Duration) Limits { l.Timeout = d; return l }

// WithMaxCommands returns l with MaxCommands set to n.
func (l Limits) WithMaxCommands(n int64) Limits { l.MaxCommands = n; return l }

// WithMaxLoopIterations returns l with MaxLoopIterations set to n.
func (l Limits) WithMaxLoopIterations(n int64) Limits { l.MaxLoopIterations = n; return l }

// WithMaxTotalLoopIterations returns l with MaxTotalLoopIterations set to n.
func (l Limits) WithMaxTotalLoopIterations(n int64) Limits { l.MaxTotalLoopIterations = n; return l }

// WithMaxFunctionDepth returns l with MaxFunctionDepth set to n.
func (l Limits) WithMaxFunctionDepth(n int64) Limits { l.MaxFunctionDepth = n; return l }

// WithMaxPipelineStages returns l with MaxPipelineStages set to n.
func (l Limits) WithMaxPipelineStages(n int64) Limits { l.MaxPipelineStages = n; return l }

// WithMaxToolCalls returns l with MaxToolCalls set to n.
func (l Limits) WithMaxToolCalls(n int64) Limits { l.MaxToolCalls = n; return l }

// WithMaxOutputBytes returns l with MaxStdoutBytes and MaxStderrBytes set
// to n.
func (l Limits) WithMaxOutputBytes(n int) Limits {
	l.MaxStdoutBytes, l.MaxStderrBytes = n, n
	return l
}

// WithMaxVarBytes returns l with MaxVarBytes set to n.
func (l Limits) WithMaxVarBytes(n int64) Limits { l.MaxVarBytes = n; return l }

// WithMaxScriptBytes returns l with MaxScriptBytes set to n.
func (l Limits) WithMaxScriptBytes(n int) Limits { l.MaxScriptBytes = n; return l }

// String summarizes the main limits for help texts.
func (l Limits) String() string {
	l = l.withDefaults()
	return fmt.Sprintf("%d commands, %d iterations per loop (%d in total), function depth %d, %d tool calls, %d bytes of output, %s",
		l.MaxCommands, l.MaxLoopIterations, l.MaxTotalLoopIterations, l.MaxFunctionDepth,
		l.MaxToolCalls, l.MaxStdoutBytes, l.Timeout)
}

// limitError is a violated resource limit; it aborts the script.
type limitError struct{ msg string }

func (e *limitError) Error() string { return "resource limit exceeded: " + e.msg }
