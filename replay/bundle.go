package replay

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/readall"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
)

// BundleFormat is the format name in bundle.json.
const BundleFormat = "demiurge/bundle/v1"

// Manifest is bundle.json.
type Manifest struct {
	Format   string `json:"format"`
	World    string `json:"world"`
	Head     uint64 `json:"head"`
	HeadHash string `json:"head_hash"`
	// ManifestRef is the hash of the AIR manifest the world last ran.
	ManifestRef string `json:"manifest"`
	Records     uint64 `json:"records"`
	Blobs       int    `json:"blobs"`
	// Missing counts refs found in the records that the store did not hold
	// (refs to things outside the world, such as AgentOS sha256 ids).
	Missing int `json:"missing,omitempty"`
}

var refPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`blake3:[0-9a-f]{64}`) })

// Export writes the session of one world as a bundle in dir, which must
// not exist or be empty. sources are the world's AIR files
// (schema.Catalog.Sources), and modules the files of its WASM modules
// (schema.Catalog.ModuleFiles), written beside them under air/ (each
// named modules/...), so that the AIR loads from the bundle's air/ as it
// loaded from its folder: edited, it replays (--under-manifest) with them.
func Export(ctx context.Context, j journal.Reader, store cas.Getter, world string, sources, modules []schema.Source, dir string) (*Manifest, error) {
	for _, m := range modules {
		if !validModulePath(m.Name) {
			return nil, fmt.Errorf("export %s: module file %q is not a path under %s/", world, m.Name, schema.ModulesDir)
		}
	}
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	m := &Manifest{Format: BundleFormat, World: world}
	var jb bytes.Buffer
	refs := map[cas.Ref]bool{}
	var queue []cas.Ref
	scan := func(b []byte) {
		for _, s := range refPattern().FindAll(b, -1) {
			r, err := cas.ParseRef(string(s))
			if err == nil && !refs[r] {
				refs[r] = true
				queue = append(queue, r)
			}
		}
	}
	err := j.Read(ctx, world, 1, func(r journal.Record) error {
		b, err := r.Encode()
		if err != nil {
			return err
		}
		jb.Write(b)
		m.Records++
		m.Head, m.HeadHash = r.Seq, r.Hash.String()
		if r.Kind == "Manifest" {
			if v, err := schema.Decode(r.Payload); err == nil {
				if mm, ok := v.(*schema.Map); ok {
					if x, ok := mm.Get("manifest"); ok {
						m.ManifestRef, _ = x.(string)
					}
				}
			}
		}
		scan(r.Payload)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", world, err)
	}
	if m.Records == 0 {
		return nil, fmt.Errorf("export: world %s has no records", world)
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs"), 0o755); err != nil {
		return nil, err
	}
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		b, err := store.Get(ctx, r)
		if errors.Is(err, cas.ErrNotFound) {
			m.Missing++
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", world, err)
		}
		d := r.Digest()
		if err := os.WriteFile(filepath.Join(dir, "blobs", hex.EncodeToString(d[:])), b, 0o644); err != nil {
			return nil, err
		}
		m.Blobs++
		scan(b)
	}
	if err := os.WriteFile(filepath.Join(dir, "journal.cbor"), jb.Bytes(), 0o644); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "air"), 0o755); err != nil {
		return nil, err
	}
	for i, s := range sources {
		name := fmt.Sprintf("%02d-%s", i, filepath.Base(s.Name))
		if err := os.WriteFile(filepath.Join(dir, "air", name), s.Data, 0o644); err != nil {
			return nil, err
		}
	}
	for _, m := range modules {
		path := filepath.Join(dir, "air", filepath.FromSlash(m.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, m.Data, 0o644); err != nil {
			return nil, err
		}
	}
	js, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "bundle.json"), append(js, '\n'), 0o644); err != nil {
		return nil, err
	}
	return m, nil
}

func prepareDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("export: %s is not empty", dir)
	}
	return nil
}

// maxBundleJSON bounds bundle.json, a few lines that export writes.
const maxBundleJSON = 1 << 20

