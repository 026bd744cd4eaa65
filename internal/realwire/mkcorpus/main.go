// Command mkcorpus builds the extended realwire corpus: the recordings of
// real provider traffic the repository may not keep (fetched data lives
// only in the steering repository's shared directory), in the layout
// DEMIURGE_REALWIRE names (adapters/llm/testdata/realwire/README.md).
//
// Its manifest (manifest.json beside this file, embedded) lists every
// recording of the corpus with its source: repository, commit, path. Each
// is made one of two ways:
//
//   - "history": restored, with its golden file, from this repository's
//     history (the commit "restore" names, before the recordings left the
//     repository), read with git;
//   - "cassette": converted from a pydantic/pydantic-ai cassette (vcrpy
//     YAML) at the commit the manifest gives, by internal/realwire/vcr.
//
// Then it writes the corpus's README.md, listing them. The golden files of
// the converted recordings (and the new form of the restored ones) are
// the adapter's output: write them with
//
//	DEMIURGE_REALWIRE=DIR go test ./adapters/llm -run TestRealwire -update
//
// Usage:
//
//	go run ./internal/realwire/mkcorpus -pydantic-ai GIT -out DIR
//	go run ./internal/realwire/mkcorpus -pydantic-ai GIT -check DIR
//
// GIT is a clone (bare or not) of github.com/pydantic/pydantic-ai holding
// the manifest's commit; -demiurge (default ".") is this repository; DIR
// of -out must be new or empty. With
// -check nothing is written: each recording made is compared byte for
// byte with the one in DIR, every pydantic-ai recording restored from
// history and every one the repository keeps (the manifest's
// "repository" list) with its conversion, and the differences listed; the
// exit status is 1 if there is any.
package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/demiurge-dev/demiurge/internal/realwire/vcr"
)

//go:embed manifest.json
var manifestJSON []byte

// Manifest lists the recordings of the extended corpus and, for
// checking the converter, those the repository keeps.
type Manifest struct {
	// Restore is where the "history" recordings are: a commit of this
	// repository and the directory they were in.
	Restore struct {
		Commit string `json:"commit"`
		Dir    string `json:"dir"`
	} `json:"restore"`
	Extended   []Entry `json:"extended"`
	Repository []Entry `json:"repository"`
}

// counts returns how many of the extended corpus's recordings are
// restored from the repository's history and how many are converted.
func (m *Manifest) counts() (history, converted int) {
	for _, e := range m.Extended {
		if e.From == "history" {
			history++
		} else {
			converted++
		}
	}
	return history, converted
}

// Entry is one recording.
type Entry struct {
	// Name is its path in the corpus without .json ("pydantic-ai/x").
	Name string `json:"name"`
	// From is "history" or "cassette" (empty in the repository list).
	From   string `json:"from,omitempty"`
	Source struct {
		Repo    string `json:"repo"`
		Commit  string `json:"commit"`
		Path    string `json:"path"`
		License string `json:"license"`
	} `json:"source"`
	Vendor string `json:"vendor"`
	API    string `json:"api"`
	// Interactions are the cassette's interactions kept (all if empty).
	Interactions []int `json:"interactions,omitempty"`
	// Notes says what the recording shows; a pydantic-ai recording has
	// them, so that it can be converted.
	Notes string `json:"notes,omitempty"`
}

func (e Entry) convertible() bool {
	return e.Source.Repo == "pydantic/pydantic-ai" && e.Notes != ""
}

func (e Entry) spec() vcr.Spec {
	return vcr.Spec{Repo: e.Source.Repo, Commit: e.Source.Commit, Path: e.Source.Path, License: e.Source.License,
		Vendor: e.Vendor, API: e.API, Notes: e.Notes, Interactions: e.Interactions}
}

