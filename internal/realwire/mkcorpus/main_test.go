package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoCorpus is the repository's recordings.
var repoCorpus = filepath.Join("..", "..", "..", "adapters", "llm", "testdata", "realwire")

// recorded is what a recording says of itself.
type recorded struct {
	Source struct{ Repo, Commit, Path, License string }
	Vendor string
	API    string
	Notes  string
}

func readRecording(t *testing.T, path string) recorded {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r recorded
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

func sameAs(t *testing.T, e Entry, r recorded, withNotes bool) {
	t.Helper()
	if r.Source.Repo != e.Source.Repo || r.Source.Commit != e.Source.Commit || r.Source.Path != e.Source.Path ||
		r.Source.License != e.Source.License || r.Vendor != e.Vendor || r.API != e.API || (withNotes && r.Notes != e.Notes) {
		t.Errorf("%s: the recording says %+v %s %s, the manifest %+v %s %s", e.Name, r.Source, r.Vendor, r.API, e.Source, e.Vendor, e.API)
	}
}

// TestManifest: the embedded manifest reads, lists the 63 recordings of
// the extended corpus (42 restored, 21 converted), and its repository
// list is exactly the recordings the repository keeps, each with the
// source, vendor, api and notes the recording gives.
func TestManifest(t *testing.T) {
	m, err := readManifest(manifestJSON)
	if err != nil {
		t.Fatal(err)
	}
	history, converted := m.counts()
	if history != 42 || converted != 21 {
		t.Errorf("%d restored, %d converted; want 42 and 21", history, converted)
	}
	files, err := filepath.Glob(filepath.Join(repoCorpus, "*", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings in %s: %v", repoCorpus, err)
	}
	var inRepo, listed []string
	for _, f := range files {
		rel, _ := filepath.Rel(repoCorpus, f)
		inRepo = append(inRepo, strings.TrimSuffix(filepath.ToSlash(rel), ".json"))
	}
	for _, e := range m.Repository {
		listed = append(listed, e.Name)
		sameAs(t, e, readRecording(t, filepath.Join(repoCorpus, filepath.FromSlash(e.Name)+".json")), true)
	}
	slices.Sort(listed)
	if !slices.Equal(inRepo, listed) {
		t.Errorf("the repository keeps %v; the manifest lists %v", inRepo, listed)
	}
	readme := string(readme(m))
	for _, e := range m.Extended {
		if !strings.Contains(readme, "`"+e.Name+".json`") {
			t.Errorf("README.md does not list %s", e.Name)
		}
	}
}

// TestCorpusMatchesManifest: the extended corpus DEMIURGE_REALWIRE names
// holds exactly the manifest's recordings, each with its golden file and
// the source the manifest gives.
func TestCorpusMatchesManifest(t *testing.T) {
	dir := os.Getenv("DEMIURGE_REALWIRE")
	if dir == "" {
		t.Skip("set DEMIURGE_REALWIRE to the extended realwire corpus to run this test")
	}
	m, err := readManifest(manifestJSON)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var have, listed []string
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		have = append(have, strings.TrimSuffix(filepath.ToSlash(rel), ".json"))
	}
	for _, e := range m.Extended {
		listed = append(listed, e.Name)
		p := filepath.Join(dir, filepath.FromSlash(e.Name))
		if _, err := os.Stat(p + ".json"); err != nil {
			continue // reported below
		}
		sameAs(t, e, readRecording(t, p+".json"), e.From == "cassette")
		if _, err := os.Stat(p + ".golden"); err != nil {
			t.Errorf("%s has no golden file: %v", e.Name, err)
		}
	}
	slices.Sort(listed)
	if !slices.Equal(have, listed) {
		t.Errorf("%s holds %d recordings, the manifest lists %d:\nonly in the corpus %v\nonly in the manifest %v",
			dir, len(have), len(listed), minus(have, listed), minus(listed, have))
	}
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// TestBadManifest: a manifest that cannot build the corpus is refused,
// saying what is wrong.
func TestBadManifest(t *testing.T) {
	good := `{"restore": {"commit": "c^", "dir": "d"}, "extended": [ENTRY], "repository": []}`
	src := `"source": {"repo": "pydantic/pydantic-ai", "commit": "` + strings.Repeat("0", 40) + `", "path": "p.yaml", "license": "MIT"}`
	for _, tc := range []struct{ entry, want string }{
		{`{"name": "a/b", "from": "cassette", ` + src + `, "vendor": "v", "api": "chat", "notes": "n"}`, ""},
		{`{"name": "a/../b", "from": "cassette", ` + src + `, "vendor": "v", "api": "chat", "notes": "n"}`, "not SOURCE/NAME"},
		{`{"name": "a/b", "from": "web", ` + src + `, "vendor": "v", "api": "chat", "notes": "n"}`, "not history or cassette"},
		{`{"name": "a/b", "from": "cassette", ` + src + `, "vendor": "v", "api": "chat"}`, "only a pydantic-ai cassette with notes"},
		{`{"name": "a/b", "from": "history", "source": {"repo": "x/y", "commit": "abc", "path": "p"}, "vendor": "v", "api": "chat"}`, "40-hex commit"},
		{`{"name": "a/b", "from": "history", ` + src + `, "api": "chat"}`, "no vendor"},
		{`{"name": "a/b", "from": "history", ` + src + `, "vendor": "v", "api": "chat", "extra": 1}`, "unknown field"},
	} {
		_, err := readManifest([]byte(strings.Replace(good, "ENTRY", tc.entry, 1)))
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.entry, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.entry, err, tc.want)
		}
	}
	twice := strings.Replace(good, "ENTRY", `{"name": "a/b", "from": "history", `+src+`, "vendor": "v", "api": "chat"}, {"name": "a/b", "from": "history", `+src+`, "vendor": "v", "api": "chat"}`, 1)
	if _, err := readManifest([]byte(twice)); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a name twice: %v", err)
	}
}

// TestOutNotEmpty: the corpus is built in a new directory, never over
// one (whose golden files it would put back as they were).
func TestOutNotEmpty(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(io.Discard, "p", ".", dir, "", ""); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("-out into a directory holding a file: %v", err)
	}
}

// TestUsage: the command says how to run it when asked wrongly.
func TestUsage(t *testing.T) {
	var out bytes.Buffer
	for _, args := range [][5]string{{"", ".", "x", "", ""}, {"p", ".", "", "", ""}, {"p", ".", "x", "y", ""}} {
		if err := run(&out, args[0], args[1], args[2], args[3], args[4]); err == nil || !strings.Contains(err.Error(), "usage:") {
			t.Errorf("%q: %v", args, err)
		}
	}
}