// readRegular reads the file name of a bundle, refusing one that is not a
// regular file (a FIFO would block the read, a device never end it) or
// that holds more than max bytes (readall.NoLimit: no bound; a bundle's
// journal and blobs are as large as the session). Symlinks are followed,
// as os.DirFS does.
func readRegular(fsys fs.FS, name string, max int64) ([]byte, error) {
	return readall.FSFile(fsys, name, "a bundle's file (as demiurge export writes it)", max)
}

// validModulePath reports whether name is a module file's path as a
// bundle holds it: modules/<name>-<hex>.wasm, slash-separated, with no
// empty, "." or ".." element.
func validModulePath(name string) bool {
	parts := strings.Split(name, "/")
	if len(parts) < 2 || parts[0] != schema.ModulesDir || !strings.HasSuffix(name, ".wasm") {
		return false
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || strings.ContainsRune(p, '\\') {
			return false
		}
	}
	return true
}

// maxModuleFiles bounds the module files a bundle's air/modules/ may hold.
const maxModuleFiles = 1024

// Bundle is a bundle read from disk.
type Bundle struct {
	Dir      string
	Manifest Manifest
	// Sources are the AIR files, in their original order.
	Sources []schema.Source
	// Modules are the files of the world's WASM modules (air/modules/...),
	// each named by its path under air/, slash-separated
	// (modules/demo/Counter@1-<hex>.wasm). A bundle written before
	// bundles held them has none: the code is in its blobs.
	Modules []schema.Source
	// Records are the journal records, verified as a hash chain.
	Records []journal.Record
	// Blobs are the blobs by ref, each verified against its name.
	Blobs map[cas.Ref][]byte
}

// Read reads and verifies a bundle: the records form the world's hash
// chain up to the head bundle.json names, and every blob hashes to its name.
func Read(dir string) (*Bundle, error) {
	switch st, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read bundle %s: no such directory (a bundle is the directory `demiurge export` writes)", dir)
	case err != nil:
		return nil, fmt.Errorf("read bundle %s: %w", dir, err)
	case !st.IsDir():
		return nil, fmt.Errorf("read bundle %s: not a directory (a bundle is the directory `demiurge export` writes)", dir)
	}
	return readFS(os.DirFS(dir), dir)
}

// readFS is Read from fsys, the bundle's directory dir.
func readFS(fsys fs.FS, dir string) (*Bundle, error) {
	b := &Bundle{Dir: dir, Blobs: map[cas.Ref][]byte{}}
	js, err := readRegular(fsys, "bundle.json", maxBundleJSON)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read bundle %s: %s not found: not a bundle (a bundle is the directory `demiurge export` writes)", dir, filepath.Join(dir, "bundle.json"))
	}
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", dir, err)
	}
	if err := json.Unmarshal(js, &b.Manifest); err != nil {
		return nil, fmt.Errorf("read bundle %s: bundle.json: %w", dir, err)
	}
	if b.Manifest.Format != BundleFormat {
		return nil, fmt.Errorf("read bundle %s: format %q, want %q", dir, b.Manifest.Format, BundleFormat)
	}
	if err := journal.ValidateWorld(b.Manifest.World); err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", dir, err)
	}
	airs, err := fs.ReadDir(fsys, "air")
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", dir, err)
	}
	for _, e := range airs {
		if e.IsDir() && e.Name() == schema.ModulesDir {
			if b.Modules, err = readModules(fsys, "air/"+schema.ModulesDir); err != nil {
				return nil, fmt.Errorf("read bundle %s: %w", dir, err)
			}
			continue
		}
		data, err := readRegular(fsys, "air/"+e.Name(), schema.MaxAIRFileSize)
		if err != nil {
			return nil, fmt.Errorf("read bundle %s: %w", dir, err)
		}
		name := e.Name()
		if i := strings.IndexByte(name, '-'); i > 0 {
			name = name[i+1:]
		}
		b.Sources = append(b.Sources, schema.Source{Name: filepath.Join(dir, "air", name), Data: data})
	}
	jb, err := readRegular(fsys, "journal.cbor", -1)
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", dir, err)
	}
	prev := journal.Genesis(b.Manifest.World)
	seq := uint64(0)
	for r, err := range journal.DecodeRecords(jb) {
		seq++
		if err != nil {
			return nil, fmt.Errorf("read bundle %s: journal.cbor record %d: %w", dir, seq, err)
		}
		if r.Seq != seq || r.Prev != prev {
			return nil, fmt.Errorf("read bundle %s: journal.cbor: hash chain broken at seq %d", dir, seq)
		}
		prev = r.Hash
		b.Records = append(b.Records, r)
	}
	if uint64(len(b.Records)) != b.Manifest.Head || b.Manifest.Head > 0 && prev.String() != b.Manifest.HeadHash {
		return nil, fmt.Errorf("read bundle %s: the journal ends at seq %d %s, bundle.json says %d %s", dir, len(b.Records), prev, b.Manifest.Head, b.Manifest.HeadHash)
	}
	blobs, err := fs.ReadDir(fsys, "blobs")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read bundle %s: %w", dir, err)
	}
	for _, e := range blobs {
		data, err := readRegular(fsys, "blobs/"+e.Name(), -1)
		if err != nil {
			return nil, fmt.Errorf("read bundle %s: %w", dir, err)
		}
		r := cas.Sum(data)
		d := r.Digest()
		if hex.EncodeToString(d[:]) != e.Name() {
			return nil, fmt.Errorf("read bundle %s: blob %s: %w", dir, e.Name(), &cas.CorruptError{Ref: mustRef(e.Name()), Got: r})
		}
		b.Blobs[r] = data
	}
	return b, nil
}

