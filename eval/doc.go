// Package eval tests an agent like code: a suite is a directory of cases
// (YAML or JSON, one file each, checked against a published JSON Schema),
// each a few user turns and the checks their turns must pass; Run runs
// every case in a fresh world of one store, in parallel with a bound, and
// reports each check, the rounds, tokens, cost and latency; a run's model
// answers can be recorded as cassettes and replayed offline, so CI checks
// a change to tools or manifest without calling a model; Compare says
// what changed between two runs, the regressions first.
//
// `demiurge eval` is a thin command over it; docs/evals.md is the guide.
package eval
