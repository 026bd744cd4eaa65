package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/demiurge-dev/demiurge/journal"
)

// EvalRun is a run of demiurge eval as the store keeps it (the eval_runs
// table): the report of the run, as JSON, and the summary a list of runs
// shows, as JSON. The store does not read either: package eval writes and
// reads them.
type EvalRun struct {
	Run     string
	Started time.Time
	Summary []byte
	// Report is the whole report; EvalRuns leaves it out.
	Report []byte
}

// ErrNoEvalRun is returned (wrapped) by EvalRun for a run the store does
// not keep.
var ErrNoEvalRun = errors.New("pgstore: no such eval run")

// PutEvalRun keeps r, in place of a run of the same name if there is one.
func (s *Store) PutEvalRun(ctx context.Context, r EvalRun) error {
	if r.Run == "" {
		return errors.New("pgstore: an eval run without a name")
	}
	if !s.enter() {
		return journal.ErrClosed
	}
	defer s.users.Done()
	if s.readOnly {
		return journal.ErrReadOnly
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO eval_runs (run, started, summary, report) VALUES ($1, $2, $3, $4)
		ON CONFLICT (run) DO UPDATE SET started = EXCLUDED.started, summary = EXCLUDED.summary, report = EXCLUDED.report, kept = now()`,
		r.Run, r.Started, r.Summary, r.Report)
	if err != nil {
		return s.wrap(fmt.Errorf("pgstore: keep eval run %s: %w", r.Run, err))
	}
	return nil
}

// EvalRun returns the run named run, with its report; an error wrapping
// ErrNoEvalRun if the store does not keep it.
func (s *Store) EvalRun(ctx context.Context, run string) (EvalRun, error) {
	if !s.enter() {
		return EvalRun{}, journal.ErrClosed
	}
	defer s.users.Done()
	if s.version < 2 { // a store read as it is, from before eval_runs
		return EvalRun{}, fmt.Errorf("%w: %s (the store at %s keeps none: its tables are of version %d)", ErrNoEvalRun, run, s.name, s.version)
	}
	r := EvalRun{Run: run}
	err := s.pool.QueryRow(ctx, `SELECT started, summary, report FROM eval_runs WHERE run = $1`, run).Scan(&r.Started, &r.Summary, &r.Report)
	if errors.Is(err, pgx.ErrNoRows) {
		return EvalRun{}, fmt.Errorf("%w: %s", ErrNoEvalRun, run)
	}
	if err != nil {
		return EvalRun{}, s.wrap(fmt.Errorf("pgstore: read eval run %s: %w", run, err))
	}
	return r, nil
}

// EvalRuns returns the runs the store keeps, the newest first (by
// Started, then by name), without their reports.
func (s *Store) EvalRuns(ctx context.Context) ([]EvalRun, error) {
	if !s.enter() {
		return nil, journal.ErrClosed
	}
	defer s.users.Done()
	if s.version < 2 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT run, started, summary FROM eval_runs ORDER BY started DESC, run DESC`)
	if err != nil {
		return nil, s.wrap(fmt.Errorf("pgstore: list eval runs: %w", err))
	}
	defer rows.Close()
	var out []EvalRun
	for rows.Next() {
		var r EvalRun
		if err := rows.Scan(&r.Run, &r.Started, &r.Summary); err != nil {
			return nil, s.wrap(fmt.Errorf("pgstore: list eval runs: %w", err))
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(fmt.Errorf("pgstore: list eval runs: %w", err))
	}
	return out, nil
}