// readModules reads the module files under root (air/modules), each a
// regular file of at most schema.MaxModuleSize bytes.
func readModules(fsys fs.FS, root string) ([]schema.Source, error) {
	var out []schema.Source
	err := fs.WalkDir(fsys, root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if len(out) == maxModuleFiles {
			return fmt.Errorf("%s holds more than %d files", root, maxModuleFiles)
		}
		name := strings.TrimPrefix(path, "air/")
		if !validModulePath(name) {
			return fmt.Errorf("air/%s is not a WASM module's file (modules/<name>-<hex>.wasm)", name)
		}
		data, err := readRegular(fsys, path, schema.MaxModuleSize)
		if err != nil {
			return err
		}
		out = append(out, schema.Source{Name: name, Data: data})
		return nil
	})
	return out, err
}

func mustRef(hexDigest string) cas.Ref {
	r, _ := cas.ParseRef("blake3:" + hexDigest)
	return r
}

// Import writes a bundle's blobs into store and its records into j under
// the bundle's world name, which must have no records yet.
func Import(ctx context.Context, b *Bundle, j journal.Store, store cas.Putter) error {
	// The world is checked first, so that a refused import writes nothing.
	head, err := j.Head(ctx, b.Manifest.World)
	if err != nil {
		return err
	}
	if head.Seq != 0 {
		return fmt.Errorf("import %s: world %s already has %d records; import the bundle into another store (demiurge --store DIR import)", b.Dir, b.Manifest.World, head.Seq)
	}
	refs := make([]cas.Ref, 0, len(b.Blobs))
	for r := range b.Blobs {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, k int) bool { return refs[i].String() < refs[k].String() })
	for _, r := range refs {
		if _, err := store.Put(ctx, b.Blobs[r]); err != nil {
			return fmt.Errorf("import %s: %w", b.Dir, err)
		}
	}
	const batch = 512
	for i := 0; i < len(b.Records); i += batch {
		end := min(i+batch, len(b.Records))
		entries := make([]journal.Entry, 0, end-i)
		for _, r := range b.Records[i:end] {
			entries = append(entries, journal.Entry{Kind: r.Kind, Payload: r.Payload})
		}
		if head, err = j.Append(ctx, b.Manifest.World, head, entries); err != nil {
			return fmt.Errorf("import %s: %w", b.Dir, err)
		}
	}
	if n := len(b.Records); n > 0 && head.Hash != b.Records[n-1].Hash {
		return fmt.Errorf("import %s: the imported chain ends at %s, the bundle's at %s", b.Dir, head.Hash, b.Records[n-1].Hash)
	}
	return nil
}
