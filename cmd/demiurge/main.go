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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	ctx, cancel := context.WithCancel(ctx)
	in := &interrupts{cancel: cancel}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	go func() {
		for range sig {
			in.fire()
		}
	}()
	code := executeApp(ctx, newApp(stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}, in), os.Args[1:], os.Getenv)
	stop()
	os.Exit(code)
}
