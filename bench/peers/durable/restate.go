package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	restate "github.com/restatedev/sdk-go"
	"github.com/restatedev/sdk-go/server"
)

// noopReceipt is bench/NoopReceipt@1.
type noopReceipt struct {
	OK bool `json:"ok"`
}

// bench5 is the workflow: five durable steps (restate.Run, each journaled
// and acknowledged by the server before the next starts), one after the
// other, in a virtual object keyed by world, so a world runs one workflow
// at a time, as a demiurge world applies one input at a time.
func bench5(ctx restate.ObjectContext, n int) (int, error) {
	for i := range 5 {
		r, err := restate.Run(ctx, func(restate.RunContext) (noopReceipt, error) {
			return noopReceipt{OK: true}, nil
		}, restate.WithName(fmt.Sprintf("noop-%d", i)))
		if err != nil {
			return 0, err
		}
		if !r.OK {
			return 0, errors.New("noop failed")
		}
	}
	return n, nil
}

func mainRestate(args []string) error {
	fs := flag.NewFlagSet("restate", flag.ExitOnError)
	var cfg config
	cfg.flags(fs)
	ingress := fs.String("ingress", "http://127.0.0.1:18080", "the Restate server's ingress")
	admin := fs.String("admin", "http://127.0.0.1:19070", "the Restate server's admin API")
	serve := fs.String("serve", "127.0.0.1:19080", "where this process serves the workflow for the server to call")
	dataDir := fs.String("data", "", "the server's data directory, for bytes on disk per workflow")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	srv := server.NewRestate().WithLogger(slog.NewTextHandler(io.Discard, nil), true).
		Bind(restate.NewObject("Bench5").Handler("Run", restate.NewObjectHandler(bench5)))
	errc := make(chan error, 1)
	go func() { errc <- srv.Start(ctx, *serve) }()
	if err := waitTCP(*serve, 10*time.Second); err != nil {
		return err
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	default:
	}
	if err := register(*admin, "http://"+*serve); err != nil {
		return err
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
	run := func(ctx context.Context, world, n int) error {
		url := fmt.Sprintf("%s/Bench5/w%d/Run", *ingress, world)
		req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(fmt.Appendf(nil, "%d", n)))
		if err != nil {
			return err
		}
		req.Header.Set("content-type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 || string(body) != fmt.Sprint(n) {
			return fmt.Errorf("workflow %d in world %d: %s: %s", n, world, resp.Status, body)
		}
		return nil
	}
	var disk func() int64
	if *dataDir != "" {
		disk = func() int64 { return dirSize(*dataDir) }
	}
	return measure(ctx, "Restate", cfg, run, disk)
}

// register registers the deployment at uri with the server, retrying
// while the server starts.
func register(admin, uri string) error {
	body := fmt.Sprintf(`{"uri": %q, "force": true}`, uri)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Post(admin+"/deployments", "application/json", bytes.NewReader([]byte(body)))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return nil
			}
			err = fmt.Errorf("register %s: %s: %s", uri, resp.Status, b)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func waitTCP(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
