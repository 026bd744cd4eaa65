package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/schema"
)

func newValidateCommand(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate PATH",
		Short: "Check a world's AIR and print every problem",
		Long: `Load the world at PATH (a manifest.air or manifest.air.json file with the
*.air.json files beside it, or a folder holding them), resolve every name and
validate the whole against the reducers this binary registers.

Every problem is printed on stderr as "file: /json/pointer: message", or
"file:line:column: message" for a file that is not JSON; warnings (problems
that do not stop the world from loading) read
"file: /json/pointer: warning: message". On success a summary with the
manifest hash and the number of defs the manifest lists goes to stdout.
With --json a single JSON object goes to stdout instead.

The command exits 1 if there is any error, 0 otherwise (warnings included).
For each WASM module the world runs (a defmodule that no Go reducer of this
binary serves), validate prints its hash (BLAKE3, and the SHA-256 AgentOS
names it by), its size, exports and imports, and checks it against the
reducer ABI as a world would run it: a module the host refuses is an error.

It does not use the store.`,
		Example: `  demiurge validate examples/counter
  demiurge validate --json examples/demiurge/manifest.air.json`,
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.validate(args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as one JSON object on stdout")
	return cmd
}

// validateResult is what validate --json prints.
type validateResult struct {
	Path     string     `json:"path"`
	OK       bool       `json:"ok"`
	Manifest string     `json:"manifest,omitempty"` // the manifest's hash, when it loads
	Defs     *defCounts `json:"defs,omitempty"`
	// Modules are the WASM modules the world runs: hash, exports, imports.
	Modules  []moduleReport `json:"modules,omitempty"`
	Errors   []jsonProblem  `json:"errors"`
	Warnings []jsonProblem  `json:"warnings"`
	Error    string         `json:"error,omitempty"` // a failure that is not a problem in the AIR (a missing path)
}

// defCounts counts the defs a manifest lists, by kind.
type defCounts struct {
	Schemas  int `json:"schemas"`
	Modules  int `json:"modules"`
	Plans    int `json:"plans"`
	Effects  int `json:"effects"`
	Caps     int `json:"caps"`
	Policies int `json:"policies"`
	Secrets  int `json:"secrets"`
}

func (c *defCounts) String() string {
	return fmt.Sprintf("%s, %s, %s, %s, %s, %s, %s",
		plural(c.Schemas, "schema"), plural(c.Modules, "module"), plural(c.Plans, "plan"),
		plural(c.Effects, "effect"), plural(c.Caps, "cap"), plural(c.Policies, "policy"),
		plural(c.Secrets, "secret"))
}

type jsonProblem struct {
	File    string `json:"file"`
	Pointer string `json:"pointer"`
	// Line and Column place a problem of a file that is not JSON.
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

func (a *app) validate(path string, asJSON bool) error {
	a.noWASMCache = true // validate does not use the store
	reg := a.registry()
	a.log.Debug("validate", "path", path, "reducers", reg.Names())
	cat, err := schema.Load(path, reg.LoadOptions())

	res := validateResult{Path: path, Errors: []jsonProblem{}, Warnings: []jsonProblem{}}
	var problems schema.ErrorList
	switch {
	case err == nil:
		// The models' options are the llm adapter's to check.
		if _, mp := llm.ManifestModels(cat); len(mp) > 0 {
			problems = append(mp, cat.Warnings...)
			break
		}
		var wp schema.ErrorList
		if res.Modules, wp = a.wasmModules(context.Background(), cat); len(wp) > 0 {
			problems = append(wp, cat.Warnings...)
			break
		}
		res.OK = true
		res.Manifest = cat.ManifestRef().String()
		m := cat.Manifest
		res.Defs = &defCounts{
			Schemas: len(m.Schemas), Modules: len(m.Modules), Plans: len(m.Plans),
			Effects: len(m.Effects), Caps: len(m.Caps), Policies: len(m.Policies), Secrets: len(m.Secrets),
		}
		problems = cat.Warnings
	case errors.As(err, &problems):
	default:
		res.Error = err.Error()
	}
	for _, p := range problems {
		jp := jsonProblem{File: p.File, Pointer: p.Pointer, Line: p.Line, Column: p.Column, Message: p.Msg}
		if p.Warning {
			res.Warnings = append(res.Warnings, jp)
		} else {
			res.Errors = append(res.Errors, jp)
		}
	}

	if asJSON {
		b, jerr := json.MarshalIndent(res, "", "  ")
		if jerr != nil {
			return jerr
		}
		if _, jerr := fmt.Fprintf(a.out, "%s\n", b); jerr != nil {
			return jerr
		}
	} else {
		for _, p := range problems {
			fmt.Fprintln(a.err, p.Error())
		}
		if res.OK {
			if _, err := fmt.Fprintf(a.out, "ok %s: manifest %s: %s\n", path, res.Manifest, res.Defs); err != nil {
				return err
			}
		}
		for _, m := range res.Modules {
			printModule(a.out, m)
		}
	}
	switch {
	case res.OK:
		return nil
	case res.Error != "":
		return fmt.Errorf("validate %s: %s", path, res.Error)
	default:
		return fmt.Errorf("validate %s: %s, %s", path, plural(len(res.Errors), "error"), plural(len(res.Warnings), "warning"))
	}
}

// plural renders a count of things: "1 module", "0 schemas", "2 policies".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	switch {
	case noun[len(noun)-1] == 'y':
		noun = noun[:len(noun)-1] + "ies"
	default:
		noun += "s"
	}
	return fmt.Sprintf("%d %s", n, noun)
}
