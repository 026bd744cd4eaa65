package main

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// heavy are the packages demiurge-sh must not link, with why: each makes
// every start slower, whatever the program runs (Go runs the init of
// every package linked; docs/BENCHMARKS.md, "Start-up"). A path ending in
// "/" names every package under it.
var heavy = []struct{ path, why string }{
	{"net/http", "crypto/tls, x509 and the HTTP/2 tables double an empty program's start"},
	{"github.com/demiurge-dev/demiurge/adapters/llm", "the model adapters link every provider's SDK"},
	{"github.com/demiurge-dev/demiurge/serve", "the HTTP server, with net/http and the metrics"},
	{"github.com/openai/", "openai-go registers its union types at init"},
	{"github.com/anthropics/", "anthropic-sdk-go, with OpenTelemetry"},
	{"google.golang.org/genai", "the Gemini SDK"},
	{"github.com/prometheus/", "client_golang's default registry and collectors at init"},
	{"github.com/modelcontextprotocol/", "the MCP SDK, with encoding/gob and net/http"},
	{"github.com/tetratelabs/wazero", "the WASM runtime"},
	{"github.com/jackc/", "pgx, PostgreSQL's driver"},
	{"github.com/spf13/cobra", "cobra (text/template): demiurge-sh parses its flags with pflag alone"},
	{"github.com/santhosh-tekuri/", "compiles its meta-schemas at init"},
	{"charm.land/", "catwalk's model catalog"},
}

// TestLinksNothingHeavy: demiurge-sh, whose reason to exist is a fast
// start, links none of the heavy packages; the failure names the chain
// of imports that brought one in.
func TestLinksNothingHeavy(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: the test needs go list")
	}
	out, err := exec.CommandContext(t.Context(), gobin, "list", "-deps", "-json=ImportPath,Imports", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	var main string
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		imports[p.ImportPath] = p.Imports
		main = p.ImportPath // go list -deps lists the package itself last
	}
	if len(imports) < 50 {
		t.Fatalf("go list -deps found %d packages; want demiurge-sh's deps", len(imports))
	}
	for _, h := range heavy {
		var found []string
		for pkg := range imports {
			if pkg == h.path || (strings.HasSuffix(h.path, "/") && strings.HasPrefix(pkg, h.path)) ||
				strings.HasPrefix(pkg, h.path+"/") {
				found = append(found, pkg)
			}
		}
		if len(found) == 0 {
			continue
		}
		slices.Sort(found) // net/http before net/http/httptrace
		t.Errorf("demiurge-sh links %s (%s): %s", found[0], h.why, strings.Join(chain(imports, main, found[0]), " → "))
	}
}

// chain returns the shortest chain of imports from from to to.
func chain(imports map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var c []string
			for ; p != ""; p = prev[p] {
				c = append([]string{p}, c...)
			}
			return c
		}
		for _, q := range imports[p] {
			if _, seen := prev[q]; !seen {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return []string{to}
}
