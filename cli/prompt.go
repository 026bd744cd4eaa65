package cli

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/peterh/liner"
)

// The line editor (liner) reads os.Stdin as it was when it was made, and
// its Prompt cannot be told to stop: a prompt that waits for a line waits
// until the user types one. A prompt that must give up (a decision came
// from another process while the approval question waits) needs its
// input to be interruptible. On Linux the terminal of stdin is opened
// again (/proc/self/fd/0): a file description of its own, which Go polls,
// so that a read deadline ends a read at once; the editor reads that one.
// The terminal itself is shared (its modes, the raw mode the editor sets),
// and stdin's own file description is left blocking, as the shell that
// started demiurge expects it.

// interruptibleInput opens again the terminal that in is, for the line
// editor to read: nil if it cannot be (not Linux, not a terminal, no
// /proc, no deadlines on it).
func interruptibleInput(in any) *os.File {
	f, ok := in.(*os.File)
	if !ok || runtime.GOOS != "linux" || f.Fd() != uintptr(os.Stdin.Fd()) {
		return nil
	}
	tty, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), os.O_RDONLY, 0)
	if err != nil {
		return nil
	}
	if err := tty.SetReadDeadline(time.Time{}); err != nil {
		tty.Close()
		return nil
	}
	return tty
}

// stdinMu serializes the swaps of os.Stdin newEditor makes.
var stdinMu sync.Mutex

// newEditor makes the line editor, reading input if it is not nil (see
// interruptibleInput), else stdin.
func newEditor(input *os.File) *liner.State {
	if input == nil {
		return liner.NewLiner()
	}
	stdinMu.Lock()
	defer stdinMu.Unlock()
	stdin := os.Stdin
	os.Stdin = input // liner reads os.Stdin as NewLiner finds it
	defer func() { os.Stdin = stdin }()
	return liner.NewLiner()
}

// errPromptStopped is the error of a prompt stopped from this side.
var errPromptStopped = errors.New("the prompt was stopped")

// promptUntil shows prompt (with typed already in the line) and returns
// the line typed, unless stop is
// closed or ctx is done first: then, if the editor reads an interruptible
// input, the prompt is ended and the error is errPromptStopped (or
// ctx.Err()). Without one, it waits for the line whatever happens.
func promptUntil(ctx context.Context, ln *liner.State, input *os.File, prompt, typed string, stop <-chan struct{}) (string, error) {
	type result struct {
		s   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		var s string
		var err error
		if typed != "" { // typed during the turn: in the line, to finish
			s, err = ln.PromptWithSuggestion(prompt, typed, -1)
		} else {
			s, err = ln.Prompt(prompt)
		}
		done <- result{s, err}
	}()
	if input == nil {
		res := <-done
		return res.s, res.err
	}
	var why error
	select {
	case res := <-done:
		return res.s, res.err
	case <-stop:
		why = errPromptStopped
	case <-ctx.Done():
		why = ctx.Err()
	}
	_ = input.SetReadDeadline(time.Now()) // the editor's read ends with os.ErrDeadlineExceeded
	<-done                                // what was typed meanwhile, if anything, is not taken: stop decided first
	_ = input.SetReadDeadline(time.Time{})
	return "", why
}
