package cli

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

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
// PostgreSQL store, in the user's cache directory), so a second command
// does not compile a module again.
func (a *app) wasmHost() (*wasm.Host, error) {
	a.wasm.once.Do(func() {
		opts := wasm.Options{WASI: a.wasi, CacheDir: a.wasmCacheDir()}
		a.wasm.host, a.wasm.err = wasm.New(opts)
		if a.wasm.err != nil {
			// A cache that cannot be made costs a compile, nothing else.
			a.log.Warn("the WASM compile cache is unusable; modules are compiled in memory", "error", a.wasm.err)
			opts.CacheDir = ""
			a.wasm.host, a.wasm.err = wasm.New(opts)
		}
	})
	return a.wasm.host, a.wasm.err
}

func (a *app) wasmCacheDir() string {
	if a.storeDir != "" && !store.IsURL(a.storeDir) {
		return filepath.Join(a.storeDir, wasmCacheDir)
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
	Error      string   `json:"error,omitempty"`
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
		if err != nil {
			fail(err.Error())
		} else if _, err := h.Load(ctx, def, code); err != nil {
			fail(err.Error())
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
	if m.Error != "" {
		fmt.Fprintf(w, "  %s\n", m.Error)
	}
}
