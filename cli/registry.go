package cli

import (
	"github.com/demiurge-dev/demiurge/examples"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/builtin"
)

// registry returns the reducers the command line knows: a defmodule in a
// world's AIR must name one of them. It knows the reducers of every
// example world (examples.RegisterAll), the built-in ones
// (reducer/builtin), and those a program extending it adds
// (WithReducers).
func (a *app) registry() *reducer.Registry {
	r := reducer.NewRegistry()
	examples.RegisterAll(r)
	builtin.Register(r)
	if a.ext != nil {
		for _, register := range a.ext.reducers {
			register(r)
		}
	}
	return r
}
