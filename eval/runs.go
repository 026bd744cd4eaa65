package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/internal/readall"
	"github.com/demiurge-dev/demiurge/pgstore"
)

// RunStore keeps the reports of eval runs where demiurge eval compare,
// eval runs and the web view find them: files in a directory beside a
// store on disk (Runs), or a table of a PostgreSQL store (PostgresRuns).
type RunStore interface {
	// Save keeps the report, in place of a run of the same id, and says
	// where it is kept.
	Save(ctx context.Context, r *Report) (where string, err error)
	// Load reads the run id, or the latest run for "latest" (and the one
	// before it for "previous"); an error wrapping ErrNoRun if there is
	// no such run.
	Load(ctx context.Context, id string) (*Report, error)
	// List returns the runs kept, the newest first.
	List(ctx context.Context) ([]RunInfo, error)
	// Where names where the runs are kept, for messages.
	Where() string
}

// Runs keeps the reports of eval runs as files in a directory, one
// <run>.json each: where demiurge eval keeps its runs in a store on disk
// (its evals directory).
type Runs struct {
	Dir string
}

// RunInfo is what a list of runs shows of one.
type RunInfo struct {
	Run     string    `json:"run"`
	Suite   string    `json:"suite"`
	LLM     string    `json:"llm"`
	Started time.Time `json:"started"`
	Models  []string  `json:"models"`
	Total   Totals    `json:"total"`
}

// infoOf is what a list shows of r.
func infoOf(r *Report) RunInfo {
	info := RunInfo{Run: r.Run, Suite: r.Suite, LLM: r.LLM, Started: r.Started, Total: r.Total, Models: []string{}}
	for _, c := range r.Cases {
		if !contains(info.Models, c.Model) {
			info.Models = append(info.Models, c.Model)
		}
	}
	return info
}

// ErrNoRun is returned (wrapped) for a run that is not kept.
var ErrNoRun = errors.New("eval: no such run")

var runID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })

func checkRunID(id string) error {
	if !runID().MatchString(id) {
		return fmt.Errorf("eval: a run id %q: want letters, digits, '.', '_' and '-'", id)
	}
	return nil
}

// resolveRun turns latest and previous into the id of a run that list
// holds; other ids are returned as they are.
func resolveRun(ctx context.Context, rs RunStore, id string) (string, error) {
	if id != "latest" && id != "previous" {
		return id, nil
	}
	list, err := rs.List(ctx)
	if err != nil {
		return "", err
	}
	i := 0
	if id == "previous" {
		i = 1
	}
	if len(list) <= i {
		return "", fmt.Errorf("%w: %s (%s keeps %d)", ErrNoRun, id, rs.Where(), len(list))
	}
	return list[i].Run, nil
}

// Where is the directory.
func (rs Runs) Where() string { return rs.Dir }

// Save writes the report as Dir/<run>.json, atomically (a temporary
// file renamed), and returns its path.
func (rs Runs) Save(_ context.Context, r *Report) (string, error) {
	if err := checkRunID(r.Run); err != nil {
		return "", err
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
func (rs Runs) Load(ctx context.Context, id string) (*Report, error) {
	id, err := resolveRun(ctx, rs, id)
	if err != nil {
		return nil, err
	}
	if !runID().MatchString(id) {
		return nil, fmt.Errorf("%w: %q is not a run id", ErrNoRun, id)
	}
	f, _, err := readall.Open(filepath.Join(rs.Dir, id+".json"), "a kept run", maxReportBytes)
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
func (rs Runs) List(context.Context) ([]RunInfo, error) {
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
		f, _, err := readall.Open(filepath.Join(rs.Dir, name), "a kept run", maxReportBytes)
		if err != nil {
			continue // a FIFO or device among the runs is left out too
		}
		r, err := ReadReport(f)
		f.Close()
		if err != nil {
			continue
		}
		out = append(out, infoOf(r))
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.After(out[j].Started)
		}
		return out[i].Run > out[j].Run
	})
	return out, nil
}

// PostgresRuns keeps the reports of eval runs in a PostgreSQL store's
// eval_runs table (pgstore.Store.PutEvalRun): where demiurge eval keeps
// its runs in a PostgreSQL store, beside the cases' worlds.
type PostgresRuns struct {
	Store *pgstore.Store
}

// Where names the table.
func (rs PostgresRuns) Where() string { return "the eval_runs table of " + rs.Store.Name() }

// Save keeps the report in the table.
func (rs PostgresRuns) Save(ctx context.Context, r *Report) (string, error) {
	if err := checkRunID(r.Run); err != nil {
		return "", err
	}
	var report bytes.Buffer
	if err := r.WriteJSON(&report); err != nil {
		return "", err
	}
	summary, err := json.Marshal(infoOf(r))
	if err != nil {
		return "", err
	}
	if err := rs.Store.PutEvalRun(ctx, pgstore.EvalRun{Run: r.Run, Started: r.Started, Summary: summary, Report: report.Bytes()}); err != nil {
		return "", fmt.Errorf("eval: keep the run: %w", err)
	}
	return rs.Where(), nil
}

// Load reads the run id (or latest, previous) from the table.
func (rs PostgresRuns) Load(ctx context.Context, id string) (*Report, error) {
	id, err := resolveRun(ctx, rs, id)
	if err != nil {
		return nil, err
	}
	row, err := rs.Store.EvalRun(ctx, id)
	if errors.Is(err, pgstore.ErrNoEvalRun) {
		return nil, fmt.Errorf("%w: %s in %s (demiurge eval runs lists them)", ErrNoRun, id, rs.Where())
	}
	if err != nil {
		return nil, err
	}
	r, err := ReadReport(bytes.NewReader(row.Report))
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	return r, nil
}

// List returns the runs the table keeps, the newest first. A row whose
// summary does not read is left out.
func (rs PostgresRuns) List(ctx context.Context) ([]RunInfo, error) {
	rows, err := rs.Store.EvalRuns(ctx)
	if err != nil {
		return nil, err
	}
	var out []RunInfo
	for _, row := range rows {
		var info RunInfo
		if json.Unmarshal(row.Summary, &info) != nil || info.Run != row.Run {
			continue
		}
		out = append(out, info)
	}
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
