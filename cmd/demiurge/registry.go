package main

import (
	"github.com/demiurge-dev/demiurge/examples/counter"
	"github.com/demiurge-dev/demiurge/reducer"
)

// newRegistry returns the reducers this binary knows: a defmodule in a
// world's AIR must name one of them. Add a reducer here to make worlds
// that use it load.
func newRegistry() *reducer.Registry {
	r := reducer.NewRegistry()
	counter.Register(r)
	return r
}
