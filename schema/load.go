package schema

import (
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
)

// Source is one AIR file: a def object or an array of defs.
type Source struct {
	Name string // file name used in messages
	Data []byte
}

// LoadOptions tunes Load. The zero value (or nil) is the default.
type LoadOptions struct {
	// Reducers lists the reducer module names registered in this binary.
	// A defmodule naming a reducer that is not registered is an error
	// listing the registered ones. Nil skips the check (the schema layer
	// alone cannot know what a binary registers).
	Reducers []string
	// WASM says the binary runs WASM reducer modules: a reducer defmodule
	// no Go reducer serves needs its module, found beside the manifest
	// (see ModulesDir) or named by BLAKE3 in its wasm_hash. Without it,
	// such a defmodule is an error.
	WASM bool
	// Limits and ModuleLimits (by module name) are written into the
	// defmodule of every WASM module as it loads, over the limits its AIR
	// sets (ModuleLimits over Limits, each non-zero field over the def's):
	// a command line's --wasm-fuel, say. They are then part of the def, so
	// the manifest's hash pins them and a replay runs the module under
	// them without being told. LoadFromCAS ignores them: a stored
	// manifest is what it is.
	Limits       ModuleLimits
	ModuleLimits map[string]ModuleLimits

	// ModuleDir is the folder whose modules/ holds the WASM modules of
	// the AIR (see ModulesDir). Load sets it to the manifest's folder;
	// for LoadSources it is empty unless set, and the defmodules of WASM
	// modules then name their code by BLAKE3 in a store.
	ModuleDir string
}

// Catalog is a loaded, validated world definition: the manifest and every
// def it uses, built-ins included, with their node hashes. A Catalog is
// immutable and safe for concurrent use.
type Catalog struct {
	Manifest *Manifest
	// Warnings are problems that do not stop the world from loading.
	Warnings ErrorList
	// Files are the AIR files read, in order.
	Files []string

	sources []Source

	schemas  map[string]*DefSchema
	modules  map[string]*DefModule
	plans    map[string]*DefPlan
	caps     map[string]*DefCap
	policies map[string]*DefPolicy
	secrets  map[string]*DefSecret
	effects  map[string]*DefEffect
	byKind   map[string]*DefEffect // effect kind → def

	refs        map[defKey]cas.Ref
	nodes       map[cas.Ref][]byte
	code        map[cas.Ref][]byte // WASM modules by BLAKE3
	codeFiles   map[string]string  // module name → its file under ModuleDir, slash-separated
	manifestRef cas.Ref
}

type defKey struct{ kind, name string }

// SchemaType returns the type of a schema (Catalog implements Resolver).
func (c *Catalog) SchemaType(name string) (*Type, bool) {
	d, ok := c.schemas[name]
	if !ok {
		return nil, false
	}
	return d.Type, true
}

// Schema returns a defschema by name.
func (c *Catalog) Schema(name string) (*DefSchema, bool) { d, ok := c.schemas[name]; return d, ok }

// Module returns a defmodule by name.
func (c *Catalog) Module(name string) (*DefModule, bool) { d, ok := c.modules[name]; return d, ok }

// Plan returns a defplan by name.
func (c *Catalog) Plan(name string) (*DefPlan, bool) { d, ok := c.plans[name]; return d, ok }

// Cap returns a defcap by name.
func (c *Catalog) Cap(name string) (*DefCap, bool) { d, ok := c.caps[name]; return d, ok }

// Policy returns a defpolicy by name.
func (c *Catalog) Policy(name string) (*DefPolicy, bool) { d, ok := c.policies[name]; return d, ok }

// Secret returns a defsecret by name.
func (c *Catalog) Secret(name string) (*DefSecret, bool) { d, ok := c.secrets[name]; return d, ok }

// Effect returns a defeffect by name.
func (c *Catalog) Effect(name string) (*DefEffect, bool) { d, ok := c.effects[name]; return d, ok }

// EffectKind returns the defeffect of an effect kind, such as "http.request".
func (c *Catalog) EffectKind(kind string) (*DefEffect, bool) { d, ok := c.byKind[kind]; return d, ok }

// DefRef returns the node hash of an active def.
func (c *Catalog) DefRef(kind, name string) (cas.Ref, bool) {
	r, ok := c.refs[defKey{kind, name}]
	return r, ok
}

// ManifestRef is the hash of the manifest node, which pins the hash of
// every def the manifest lists. It identifies the world's definition.
func (c *Catalog) ManifestRef() cas.Ref { return c.manifestRef }

