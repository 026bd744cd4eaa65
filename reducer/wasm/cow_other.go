//go:build !linux

package wasm

import "github.com/tetratelabs/wazero/experimental"

// cowMemory is Linux's only: elsewhere an instance resets by copying its
// image back.
type cowMemory struct{}

func newCowAllocator() (experimental.MemoryAllocator, func() *cowMemory) { return nil, nil }

func (c *cowMemory) freeze([]byte) error { return errNoCow }
func (c *cowMemory) reset() bool         { return false }

var errNoCow = errorString("copy-on-write memory is Linux's only")

type errorString string

func (e errorString) Error() string { return string(e) }
