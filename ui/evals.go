package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/demiurge-dev/demiurge/eval"
)

// EvalRuns is where the view reads eval runs: demiurge eval keeps each
// run's report in the store's evals directory (eval.Runs), or in a
// PostgreSQL store's eval_runs table (eval.PostgresRuns). Its methods
// must be safe for concurrent use; the view never writes through it.
type EvalRuns interface {
	// List returns the runs, the newest first.
	List(ctx context.Context) ([]eval.RunInfo, error)
	// Load returns a run's report; an unknown run is an error wrapping
	// eval.ErrNoRun.
	Load(ctx context.Context, run string) (*eval.Report, error)
}

// evalRow is one run in the list of runs.
type evalRow struct {
	eval.RunInfo
	Started string
}

// evals lists the store's eval runs, the newest first.
func (s *Server) evals(w http.ResponseWriter, r *http.Request) {
	if s.evalRuns == nil {
		s.fail(w, r, http.StatusNotFound, errors.New("this view shows no eval runs (demiurge ui shows those demiurge eval keeps in the store)"))
		return
	}
	list, err := s.evalRuns.List(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, fmt.Errorf("list the eval runs: %w", err))
		return
	}
	rows := make([]evalRow, len(list))
	for i, ri := range list {
		rows[i] = evalRow{RunInfo: ri, Started: ri.Started.UTC().Format("2006-01-02 15:04:05 UTC")}
	}
	s.render(w, r, "evals.html", page{Title: "eval runs", Tab: "evals", Data: rows})
}

// evalCase is a case of a run as its page shows it.
type evalCase struct {
	*eval.CaseResult
	Result  string
	Checks  string // passed/all of its runs' checks
	Cost    string
	Latency string
	Failing []*eval.RunResult
	// Notes are its turns' notices (a loose cassette answered a call that
	// differs from the recording), each "turn T: …" ("run R, turn T: …"
	// when the case ran more than once).
	Notes []string
}

// evalRun shows one eval run: its cases, each linked to its worlds, and
// what failed.
func (s *Server) evalRun(w http.ResponseWriter, r *http.Request) {
	if s.evalRuns == nil {
		s.fail(w, r, http.StatusNotFound, errors.New("this view shows no eval runs"))
		return
	}
	id := r.PathValue("run")
	rep, err := s.evalRuns.Load(r.Context(), id)
	if errors.Is(err, eval.ErrNoRun) {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("%w; the list of runs is at /evals", err))
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	var cases []evalCase
	for _, cr := range rep.Cases {
		c := evalCase{CaseResult: cr, Cost: costText(uint64(cr.Mean.CostMicroUSD+0.5), cr.CallsCostUnknown > 0), Latency: durationOf(cr.Mean.Duration.Std())}
		switch {
		case cr.Skipped != "":
			c.Result = "skipped"
		case cr.Pass && cr.Passed == len(cr.Runs):
			c.Result = "pass"
		case cr.Pass:
			c.Result = fmt.Sprintf("pass %d/%d", cr.Passed, len(cr.Runs))
		case len(cr.Runs) > 1:
			c.Result = fmt.Sprintf("FAIL %d/%d", cr.Passed, len(cr.Runs))
		default:
			c.Result = "FAIL"
		}
		n, all := 0, 0
		for _, run := range cr.Runs {
			all += len(run.Checks)
			for _, ch := range run.Checks {
				if ch.Pass {
					n++
				}
			}
			if !run.Pass {
				c.Failing = append(c.Failing, run)
			}
			for i, t := range run.Turns {
				for _, n := range t.Notices {
					where := fmt.Sprintf("turn %d", i+1)
					if len(cr.Runs) > 1 {
						where = fmt.Sprintf("run %d, %s", run.Run, where)
					}
					c.Notes = append(c.Notes, where+": "+n)
				}
			}
		}
		c.Checks = fmt.Sprintf("%d/%d", n, all)
		cases = append(cases, c)
	}
	data := struct {
		*eval.Report
		Started, Duration, Cost string
		Cases                   []evalCase
	}{rep, rep.Started.UTC().Format(time.RFC3339), durationOf(rep.Duration.Std()),
		costText(rep.Total.CostMicroUSD, rep.Total.CallsCostUnknown > 0), cases}
	s.render(w, r, "evalrun.html", page{Title: "eval run " + rep.Run, Tab: "evals", Data: data})
}

// durationOf formats d as duration does milliseconds.
func durationOf(d time.Duration) string { return duration(float64(d) / float64(time.Millisecond)) }
