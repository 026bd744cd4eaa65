package eval

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// Runs keeps the reports of eval runs as files in a directory, one
// <run>.json each: where demiurge eval keeps its runs (the evals
// directory of a store on disk), what compare and the web view read.
type Runs struct {
	Dir string
}

// RunInfo is what a list of runs shows of one.
type RunInfo struct {
	Run     string
	Suite   string
	LLM     string
	Started time.Time
	Total   Totals
	Models  []string
}

// ErrNoRun is returned (wrapped) for a run that is not kept.
var ErrNoRun = errors.New("eval: no such run")

var runID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })

// Save writes the report as Dir/<run>.json, atomically (a temporary
// file renamed), and returns its path.
func (rs Runs) Save(r *Report) (string, error) {
	if !runID().MatchString(r.Run) {
		return "", fmt.Errorf("eval: a run id %q: want letters, digits, '.', '_' and '-'", r.Run)
	}
	if err := os.MkdirAll(rs.Dir, 0o755); err != nil {
		return "", fmt.Errorf("eval: keep the run: %w", err)
	}
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		return "", err
	}
	path := filepath.Join(rs.Dir, r.Run+".json")
	tmp, err := os.CreateTemp(rs.Dir, ".run-*.json")
	if err != nil {
		return "", fmt.Errorf("eval: keep the run: %w", err)
	}
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", fmt.Errorf("eval: keep the run: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("eval: keep the run: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("eval: keep the run: %w", err)
	}
	return path, nil
}

// Load reads the run id, or the latest run for "latest" (and the one
// before it for "previous").
func (rs Runs) Load(id string) (*Report, error) {
	switch id {
	case "latest", "previous":
		list, err := rs.List()
		if err != nil {
			return nil, err
		}
		i := 0
		if id == "previous" {
			i = 1
		}
		if len(list) <= i {
			return nil, fmt.Errorf("%w: %s (%s keeps %d)", ErrNoRun, id, rs.Dir, len(list))
		}
		id = list[i].Run
	}
	if !runID().MatchString(id) {
		return nil, fmt.Errorf("%w: %q is not a run id", ErrNoRun, id)
	}
	f, err := os.Open(filepath.Join(rs.Dir, id+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s in %s (demiurge eval runs lists them)", ErrNoRun, id, rs.Dir)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := ReadReport(f)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	return r, nil
}

// List returns the runs kept, the newest first. A file that does not read
// as a report is left out.
func (rs Runs) List() ([]RunInfo, error) {
	entries, err := os.ReadDir(rs.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("eval: list runs: %w", err)
	}
	var out []RunInfo
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		f, err := os.Open(filepath.Join(rs.Dir, name))
		if err != nil {
			continue
		}
		r, err := ReadReport(f)
		f.Close()
		if err != nil {
			continue
		}
		info := RunInfo{Run: r.Run, Suite: r.Suite, LLM: r.LLM, Started: r.Started, Total: r.Total}
		for _, c := range r.Cases {
			if !contains(info.Models, c.Model) {
				info.Models = append(info.Models, c.Model)
			}
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.After(out[j].Started)
		}
		return out[i].Run > out[j].Run
	})
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
