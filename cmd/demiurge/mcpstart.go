package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools/mcp"
)

// mcpEnv is what starting a world's MCP servers needs from the command.
type mcpEnv struct {
	// getenv reads the host's environment: secrets bound to env:VAR, and
	// the variables stdio servers inherit.
	getenv func(string) (string, bool)
	// manifest is the path of the world's AIR; its directory is where
	// stdio servers run.
	manifest string
	log      *slog.Logger
}

// startMCP starts the MCP servers of a world: their tool lists go to
// store, and a tool named like one of reserved is an error. A server that
// fails to start is reported on the log and left out.
func startMCP(ctx context.Context, cat *schema.Catalog, store cas.Putter, reserved []string, env mcpEnv) (*mcp.Set, error) {
	dir, err := manifestDir(env.manifest)
	if err != nil {
		return nil, err
	}
	servers, err := mcp.FromManifest(cat, env.getenv, dir)
	if err != nil {
		return nil, err
	}
	set, err := mcp.Connect(ctx, servers, &mcp.Options{Store: store, Reserved: reserved, Getenv: env.getenv, Logger: env.log})
	if err != nil {
		_ = set.Close()
		return nil, err
	}
	return set, nil
}

// manifestDir is the absolute directory of a world's AIR (a folder, or a
// manifest file in it).
func manifestDir(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		abs = filepath.Dir(abs)
	}
	return abs, nil
}

// lookupEnv turns a command's getenv into a lookup: an empty variable is
// unset.
func lookupEnv(getenv func(string) string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v := getenv(k)
		return v, v != ""
	}
}
