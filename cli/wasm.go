package cli

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/reducer/wasm"
	"github.com/demiurge-dev/demiurge/schema"
)

// wasmCacheDir is the folder of a directory store that keeps the machine
// code of the WASM modules its worlds run (wazero's compile cache).
const wasmCacheDir = "wasm-cache"

// wasmState is the WASM host of one command, made on first use.
type wasmState struct {
	once sync.Once
	host *wasm.Host
	err  error
}

// wasmHost returns the host that runs the WASM reducer modules of the
// command's worlds. Its compile cache is in the store's directory (for a
// PostgreSQL store, or a store not made yet, in the user's cache
// directory), so a second command does not compile a module again.
func (a *app) wasmHost() (*wasm.Host, error) {
	a.wasm.once.Do(func() {
		opts := wasm.Options{WASI: a.wasi, CacheDir: a.wasmCacheDir(), Logger: a.log, Limits: wasm.Limits{Deadline: a.wasmLimits.backstop}}
		if a.noWASMCache {
			opts.CacheDir = ""
		}
		a.wasm.host, a.wasm.err = wasm.New(opts)
	})
	return a.wasm.host, a.wasm.err
}

// wasmFlags are the command line's limits of WASM modules: --wasm-fuel
// and --wasm-memory-pages, each a number for every module or MODULE=N for
// one, repeatable, which AIR loaded from files takes as its defmodules'
// "limits" (over what the defmodules set), so that the manifest records
// them and a replay needs no flag; and --wasm-backstop, the host's.
type wasmFlags struct {
	fuel, pages []string
	backstop    time.Duration
}

func (f *wasmFlags) add(pf *pflag.FlagSet) {
	pf.StringArrayVar(&f.fuel, "wasm-fuel", nil, "the fuel of each step of the WASM modules of AIR loaded from files, the instructions it may run (`N`, or MODULE=N for one module; default: the defmodule's \"limits\", else 1000000000); the world records it with its manifest")
	pf.StringArrayVar(&f.pages, "wasm-memory-pages", nil, "the memory cap of the WASM modules of AIR loaded from files, in 64 KiB pages (`N`, or MODULE=N for one module; default: the defmodule's \"limits\", else 1024, 64 MiB); the world records it with its manifest")
	pf.DurationVar(&f.backstop, "wasm-backstop", 0, "how long a WASM module's step may run on the wall clock before it is stopped and its input fails, unjournaled (default 60s): a guard for what fuel does not bound")
}

// limits returns the limits of every module and by module name.
func (f *wasmFlags) limits() (schema.ModuleLimits, map[string]schema.ModuleLimits, error) {
	var all schema.ModuleLimits
	var byModule map[string]schema.ModuleLimits
	parse := func(flag string, vals []string, most uint64, set func(*schema.ModuleLimits, uint64)) error {
		for _, v := range vals {
			module, num, named := strings.Cut(v, "=")
			if !named {
				module, num = "", v
			}
			n, err := strconv.ParseUint(strings.ReplaceAll(num, "_", ""), 10, 64)
			if err != nil || n == 0 || n > most || (named && module == "") {
				return usagef("--%s %q: want a whole number from 1 to %d, or MODULE=N", flag, v, most)
			}
			if !named {
				set(&all, n)
				continue
			}
			if byModule == nil {
				byModule = map[string]schema.ModuleLimits{}
			}
			l := byModule[module]
			set(&l, n)
			byModule[module] = l
		}
		return nil
	}
	if err := parse("wasm-fuel", f.fuel, schema.MaxModuleFuel, func(l *schema.ModuleLimits, n uint64) { l.Fuel = n }); err != nil {
		return all, nil, err
	}
	if err := parse("wasm-memory-pages", f.pages, schema.MaxMemoryPages, func(l *schema.ModuleLimits, n uint64) { l.MemoryPages = n }); err != nil {
		return all, nil, err
	}
	if f.backstop < 0 {
		return all, nil, usagef("--wasm-backstop %v: want a positive duration", f.backstop)
	}
	return all, byModule, nil
}

func (a *app) wasmCacheDir() string {
	if a.storeDir != "" && !store.IsURL(a.storeDir) {
		// Only in a store that exists: a command that makes none (replay
		// of a bundle, say) leaves no .demiurge behind.
		if st, err := os.Stat(a.storeDir); err == nil && st.IsDir() {
			return filepath.Join(a.storeDir, wasmCacheDir)
		}
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "demiurge", wasmCacheDir)
	}
	return ""
}

