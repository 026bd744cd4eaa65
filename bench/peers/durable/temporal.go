package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Noop is the activity: the trivial adapter of demiurge's benchmark.
func Noop(ctx context.Context, n, i int) (noopReceipt, error) {
	return noopReceipt{OK: true}, nil
}

// Bench5 is the workflow: five activities, each awaited before the next.
func Bench5(ctx workflow.Context, n int) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second})
	for i := range 5 {
		var r noopReceipt
		if err := workflow.ExecuteActivity(ctx, Noop, n, i).Get(ctx, &r); err != nil {
			return 0, err
		}
		if !r.OK {
			return 0, fmt.Errorf("noop %d failed", i)
		}
	}
	return n, nil
}

func mainTemporal(args []string) error {
	fs := flag.NewFlagSet("temporal", flag.ExitOnError)
	var cfg config
	cfg.flags(fs)
	hostport := fs.String("hostport", "127.0.0.1:17233", "the Temporal server's frontend")
	dbFile := fs.String("db", "", "the dev server's SQLite file, for bytes on disk per workflow")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx := context.Background()
	logger := tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	var c client.Client
	var err error
	for deadline := time.Now().Add(60 * time.Second); ; {
		c, err = client.Dial(client.Options{HostPort: *hostport, Namespace: "default", Logger: logger})
		if err == nil {
			_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
		}
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("dial %s: %w", *hostport, err)
	}
	defer c.Close()
	w := worker.New(c, "bench5", worker.Options{})
	w.RegisterWorkflow(Bench5)
	w.RegisterActivity(Noop)
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()

	prefix := fmt.Sprintf("bench5-%d", time.Now().UnixNano())
	run := func(ctx context.Context, world, n int) error {
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("%s-w%d-%d", prefix, world, n), TaskQueue: "bench5"}, Bench5, n)
		if err != nil {
			return err
		}
		var out int
		if err := r.Get(ctx, &out); err != nil {
			return err
		}
		if out != n {
			return fmt.Errorf("workflow %d in world %d returned %d", n, world, out)
		}
		return nil
	}
	var disk func() int64
	if *dbFile != "" {
		disk = func() int64 {
			var n int64
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if fi, err := os.Stat(*dbFile + suffix); err == nil {
					n += fi.Size()
				}
			}
			return n
		}
	}
	return measure(ctx, "Temporal", cfg, run, disk)
}
