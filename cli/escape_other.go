//go:build !linux

package cli

import "os"

// escWatch would stop a turn on Esc; here the terminal's input cannot be
// read without blocking (see interruptibleInput), so nothing watches and
// Ctrl-C stops a turn.
type escWatch struct{}

func startEsc(*os.File, func()) *escWatch { return nil }

func (w *escWatch) stop() string { return "" }
