// Command demiurge runs, checks and inspects demiurge worlds and their
// store. Run "demiurge help" for the commands and the exit codes.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}, os.Getenv)
	stop()
	os.Exit(code)
}
