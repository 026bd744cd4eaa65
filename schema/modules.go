package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/readall"
)

// ModulesDir is the folder beside a manifest that holds its WASM modules,
// as AgentOS's CLI lays them out: modules/<name>-<hex>.wasm, where a "/"
// of the module's name is a folder (modules/demo/Counter@1-<hex>.wasm)
// and hex is the SHA-256 of the module's bytes (or their BLAKE3).
const ModulesDir = "modules"

// MaxModuleSize bounds a WASM module file the loader reads.
const MaxModuleSize = 256 << 20

// ModuleFile returns the path of a module's file under dir, for its name
// and the hex of its hash.
func ModuleFile(dir, name, hexHash string) string {
	return filepath.Join(dir, ModulesDir, filepath.FromSlash(name)+"-"+hexHash+".wasm")
}

// resolveCode finds the WASM module of a reducer defmodule that no Go
// reducer serves, and records it: the def's wasm_hash becomes the BLAKE3
// of the module's bytes (so the manifest's hash pins the code, and the
// world's store holds it under that hash), and the catalog keeps the
// bytes, which a world stores with its manifest (Catalog.Nodes).
//
//   - wasm_hash "sha256:H": the file modules/<name>-H.wasm, whose SHA-256
//     must be H.
//   - no wasm_hash: the one file modules/<name>-<hex>.wasm, whose SHA-256
//     (or BLAKE3) must be hex; AgentOS's CLI fills the hash in the same
//     way.
//   - wasm_hash "blake3:H": the file modules/<name>-H.wasm if there is
//     one (its BLAKE3 must be H), else the code is expected in the world's
//     store.
//
// It reports whether the module has code (or names it by BLAKE3).
func (l *loader) resolveCode(e *problems, d *DefModule) bool {
	p := d.At.Pointer
	dir := l.opts.ModuleDir
	wantPtr := p + "/wasm_hash"
	if d.WasmHash == "" {
		wantPtr = p + "/name"
	}
	var ref cas.Ref
	if d.WasmHash != "" {
		r, err := cas.ParseRef(d.WasmHash)
		if err != nil {
			e.add(p+"/wasm_hash", "%v", err)
			return false
		}
		ref = r
		if ref.Digest() == ([cas.Size]byte{}) {
			ref = cas.Ref{} // a zero placeholder, as AgentOS's authoring hashes are: filled in as if unset
		}
	}
	if dir == "" {
		return ref.Algo() == cas.BLAKE3 && ref.Valid()
	}
	var file string
	name := d.Name
	if ref.Valid() {
		digest := ref.Digest()
		file = ModuleFile(dir, name, hex.EncodeToString(digest[:]))
		if _, err := os.Stat(file); err != nil {
			if ref.Algo() == cas.BLAKE3 {
				return true // in the world's store
			}
			e.add(wantPtr, "module %s: no file %s for wasm_hash %s: put the module's .wasm there (its name ends in the SHA-256 of its bytes)", name, rel(dir, file), d.WasmHash)
			return false
		}
	} else {
		matches, err := filepath.Glob(ModuleFile(dir, globEscape(name), "*"))
		if err != nil {
			e.add(wantPtr, "module %s: %v", name, err)
			return false
		}
		slices.Sort(matches)
		switch len(matches) {
		case 0:
			return false
		case 1:
			file = matches[0]
		default:
			rels := make([]string, len(matches))
			for i, m := range matches {
				rels[i] = rel(dir, m)
			}
			e.add(wantPtr, "module %s has no wasm_hash and %d files could be its code (%s): set wasm_hash to the one it runs, or remove the others", name, len(matches), strings.Join(rels, ", "))
			return false
		}
	}
	code, err := readModule(file)
	if err != nil {
		e.add(wantPtr, "module %s: %v", name, err)
		return false
	}
	sha := sha256.Sum256(code)
	b3 := cas.Sum(code)
	b3d := b3.Digest()
	base := filepath.Base(file)
	hexName := strings.TrimSuffix(base[strings.LastIndexByte(base, '-')+1:], ".wasm")
	switch {
	case ref.Valid() && ref.Algo() == cas.SHA256 && ref.Digest() != sha:
		e.add(wantPtr, "module %s: %s hashes to sha256:%x, not its wasm_hash %s (the file changed, or the hash is stale)", name, rel(dir, file), sha, d.WasmHash)
		return false
	case ref.Valid() && ref.Algo() == cas.BLAKE3 && ref != b3:
		e.add(wantPtr, "module %s: %s hashes to %s, not its wasm_hash %s (the file changed, or the hash is stale)", name, rel(dir, file), b3, d.WasmHash)
		return false
	case !ref.Valid() && hexName != hex.EncodeToString(sha[:]) && hexName != hex.EncodeToString(b3d[:]):
		e.add(wantPtr, "module %s: %s is named for hash %s, but its SHA-256 is %x (rename it, or rebuild it)", name, rel(dir, file), hexName, sha)
		return false
	}
	d.WasmHash = b3.String()
	if l.code == nil {
		l.code, l.codeFiles = map[cas.Ref][]byte{}, map[string]string{}
	}
	l.code[b3] = code
	l.codeFiles[name] = rel(dir, file)
	return true
}

// readModule reads a module file, bounded, refusing one that is not a
// regular file (opened without blocking on a FIFO, as AIR files are).
func readModule(path string) ([]byte, error) {
	return readall.File(path, "a module", MaxModuleSize)
}

func rel(dir, path string) string {
	if r, err := filepath.Rel(dir, path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}

// globEscape escapes the glob metacharacters of a module name.
func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}