// Nodes calls fn with the canonical bytes of every def node and of the
// manifest node, and with the bytes of every WASM module the loader found
// beside the manifest (see Code), in ascending ref order, so a world can
// store them in CAS.
func (c *Catalog) Nodes(fn func(ref cas.Ref, node []byte) error) error {
	refs := make([]cas.Ref, 0, len(c.nodes)+len(c.code))
	for r := range c.nodes {
		refs = append(refs, r)
	}
	for r := range c.code {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	for _, r := range refs {
		b, ok := c.nodes[r]
		if !ok {
			b = c.code[r]
		}
		if err := fn(r, b); err != nil {
			return err
		}
	}
	return nil
}

// Sources returns the AIR files the catalog was loaded from, with their
// bytes, in load order. Together with the built-ins they load to the same
// catalog, so a session bundle can carry its world's definition.
func (c *Catalog) Sources() []Source {
	out := make([]Source, len(c.sources))
	copy(out, c.sources)
	return out
}

// Node returns the canonical bytes of a def or manifest node by ref, or
// the bytes of a WASM module the loader found (see Code).
func (c *Catalog) Node(ref cas.Ref) ([]byte, bool) {
	if b, ok := c.nodes[ref]; ok {
		return b, true
	}
	b, ok := c.code[ref]
	return b, ok
}

// ModuleFiles returns the WASM modules of the catalog whose code it holds
// as files to lay beside its AIR: each named by its path under the
// manifest's folder, slash-separated (modules/demo/Counter@1-<hex>.wasm),
// in the order of their module names. A module the loader found keeps its
// file's name; one whose code came from a store (LoadFromCAS) is named by
// its BLAKE3, which its def's wasm_hash names, so the AIR loads from the
// files as it is.
func (c *Catalog) ModuleFiles() []Source {
	var out []Source
	for _, name := range c.Names(KindDefModule) {
		d := c.modules[name]
		ref, err := cas.ParseRef(d.WasmHash)
		if err != nil {
			continue
		}
		code, ok := c.code[ref]
		if !ok {
			continue
		}
		path, ok := c.codeFiles[name]
		if !ok {
			digest := ref.Digest()
			path = filepath.ToSlash(ModuleFile("", name, hex.EncodeToString(digest[:])))
		}
		out = append(out, Source{Name: path, Data: code})
	}
	return out
}

// Code returns the bytes of a WASM module the loader found beside the
// manifest, by the BLAKE3 that the module's wasm_hash now holds. A module
// named by BLAKE3 and not found beside the manifest is not here: its code
// is in the world's store.
func (c *Catalog) Code(ref cas.Ref) ([]byte, bool) { b, ok := c.code[ref]; return b, ok }

// Names returns the sorted names of the active defs of a kind.
func (c *Catalog) Names(kind string) []string {
	switch kind {
	case KindDefSchema:
		return slices.Sorted(maps.Keys(c.schemas))
	case KindDefModule:
		return slices.Sorted(maps.Keys(c.modules))
	case KindDefPlan:
		return slices.Sorted(maps.Keys(c.plans))
	case KindDefCap:
		return slices.Sorted(maps.Keys(c.caps))
	case KindDefPolicy:
		return slices.Sorted(maps.Keys(c.policies))
	case KindDefSecret:
		return slices.Sorted(maps.Keys(c.secrets))
	case KindDefEffect:
		return slices.Sorted(maps.Keys(c.effects))
	}
	return nil
}

// Load reads a world definition from path: a manifest file (manifest.air,
// or manifest.air.json as AgentOS names it) together with the *.air.json
// files beside it, or a folder holding them. Each file holds one def or an
// array of defs; exactly one of them is the manifest.
//
// Each file must be a regular file of at most MaxAIRFileSize bytes (see
// ReadAIRFile); one that is not is refused, naming it, and opening never
// blocks (on a FIFO, say).
//
// On failure the error is an ErrorList holding every problem found, each
// as "file: /json/pointer: message".
func Load(path string, opts *LoadOptions) (*Catalog, error) {
	files, err := airFiles(path)
	if err != nil {
		return nil, err
	}
	var srcs []Source
	for _, f := range files {
		b, err := ReadAIRFile(f)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, Source{Name: f, Data: b})
	}
	o := LoadOptions{}
	if opts != nil {
		o = *opts
	}
	o.ModuleDir = filepath.Dir(files[0])
	return LoadSources(srcs, &o)
}

// airFiles lists the AIR files of a world at path.
func airFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("load AIR: %w", err)
	}
	dir := path
	var first string
	if !st.IsDir() {
		dir, first = filepath.Dir(path), path
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load AIR: %w", err)
	}
	files := []string{}
	if first != "" {
		files = append(files, first)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !(strings.HasSuffix(name, ".air.json") || name == "manifest.air") {
			continue
		}
		p := filepath.Join(dir, name)
		if first != "" && filepath.Clean(p) == filepath.Clean(first) {
			continue
		}
		files = append(files, p)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("load AIR: %s holds no manifest.air or *.air.json files", path)
	}
	return files, nil
}

