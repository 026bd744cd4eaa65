// Package layers writes down the house rules of the repository's imports,
// once, as data: the layers its packages sit in, from the bottom up, and
// what no production package may import. The test beside it holds every
// package of the module to them (in the manner of Tailscale's deptest);
// docs/architecture.md describes the same house in words.
//
// A package may import packages of its own layer and of the layers below
// it, never above: the store knows nothing of schemas, tools nothing of
// reducers, reducers nothing of adapters, nothing below the command line
// knows the agent door. Every package of the module must be placed in a
// layer: a new directory is placed here before it lands.
package layers

// A Layer is a named set of packages, given as paths relative to the
// module: "x" is the package x alone, "x/..." is x and everything below
// it. The most specific pattern that matches a package places it.
type Layer struct {
	Name     string
	Packages []string
}

// House is the order of the layers, the bottom first.
var House = []Layer{
	{"leaves", []string{"internal/readall", "internal/levenshtein", "internal/realwire/...", "internal/pgtest", "internal/jsonschema/..."}},
	{"store", []string{"cas/..."}},
	{"data", []string{"schema/...", "journal/...", "pgstore/..."}},
	{"engine parts", []string{"effects/...", "world/internal/plans/...", "internal/store"}},
	{"tools", []string{"tools/..."}},
	{"reducers", []string{"reducer/..."}},
	{"adapters", []string{"adapters/..."}},
	{"world", []string{"world"}},
	{"over the world", []string{"replay/...", "world/worldview", "cluster/..."}},
	{"agent", []string{"agent/..."}},
	{"evals", []string{"eval/..."}},
	{"views", []string{"ui/...", "serve/..."}},
	{"programs", []string{"cli", "cli/shcmd", "cmd/...", "examples/..."}},
	{"rules", []string{"internal/layers"}},
}

// TestHelpers are the packages that exist for tests: they may import
// package testing, and no production package may import them.
var TestHelpers = []string{
	"cas/castest", "journal/journaltest", "reducer/reducertest", "adapters/llm/llmtest",
	"replay/replaytest", "examples/internal/exampletest", "internal/realwire", "internal/layers", "internal/pgtest",
}

// Deterministic are the packages whose code runs inside a world's step
// (reducers, plans, the examples' reducers): they must not see the clock,
// randomness, the environment, files, processes or the network, except
// through what the world hands them. NotDeterministic lists the packages
// among them that are not step code: test helpers, a demo program, the
// examples' registry.
var Deterministic = []string{"reducer/...", "world/internal/plans/...", "examples/..."}

// NotDeterministic are the exceptions to Deterministic. reducer/wasm is
// the host that runs WASM reducers, not step code: it reads the clock only
// for the wall-clock backstop of a step, whose failure is never journaled
// (fuel, which the module counts, is what ends a runaway step), and the
// modules it runs see no clock, randomness, environment or file (its WASI
// is fixed).
var NotDeterministic = []string{"reducer/reducertest", "reducer/wasm", "examples", "examples/bash", "examples/embed", "examples/mydemiurge", "examples/internal/..."}

// Nondeterministic are the standard packages deterministic code must not
// import, and why. Every package under net/ is refused too.
var Nondeterministic = map[string]string{
	"time":          "reducers and plans see time only through the ingress stamp",
	"math/rand":     "reducers and plans see randomness only through the ingress stamp's entropy",
	"math/rand/v2":  "reducers and plans see randomness only through the ingress stamp's entropy",
	"crypto/rand":   "reducers and plans see randomness only through the ingress stamp's entropy",
	"os":            "reducers and plans must not read the environment or files",
	"os/exec":       "reducers and plans must not run processes",
	"syscall":       "reducers and plans must not make system calls",
	"net":           "reducers and plans must not reach the network",
	"io/ioutil":     "reducers and plans must not read files",
	"path/filepath": "reducers and plans must not touch host paths",
}

// StoreDeps are the only modules the store (cas) may depend on: it imports
// nothing of ours above it, and only the encoding, the hash and the
// database chosen for it.
var StoreDeps = []string{
	"github.com/fxamacker/cbor/v2", "github.com/x448/float16", "github.com/zeebo/blake3",
	"github.com/klauspost/cpuid/v2", "go.etcd.io/bbolt", "golang.org/x/sys",
}