var (
	validName = regexp.MustCompile(`^[a-z0-9_-]+/[A-Za-z0-9_.-]+$`)
	validHex  = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// readManifest reads and checks a manifest.
func readManifest(b []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if m.Restore.Commit == "" || m.Restore.Dir == "" {
		return nil, errors.New("manifest: restore needs a commit and a dir")
	}
	seen := map[string]bool{}
	for _, list := range [][]Entry{m.Extended, m.Repository} {
		for _, e := range list {
			switch {
			case !validName.MatchString(e.Name) || strings.Contains(e.Name, ".."):
				return nil, fmt.Errorf("manifest: the name %q is not SOURCE/NAME", e.Name)
			case seen[e.Name]:
				return nil, fmt.Errorf("manifest: %s twice", e.Name)
			case e.Source.Repo == "" || !validHex.MatchString(e.Source.Commit) || e.Source.Path == "":
				return nil, fmt.Errorf("manifest: %s: the source needs a repository, a 40-hex commit and a path", e.Name)
			case e.Vendor == "" || e.API == "":
				return nil, fmt.Errorf("manifest: %s: no vendor or api", e.Name)
			}
			seen[e.Name] = true
		}
	}
	for _, e := range m.Extended {
		switch e.From {
		case "history":
		case "cassette":
			if !e.convertible() {
				return nil, fmt.Errorf("manifest: %s: only a pydantic-ai cassette with notes converts", e.Name)
			}
		default:
			return nil, fmt.Errorf("manifest: %s: from %q is not history or cassette", e.Name, e.From)
		}
	}
	for _, e := range m.Repository {
		if e.From != "" || !e.convertible() {
			return nil, fmt.Errorf("manifest: %s: a repository entry is a pydantic-ai cassette with notes, without from", e.Name)
		}
	}
	return &m, nil
}

// gitShow returns the blob REV:PATH of the repository at dir.
func gitShow(dir, rev, p string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("git", "-C", dir, "cat-file", "blob", rev+":"+p)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git -C %s cat-file blob %s:%s: %v: %s", dir, rev, p, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// builder makes the corpus's files.
type builder struct {
	m          *Manifest
	pydanticAI string // git dir of pydantic/pydantic-ai
	demiurge   string // this repository
}

func (b *builder) convert(e Entry) ([]byte, error) {
	y, err := gitShow(b.pydanticAI, e.Source.Commit, e.Source.Path)
	if err != nil {
		return nil, err
	}
	out, err := vcr.Convert(y, e.spec())
	if err != nil {
		return nil, fmt.Errorf("%s (%s): %w", e.Name, e.Source.Path, err)
	}
	return out, nil
}

func (b *builder) restore(e Entry, ext string) ([]byte, error) {
	return gitShow(b.demiurge, b.m.Restore.Commit, path.Join(b.m.Restore.Dir, e.Name+ext))
}

// files returns the corpus: each file's path under the corpus and its
// bytes, in the manifest's order, README.md last.
func (b *builder) files() ([]string, map[string][]byte, error) {
	var names []string
	files := map[string][]byte{}
	add := func(name string, data []byte) {
		names = append(names, name)
		files[name] = data
	}
	for _, e := range b.m.Extended {
		switch e.From {
		case "history":
			rec, err := b.restore(e, ".json")
			if err != nil {
				return nil, nil, err
			}
			if err := checkSource(rec, e); err != nil {
				return nil, nil, err
			}
			golden, err := b.restore(e, ".golden")
			if err != nil {
				return nil, nil, err
			}
			add(e.Name+".json", rec)
			add(e.Name+".golden", golden)
		case "cassette":
			rec, err := b.convert(e)
			if err != nil {
				return nil, nil, err
			}
			add(e.Name+".json", rec)
		}
	}
	add("README.md", readme(b.m))
	return names, files, nil
}

// checkSource makes sure a restored recording is the one the manifest
// names.
func checkSource(rec []byte, e Entry) error {
	var r struct {
		Source struct{ Repo, Commit, Path string }
		Vendor string
		API    string
	}
	if err := json.Unmarshal(rec, &r); err != nil {
		return fmt.Errorf("%s: %w", e.Name, err)
	}
	if r.Source.Repo != e.Source.Repo || r.Source.Commit != e.Source.Commit || r.Source.Path != e.Source.Path || r.Vendor != e.Vendor || r.API != e.API {
		return fmt.Errorf("%s: restored, its source is %s@%s:%s (%s %s), the manifest says %s@%s:%s (%s %s)", e.Name,
			r.Source.Repo, r.Source.Commit, r.Source.Path, r.Vendor, r.API, e.Source.Repo, e.Source.Commit, e.Source.Path, e.Vendor, e.API)
	}
	return nil
}

func main() {
	pyd := flag.String("pydantic-ai", "", "a clone (bare or not) of github.com/pydantic/pydantic-ai holding the manifest's commit")
	dem := flag.String("demiurge", ".", "this repository (its history holds the restored recordings)")
	out := flag.String("out", "", "write the corpus into this directory")
	check := flag.String("check", "", "compare what would be written with this directory, write nothing")
	manifest := flag.String("manifest", "", "read this manifest instead of the embedded one")
	flag.Parse()
	if err := run(os.Stdout, *pyd, *dem, *out, *check, *manifest); err != nil {
		fmt.Fprintln(os.Stderr, "mkcorpus:", err)
		os.Exit(1)
	}
}

var errDiffer = errors.New("differences found")

func run(w io.Writer, pyd, dem, out, check, manifest string) error {
	if pyd == "" || (out == "") == (check == "") {
		return errors.New("usage: mkcorpus -pydantic-ai GIT (-out DIR | -check DIR) [-demiurge REPO] [-manifest FILE]")
	}
	mb := manifestJSON
	if manifest != "" {
		var err error
		if mb, err = os.ReadFile(manifest); err != nil {
			return err
		}
	}
	m, err := readManifest(mb)
	if err != nil {
		return err
	}
	if out != "" {
		if ents, err := os.ReadDir(out); err == nil && len(ents) > 0 {
			return fmt.Errorf("%s is not empty: build the corpus in a new directory (its golden files would be put back as they were at %s, and -update must write them again)", out, m.Restore.Commit)
		}
	}
	b := &builder{m: m, pydanticAI: pyd, demiurge: dem}
	names, files, err := b.files()
	if err != nil {
		return err
	}
	history, converted := m.counts()
	if out != "" {
		for _, n := range names {
			p := filepath.Join(out, filepath.FromSlash(n))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, files[n], 0o644); err != nil {
				return err
			}
		}
		fmt.Fprintf(w, "%s: %d recordings (%d restored from %s with their golden files, %d converted from pydantic/pydantic-ai) and README.md\n",
			out, len(m.Extended), history, m.Restore.Commit, converted)
		fmt.Fprintf(w, "now write the golden files: DEMIURGE_REALWIRE=%s go test ./adapters/llm -run TestRealwire -update\n", abs(out))
		return nil
	}
	return b.check(w, check, names, files)
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// check compares the corpus made with dir's, and each pydantic-ai
// recording kept elsewhere (restored from history, or in the repository)
// with its conversion.
func (b *builder) check(w io.Writer, dir string, names []string, files map[string][]byte) error {
	differ := 0
	same := 0
	for _, n := range names {
		if n == "README.md" || strings.HasSuffix(n, ".golden") {
			continue // the goldens are -update's; README.md is written here
		}
		have, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(n)))
		switch {
		case err != nil:
			fmt.Fprintf(w, "missing   %s: %v\n", n, err)
			differ++
		case !bytes.Equal(have, files[n]):
			fmt.Fprintf(w, "differs   %s: %s\n", n, firstDifference(have, files[n]))
			differ++
		default:
			same++
		}
	}
	fmt.Fprintf(w, "%s: %d of %d recordings as made here, byte for byte\n", dir, same, same+differ)

	conv, convSame := 0, 0
	compare := func(e Entry, have []byte, where string) error {
		got, err := b.convert(e)
		if err != nil {
			return err
		}
		conv++
		if bytes.Equal(got, have) {
			convSame++
			return nil
		}
		fmt.Fprintf(w, "converts differently %s (%s): %s\n", e.Name, where, firstDifference(have, got))
		differ++
		return nil
	}
	for _, e := range b.m.Extended {
		if e.From == "history" && e.convertible() {
			if err := compare(e, files[e.Name+".json"], "restored from "+b.m.Restore.Commit); err != nil {
				return err
			}
		}
	}
	for _, e := range b.m.Repository {
		have, err := gitShow(b.demiurge, "HEAD", path.Join(b.m.Restore.Dir, e.Name+".json"))
		if err != nil {
			return err
		}
		if err := compare(e, have, "in the repository"); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "converter: %d of %d pydantic-ai recordings kept elsewhere (restored from history, in the repository) converted byte for byte\n", convSame, conv)
	if differ > 0 {
		return errDiffer
	}
	return nil
}

// firstDifference says where two texts part.
func firstDifference(have, made []byte) string {
	i := 0
	for i < len(have) && i < len(made) && have[i] == made[i] {
		i++
	}
	line := bytes.Count(have[:i], []byte("\n")) + 1
	excerpt := func(b []byte) string {
		e := min(len(b), i+40)
		return fmt.Sprintf("%q", b[i:e])
	}
	return fmt.Sprintf("%d bytes here, %d made; from line %d: here %s, made %s", len(have), len(made), line, excerpt(have), excerpt(made))
}
