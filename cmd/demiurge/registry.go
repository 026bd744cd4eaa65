package main

import (
	"github.com/demiurge-dev/demiurge/examples"
	"github.com/demiurge-dev/demiurge/reducer"
)

// newRegistry returns the reducers this binary knows: a defmodule in a
// world's AIR must name one of them. Add a reducer here to make worlds
// that use it load. It knows the reducers of every example world
// (examples.RegisterAll).
func newRegistry() *reducer.Registry {
	r := reducer.NewRegistry()
	examples.RegisterAll(r)
	return r
}
