// Command demiurge-sh runs a bash script in demiurge's sandbox, as
// `demiurge sh` does without --manifest (the shell, its utilities and an
// empty in-memory workspace), in a program of its own that starts in
// about 3× the time of `bash -c true` where demiurge, which links the
// model SDKs, serve and the metrics, takes ~7×. With --manifest it runs
// `demiurge sh` in its place. Run "demiurge-sh --help" for the flags and
// the exit codes.
//
// The command line is package cli/shcmd, which `demiurge sh` shares.
//
// The runtime does not read the cgroup's CPU limit to set GOMAXPROCS,
// nor watch it: that read is ~3% of a start (perf), and a script is
// short and mostly one goroutine.
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import "github.com/demiurge-dev/demiurge/cli/shcmd"

func main() { shcmd.Main() }
