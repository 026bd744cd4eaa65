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
// (WithReducers). Defmodules that none of them serves run their WASM
// modules (reducer/wasm).
func (a *app) registry() *reducer.Registry {
	r := reducer.NewRegistry()
	examples.RegisterAll(r)
	builtin.Register(r)
	if a.ext != nil {
		for _, register := range a.ext.reducers {
			register(r)
		}
	}
	a.runWASM(r)
	return r
}

// runWASM makes r run the WASM modules of defmodules that no Go reducer
// serves, and load AIR with the command line's limits for them. A host
// that cannot be made is logged; the modules then fail to load, saying the
// binary runs none.
func (a *app) runWASM(r *reducer.Registry) {
	h, err := a.wasmHost()
	if err != nil {
		a.log.Error("no WASM host", "error", err)
		return
	}
	r.SetModules(h)
	all, byModule, _ := a.wasmLimits.limits() // checked before the command runs
	r.SetLimits(all, byModule)
}