// moduleReport is what validate says of a WASM module.
type moduleReport struct {
	Name       string   `json:"name"`
	WasmHash   string   `json:"wasm_hash"`
	SHA256     string   `json:"sha256,omitempty"`
	Size       int      `json:"size,omitempty"`
	Exports    []string `json:"exports"`
	Imports    []string `json:"imports"`
	Resettable bool     `json:"resettable"`
	// Fuel and MemoryPages are the limits it runs under.
	Fuel        uint64 `json:"fuel,omitempty"`
	MemoryPages uint32 `json:"memory_pages,omitempty"`
	Error       string `json:"error,omitempty"`
	// Detail is what Error leaves out: wazero's words for a module it
	// cannot compile or instantiate.
	Detail string `json:"detail,omitempty"`
}

// wasmModules reports the WASM modules of a catalog that no Go reducer
// serves, checking each against the ABI as a world would run it.
func (a *app) wasmModules(ctx context.Context, cat *schema.Catalog) ([]moduleReport, schema.ErrorList) {
	reg := a.registry()
	var out []moduleReport
	var problems schema.ErrorList
	for _, name := range cat.Names(schema.KindDefModule) {
		def, _ := cat.Module(name)
		if def.WasmHash == "" || strings.HasPrefix(name, "sys/") {
			continue
		}
		if _, goReducer := reg.Lookup(name); goReducer {
			continue
		}
		rep := moduleReport{Name: name, WasmHash: def.WasmHash, Exports: []string{}, Imports: []string{}}
		fail := func(msg string) {
			rep.Error = msg
			problems = append(problems, &schema.ValidationError{File: def.At.File, Pointer: def.At.Pointer + "/wasm_hash", Msg: msg})
		}
		ref, err := cas.ParseRef(def.WasmHash)
		code, ok := cat.Code(ref)
		if err != nil || !ok {
			// Named by BLAKE3 and not beside the manifest: the store
			// holds it, or the world cannot run.
			rep.Error = "the module is not beside the manifest: a world finds it in its store by this hash"
			out = append(out, rep)
			continue
		}
		rep.SHA256 = fmt.Sprintf("sha256:%x", sha256.Sum256(code))
		rep.Size = len(code)
		if info, err := wasm.Inspect(code); err == nil {
			for _, e := range info.Exports {
				rep.Exports = append(rep.Exports, e.String())
			}
			for _, im := range info.Imports {
				rep.Imports = append(rep.Imports, im.String())
			}
			rep.Resettable = info.Resettable
		}
		h, err := a.wasmHost()
		if err == nil {
			l := h.Limits(def)
			rep.Fuel, rep.MemoryPages = l.Fuel, l.MemoryPages
		}
		if err != nil {
			fail(err.Error())
		} else if _, err := h.Load(ctx, def, code); err != nil {
			fail(err.Error())
			rep.Detail = wasm.Detail(err)
		}
		out = append(out, rep)
	}
	return out, problems
}

// printModule writes what validate says of a module, a few lines.
func printModule(w io.Writer, m moduleReport) {
	fmt.Fprintf(w, "module %s: wasm %s", m.Name, m.WasmHash)
	if m.SHA256 != "" {
		fmt.Fprintf(w, " (%s, %d bytes)", m.SHA256, m.Size)
	}
	fmt.Fprintln(w)
	if len(m.Exports) > 0 {
		fmt.Fprintf(w, "  exports: %s\n", strings.Join(m.Exports, ", "))
	}
	imports := "none"
	if len(m.Imports) > 0 {
		imports = strings.Join(m.Imports, ", ")
	}
	if m.SHA256 != "" {
		fmt.Fprintf(w, "  imports: %s\n", imports)
	}
	if m.Fuel > 0 {
		fmt.Fprintf(w, "  limits: fuel %d, memory %d pages (%d MiB)\n", m.Fuel, m.MemoryPages, m.MemoryPages/16)
	}
	if m.Error != "" {
		fmt.Fprintf(w, "  %s\n", m.Error)
	}
	if m.Detail != "" {
		fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(strings.TrimSpace(m.Detail), "\n", "\n  "))
	}
}
