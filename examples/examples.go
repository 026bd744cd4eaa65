// Package examples gathers the reducers of the example worlds, so that a
// binary can run any of them: our ports of AgentOS's examples, counter
// (00-counter), timer (01-hello-timer), blobecho (02-blob-echo), fetch
// (03-fetch-notify), aggregator (04-aggregator), chaincomp (05-chain-comp)
// and retry (08-retry-backoff), and demiurge, the chat agent (whose reducer
// lives in reducer/demiurge). Each example's directory holds its AIR, in
// our own words and names, its reducer and a README. AgentOS's own AIR is
// not in the repository: examples/wasm holds only modules for it, and the
// tests read it from $DEMIURGE_AGENTOS_AIR.
package examples

import (
	"github.com/demiurge-dev/demiurge/examples/aggregator"
	"github.com/demiurge-dev/demiurge/examples/blobecho"
	"github.com/demiurge-dev/demiurge/examples/chaincomp"
	"github.com/demiurge-dev/demiurge/examples/counter"
	"github.com/demiurge-dev/demiurge/examples/fetch"
	"github.com/demiurge-dev/demiurge/examples/retry"
	"github.com/demiurge-dev/demiurge/examples/timer"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
)

// RegisterAll adds every example's reducer to r. It panics if one of their
// names is already registered: it is for program setup.
func RegisterAll(r *reducer.Registry) {
	counter.Register(r)
	timer.Register(r)
	blobecho.Register(r)
	fetch.Register(r)
	aggregator.Register(r)
	chaincomp.Register(r)
	retry.Register(r)
	demiurge.Register(r)
}
