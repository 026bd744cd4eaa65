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
	ctx, cancel := context.WithCancelCause(context.Background())
	in := &interrupts{cancel: func() { cancel(nil) }}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range sig {
			if s == syscall.SIGTERM {
				cancel(errTerminated) // not routed: it ends the command
				continue
			}
			in.fire()
		}
	}()
	code := executeApp(ctx, newApp(stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}, in), os.Args[1:], os.Getenv)
	os.Exit(code)
}
