// Command demiurge runs, checks and inspects demiurge worlds and their
// store. Run "demiurge help" for the commands and the exit codes.
//
// The command line itself is package cli: a program that adds Go tools
// or reducers of its own builds its own demiurge with cli.Main.
package main

import "github.com/demiurge-dev/demiurge/cli"

func main() { cli.Main() }
