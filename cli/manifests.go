package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/world"
)

// manifestsFile is the file in a store's directory that says which
// manifest (AIR directory) each world was last run with: what the web
// view's approve command names, since the journal keeps the manifest's
// hash, not where its files are. It is a hint for people, never read to
// run a world.
const manifestsFile = "manifests.json"

// maxManifestsFile bounds what manifestOf reads of it.
const maxManifestsFile = 1 << 20

// rememberManifest notes in the store's directory that world runs the
// manifest at path (made absolute). Only a store on disk keeps it; a
// failure to write it is not an error (it is a hint).
func (a *app) rememberManifest(world, path string) {
	if a.storeDir == "" || store.IsURL(a.storeDir) {
		return
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return
	}
	m := a.readManifests()
	if m[world] == abs {
		return
	}
	m[world] = abs
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return
	}
	file := filepath.Join(a.storeDir, manifestsFile)
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		a.log.Debug("note the world's manifest", "err", err)
		return
	}
	if err := os.Rename(tmp, file); err != nil {
		a.log.Debug("note the world's manifest", "err", err)
		_ = os.Remove(tmp)
	}
}

// readManifests reads manifestsFile: world → manifest path (empty when
// there is none, or it is not a regular file that parses).
func (a *app) readManifests() map[string]string {
	m := map[string]string{}
	file := filepath.Join(a.storeDir, manifestsFile)
	if st, err := os.Lstat(file); err != nil || !st.Mode().IsRegular() || st.Size() > maxManifestsFile {
		return m
	}
	b, err := os.ReadFile(file)
	if err != nil || json.Unmarshal(b, &m) != nil {
		return map[string]string{}
	}
	return m
}

// manifestOf returns the manifest world was last run with, "" if not
// known (ui.Options.Manifest).
func (a *app) manifestOf(world string) string {
	if store.IsURL(a.storeDir) {
		return ""
	}
	return a.readManifests()[world]
}

// manifestArg is manifestOf as a command's argument: shell-quoted, or
// MANIFEST when not known.
func (a *app) manifestArg(world string) string {
	if m := a.manifestOf(world); m != "" {
		return shellQuote(m)
	}
	return "MANIFEST"
}

// noteMove says on stderr that opening world w with the manifest at
// path moved it from the manifest it ran before (a Manifest record now
// in its journal), naming the old one by the path it was last run from
// when the store's directory remembers it. A world that runs another
// AIR from now on is not something to do silently: the next command
// that opens it with the first manifest moves it back.
func (a *app) noteMove(w *world.World, path string) {
	if w == nil {
		return
	}
	from, ok := w.MovedFrom()
	if !ok {
		return
	}
	old := from.Short()
	if p := a.manifestOf(w.Name()); p != "" {
		old = displayPath(p) + " (" + from.Short() + ")"
	}
	a.notef("world %s moves from manifest %s to %s (%s), recorded in its journal; give --world NAME to keep a world for each manifest",
		w.Name(), old, displayPath(path), w.Catalog().ManifestRef().Short())
}

// displayPath is path relative to the working directory when it is
// under it, else as it is.
func displayPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel
	}
	return abs
}
