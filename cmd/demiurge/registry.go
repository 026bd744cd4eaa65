package main

import (
	"github.com/demiurge-dev/demiurge/examples"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/builtin"
)

// newRegistry returns the reducers this binary knows: a defmodule in a
// world's AIR must name one of them. Add a reducer here to make worlds
// that use it load. It knows the reducers of every example world
// (examples.RegisterAll) and the built-in ones (reducer/builtin).
func newRegistry() *reducer.Registry {
	r := reducer.NewRegistry()
	examples.RegisterAll(r)
	builtin.Register(r)
	return r
}