// LoadSources is Load on files already in memory.
func LoadSources(srcs []Source, opts *LoadOptions) (*Catalog, error) {
	if opts == nil {
		opts = &LoadOptions{}
	}
	errs := newProblems("")
	b, err := builtins()
	if err != nil {
		return nil, err
	}
	l := &loader{opts: opts, errs: errs, builtin: b, defined: map[defKey]Def{}}
	for _, s := range srcs {
		l.files = append(l.files, s.Name)
		l.parseSource(s, errs.forFile(s.Name))
	}
	if l.unread {
		// A file that is not JSON defines nothing anyone can see: what
		// the others say of its defs (listed but not defined, an unknown
		// schema) would only follow from its error. Its error is the one.
		return nil, errs.sorted()
	}
	c := l.link()
	c.sources = srcs
	c.code, c.codeFiles = l.code, l.codeFiles
	all := errs.sorted()
	if len(all.Errors()) > 0 {
		return nil, all
	}
	c.Warnings = all.Warnings()
	return c, nil
}

// parseSource parses one file into defs.
func parseSource(s Source, errs *problems) []Def {
	defs, _ := parseFile(s, errs)
	return defs
}

// parseFile parses one file into defs; read is false when the file is not
// JSON at all (its error is in errs), so that none of its defs is known.
func parseFile(s Source, errs *problems) (defs []Def, read bool) {
	root, err := parseJSON(s.Data)
	if err != nil {
		if je, ok := errors.AsType[*jsonError](err); ok {
			errs.addAt(je.Line, je.Col, je.Msg)
		} else {
			errs.add("", "invalid JSON: %v", err)
		}
		return nil, false
	}
	switch root.kind {
	case jArray:
		for _, n := range root.arr {
			if d := parseDef(n, s.Name, errs); d != nil {
				defs = append(defs, d)
			}
		}
	case jObject:
		if d := parseDef(root, s.Name, errs); d != nil {
			defs = append(defs, d)
		}
	default:
		errs.add("", "an AIR file holds a def object or an array of defs, got %s", root.kind)
	}
	return defs, true
}

//go:embed builtin/*.air.json
var builtinFS embed.FS

type builtinSet struct {
	defs map[defKey]Def
}

var (
	builtinOnce sync.Once
	builtinSet_ *builtinSet
	builtinErr  error
)

// builtins parses the sys/* defs shipped in the binary, once.
func builtins() (*builtinSet, error) {
	builtinOnce.Do(func() {
		set := &builtinSet{defs: map[defKey]Def{}}
		errs := newProblems("")
		files, err := fs.Glob(builtinFS, "builtin/*.air.json")
		if err != nil {
			builtinErr = err
			return
		}
		sort.Strings(files)
		for _, f := range files {
			data, err := builtinFS.ReadFile(f)
			if err != nil {
				builtinErr = err
				return
			}
			name := "builtin:" + strings.TrimPrefix(f, "builtin/")
			for _, d := range parseSource(Source{Name: name, Data: data}, errs.forFile(name)) {
				set.defs[defKey{d.DefKind(), d.DefName()}] = d
			}
		}
		if !errs.empty() {
			builtinErr = fmt.Errorf("schema: built-in defs are broken: %w", errs.sorted())
			return
		}
		builtinSet_ = set
	})
	return builtinSet_, builtinErr
}

// BuiltinTypes is a Resolver of the built-in schemas (sys/*) alone: it
// normalizes the params and receipts of built-in effects without a loaded
// catalog, as a world's catalog would.
var BuiltinTypes Resolver = builtinTypes{}

type builtinTypes struct{}

func (builtinTypes) SchemaType(name string) (*Type, bool) {
	d, ok := Builtin(KindDefSchema, name)
	if !ok {
		return nil, false
	}
	ds, ok := d.(*DefSchema)
	if !ok {
		return nil, false
	}
	return ds.Type, true
}

// BuiltinEffectKind returns the built-in defeffect of an effect kind, such
// as "blob.put".
func BuiltinEffectKind(kind string) (*DefEffect, bool) {
	for _, n := range BuiltinNames(KindDefEffect) {
		d, _ := Builtin(KindDefEffect, n)
		if ef, ok := d.(*DefEffect); ok && ef.Kind == kind {
			return ef, true
		}
	}
	return nil, false
}

// Builtin returns the built-in def of a kind and name, such as
// Builtin(KindDefSchema, "sys/BlobPutParams@1").
func Builtin(kind, name string) (Def, bool) {
	b, err := builtins()
	if err != nil {
		return nil, false
	}
	d, ok := b.defs[defKey{kind, name}]
	return d, ok
}

// BuiltinNames returns the sorted names of the built-in defs of a kind.
func BuiltinNames(kind string) []string {
	b, err := builtins()
	if err != nil {
		return nil
	}
	var out []string
	for k := range b.defs {
		if k.kind == kind {
			out = append(out, k.name)
		}
	}
	sort.Strings(out)
	return out
}

// errNoManifest is returned when no file holds a manifest.
var errNoManifest = errors.New("no manifest found: one AIR file must hold a def with \"$kind\": \"manifest\"")
