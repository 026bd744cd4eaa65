package bash

import (
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// parsers keeps bash parsers for reuse: a new syntax.Parser allocates
// a few kilobytes of buffers, as much as the rest of running `echo hi`.
var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// parse parses src as a bash script named name.
func parse(src, name string) (*syntax.File, error) {
	p := parsers.Get().(*syntax.Parser)
	defer parsers.Put(p)
	return p.Parse(strings.NewReader(src), name)
}
