package cli

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/demiurge-dev/demiurge/internal/store"
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
