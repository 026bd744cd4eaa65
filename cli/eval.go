package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/demiurge-dev/demiurge/adapters/llm"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/eval"
	"github.com/demiurge-dev/demiurge/examples"
	"github.com/demiurge-dev/demiurge/internal/readall"
	"github.com/demiurge-dev/demiurge/internal/store"
)

// evalFlags are the flags of demiurge eval.
type evalFlags struct {
	models        []string
	llm           string
	baseURL       string
	modelOptions  []string
	temperature   string
	noStream      bool
	cassetteLoose bool
	record        string
	runs          int
	concurrency   int
	passRate      float64
	cases         []string
	tags          []string
	json          bool
	junit         string
	out           string
	list          bool
	noProgress    bool
}

func newEvalCommand(a *app, getenv func(string) string) *cobra.Command {
	var f evalFlags
	cmd := &cobra.Command{
		Use:   "eval SUITE [--model M[,M…]] [--llm PROVIDER|cassette:DIR] [--runs N] [--concurrency K]",
		Short: "Test an agent: run a suite of cases and check what each turn did",
		Long: `Run the cases of SUITE (a directory of case files, YAML or JSON, one case
each, beside an optional suite.yaml of what they share; or one case file):
each case, with each of its models, in a fresh world of the store, sends its
user messages and checks each turn: the answer (contains, matches, equals,
is JSON valid against a schema), the workspace's files (exist, equal,
contain, match), the tool calls (called with these arguments, not called, at
most N times), how the turn ended, its rounds, tokens, cost and latency, a
jq expression over its events, and a rubric a model grades. docs/evals.md
is the guide; docs/eval-case.schema.json the format.

Cases run --concurrency at a time, each --runs times (the report then gives
each case's pass rate; --pass-rate says how many runs must pass). The report
is a table of the cases (checks, rounds, tokens, cost, latency), then what
failed and the world to open (demiurge ui, trace, fork); --json prints it as
JSON, --junit writes JUnit XML for CI. Every run is kept in the store (its
evals directory, or a PostgreSQL store's eval_runs table): demiurge eval
runs lists them, demiurge eval compare A B says what changed between two,
the regressions first, and demiurge ui shows them.

--record DIR keeps each case's model answers as a cassette (DIR/CASE/MODEL,
the judge's beside it); --llm cassette:DIR runs the suite again from them,
offline, without a key: a model call whose request is not the recorded one
fails the case, showing what differs and the command that records the case
again (--cassette-loose answers it all the same, and the report notes it).
Record with a real model once, commit DIR, and CI checks that a change to the
tools or the manifest keeps every case passing.

--model A,B runs every case with each model (instead of the cases' own) and
compares the first two.

The cases' worlds are made in the store (--store; a store of their own keeps
them apart from others) and run in this process, on a PostgreSQL store too:
each is a new world no worker holds, answered by the model (or cassette) of
its case. Ctrl-C stops the cases under way and runs no more: what ran is
reported and kept.

Exit status: 0 when every case passes, 1 when one fails (or the suite does
not load: every problem is named, file:line: /pointer: what and how to fix),
2 for a usage error, 130 after Ctrl-C.`,
		Example: `  # offline, from the recorded answers (what CI runs)
  demiurge eval examples/evals --llm cassette:examples/evals/cassettes
  # with a real model, recording its answers
  OPENAI_API_KEY=… demiurge eval examples/evals --record examples/evals/cassettes
  # two models side by side, three runs each
  demiurge eval examples/evals --model gpt-5-mini,gpt-5 --runs 3
  demiurge eval compare previous latest`,
		Args: wantArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.eval(cmd, args[0], &f, getenv)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.models, "model", nil, "run every case with the model `M` (a comma-separated list runs each, and compares the first two) instead of the cases' own")
	fl.StringVar(&f.llm, "llm", "", "the model's `PROVIDER`: openai-responses, openai-chat, anthropic, gemini, or cassette:DIR (the answers --record kept) (default: by each model's name)")
	fl.StringVar(&f.baseURL, "base-url", "", "the API's `URL` (default $OPENAI_BASE_URL, else OpenAI's)")
	fl.StringArrayVar(&f.modelOptions, "model-option", nil, "override what demiurge knows of the model, as `KEY=VALUE` (repeatable): "+strings.Join(llm.ModelOptionKeys, ", "))
	fl.StringVar(&f.temperature, "temperature", "", "the sampling `T`emperature (default: the provider's)")
	fl.BoolVar(&f.noStream, "no-stream", false, "ask for whole answers, not streams (for servers that cannot stream)")
	fl.BoolVar(&f.cassetteLoose, "cassette-loose", false, "with --llm cassette:DIR, answer a model call whose request is not the recorded one all the same, noted in the report (default: the case fails, showing what differs)")
	fl.StringVar(&f.record, "record", "", "keep each case's model answers (its first run) as a cassette under `DIR`: DIR/CASE/MODEL")
	fl.IntVar(&f.runs, "runs", 1, "run each case `N` times with each model, and report its pass rate")
	fl.IntVar(&f.concurrency, "concurrency", eval.DefaultConcurrency, "run at most `K` cases at once")
	fl.Float64Var(&f.passRate, "pass-rate", 1, "the `SHARE` of a case's runs that must pass for it to pass, above 0 and at most 1 (0.8: four runs of five)")
	fl.StringArrayVar(&f.cases, "case", nil, "run only the cases named `PATTERN` (a glob over case names; repeatable)")
	fl.StringArrayVar(&f.tags, "tag", nil, "run only the cases tagged `T` (repeatable)")
	fl.BoolVar(&f.json, "json", false, "print the report as one JSON document on one line (docs/eval-report.schema.json) instead of the table")
	fl.StringVar(&f.junit, "junit", "", "write the report as JUnit XML to `FILE` too (for CI)")
	fl.StringVar(&f.out, "out", "", "write the report's JSON to `FILE` too")
	fl.BoolVar(&f.list, "list", false, "list the cases and their checks, and run nothing")
	fl.BoolVar(&f.noProgress, "no-progress", false, "print no progress on stderr")
	cmd.AddCommand(newEvalCompareCommand(a), newEvalRunsCommand(a), newEvalSchemaCommand(a))
	return cmd
}

// evalRuns is where the store h keeps its eval runs: the evals directory
// of a store on disk, the eval_runs table of a PostgreSQL store.
func (a *app) evalRuns(h *store.Handle) eval.RunStore {
	if pg := h.Postgres(); pg != nil {
		return eval.PostgresRuns{Store: pg}
	}
	return eval.Runs{Dir: filepath.Join(a.storeDir, "evals")}
}

// withEvalRuns calls fn with where the store keeps its eval runs: the
// evals directory of a store on disk (the store itself is not opened: its
// runs are files), or the eval_runs table of a PostgreSQL store, opened
// read-only while fn runs.
func (a *app) withEvalRuns(ctx context.Context, fn func(eval.RunStore) error) (err error) {
	if !store.IsURL(a.storeDir) {
		return fn(eval.Runs{Dir: filepath.Join(a.storeDir, "evals")})
	}
	h, err := a.openStore(ctx, true)
	if err != nil {
		return err
	}
	defer closeStore(h, &err)
	return fn(a.evalRuns(h))
}

func (a *app) eval(cmd *cobra.Command, suitePath string, f *evalFlags, getenv func(string) string) (err error) {
	ctx := cmd.Context()
	if f.runs < 1 {
		return usagef("--runs %d: it must be at least 1", f.runs)
	}
	if f.concurrency < 1 {
		return usagef("--concurrency %d: it must be at least 1", f.concurrency)
	}
	if f.passRate <= 0 || f.passRate > 1 {
		return usagef("--pass-rate %v: want a share above 0 and at most 1, such as 0.8", f.passRate)
	}
	cassettes, isCassette := strings.CutPrefix(f.llm, "cassette:")
	if isCassette && f.record != "" {
		return usagef("--record with --llm %s: a run from cassettes records nothing new; record with a model's provider", f.llm)
	}
	if f.cassetteLoose && !isCassette {
		return usagef("--cassette-loose: only with --llm cassette:DIR")
	}
	for _, m := range f.models {
		if strings.TrimSpace(m) == "" {
			return usagef("--model: an empty model name in %q", strings.Join(f.models, ","))
		}
	}
	if !isCassette && f.llm != "" && !llm.IsProvider(f.llm) {
		return usagef("--llm %q: want %s or cassette:DIR", f.llm, strings.Join(llm.Providers(), ", "))
	}
	// The model of each name: the flags and the environment say how it is
	// reached. A bad flag is a usage error now, not one failure per case.
	if _, err := modelOf(f.llm, "probe", f.baseURL, f.modelOptions, f.temperature, f.noStream, getenv); err != nil && !isCassette {
		return err
	}
	s, err := eval.Load(suitePath)
	if err != nil {
		var le eval.LoadErrors
		if errors.As(err, &le) {
			return fmt.Errorf("eval: the suite %s does not load (%s):\n%w", suitePath, plural(len(le), "problem"), err)
		}
		return err
	}
	if err := s.Filter(f.cases, f.tags); err != nil {
		return err
	}
	if f.list {
		return listCases(a.out, s, f.models)
	}
	if isCassette {
		if fi, err := os.Stat(cassettes); err != nil || !fi.IsDir() {
			return fmt.Errorf("eval: --llm %s: no such directory (record one with --record DIR)", f.llm)
		}
	} else {
		for _, m := range append([]string{""}, f.models...)[min(len(f.models), 1):] {
			if err := checkAPIKey(f.llm, m, f.baseURL, getenv); err != nil {
				return fmt.Errorf("eval: %w", err)
			}
		}
	}
	h, err := a.openStore(ctx, false)
	if err != nil {
		return err
	}
	defer closeStore(h, &err)
	// The cases' worlds run here, in this process, on a PostgreSQL store
	// too: each is a new world of its own, which no worker holds (eval
	// registers none with the workers), and each needs its own model or
	// cassette, which a worker's --llm could not give.
	st, err := storage(h)
	if err != nil {
		return err
	}
	opts := eval.Options{
		Storage: st, Models: f.models, Runs: f.runs, Concurrency: f.concurrency, PassRate: f.passRate,
		Record: f.record, LLM: f.llm, Store: a.storeName(),
		Agent: append([]agent.Option{agent.WithLogger(a.log), agent.WithEnv(lookupEnv(getenv)), agent.WithReducers(examples.RegisterAll),
			agent.WithReducers(a.runWASM), agent.WithClock(a.clock, a.entropy)}, a.ext.agentOptions()...),
		NewModel: func(name string) (agent.Model, error) {
			return modelOf(f.llm, name, f.baseURL, f.modelOptions, f.temperature, f.noStream, getenv)
		},
	}
	if isCassette {
		opts.Cassettes, opts.Loose, opts.NewModel = cassettes, f.cassetteLoose, nil
	}
	if !f.noProgress {
		opts.Progress = newEvalProgress(a.err, isTerminal(a.err))
	}
	// Ctrl-C stops the cases under way and runs no more; what ran is
	// reported, kept, and the exit status is 130.
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	defer a.interrupts.handle(stop)()
	rep, err := eval.Run(rctx, s, opts)
	if opts.Progress != nil {
		opts.Progress(eval.Progress{Done: -1})
	}
	interrupted := errors.Is(err, eval.ErrInterrupted) && rep != nil && ctx.Err() == nil
	if err != nil && !interrupted {
		return err
	}
	if _, err := a.evalRuns(h).Save(context.WithoutCancel(ctx), rep); err != nil {
		a.warnf("eval: the run was not kept: %v", err)
	}
	for _, w := range []struct {
		path  string
		write func(io.Writer) error
	}{{f.out, rep.WriteJSON}, {f.junit, rep.WriteJUnit}} {
		if w.path == "" {
			continue
		}
		if err := writeFileWith(w.path, w.write); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
	}
	if f.json {
		if err := rep.WriteJSON(a.out); err != nil {
			return err
		}
	} else {
		command := "demiurge"
		if a.storeDir != defaultStoreDir {
			command += " --store " + a.storeName()
		}
		if err := rep.WriteText(a.out, eval.TextOptions{Command: command}); err != nil {
			return err
		}
		if len(f.models) >= 2 {
			fmt.Fprintln(a.out)
			if err := eval.Compare(rep, rep, f.models[0], f.models[1]).WriteText(a.out); err != nil {
				return err
			}
		}
	}
	if interrupted {
		fmt.Fprintf(a.err, "%s: eval: interrupted: the cases under way were stopped, the rest not run\n", a.progName())
		return &exitStatus{exitInterrupted}
	}
	if !rep.Passed() {
		return &exitStatus{exitFailure}
	}
	return nil
}

// writeFileWith writes a file with write, atomically enough for a
// report: to a temporary file beside it, renamed.
func writeFileWith(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if err := write(tmp); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// listCases prints the cases of s and their checks.
func listCases(w io.Writer, s *eval.Suite, models []string) error {
	fmt.Fprintf(w, "suite %s (%s): %s\n", s.Name, s.Dir, plural(len(s.Cases), "case"))
	for _, c := range s.Cases {
		ms := c.Models
		if len(models) > 0 {
			ms = models
		}
		fmt.Fprintf(w, "\n%s [%s] %s", c.ID, strings.Join(ms, ", "), c.File)
		if c.Skip != "" {
			fmt.Fprintf(w, " (skipped: %s)", c.Skip)
		}
		fmt.Fprintln(w)
		if c.Description != "" {
			fmt.Fprintf(w, "  %s\n", c.Description)
		}
		for i, t := range c.Turns {
			fmt.Fprintf(w, "  turn %d: %s\n", i+1, clipLine(t.User, 70))
			for _, ch := range t.Checks {
				fmt.Fprintf(w, "    - %s\n", ch.Name)
			}
		}
		if len(c.Checks) > 0 {
			fmt.Fprintf(w, "  after the last turn:\n")
			for _, ch := range c.Checks {
				fmt.Fprintf(w, "    - %s\n", ch.Name)
			}
		}
	}
	return nil
}

// newEvalProgress draws a run's progress on w: a bar redrawn in place on
// a terminal, else a line per case that ends. Done -1 ends it.
func newEvalProgress(w io.Writer, tty bool) func(eval.Progress) {
	start := time.Now()
	drawn := false
	return func(p eval.Progress) {
		if p.Done < 0 {
			if drawn {
				fmt.Fprint(w, "\r\033[K")
			}
			return
		}
		if !tty {
			mark := "ok  "
			if !p.Last.Pass {
				mark = "FAIL"
			}
			fmt.Fprintf(w, "eval: %s %s (%d/%d, %.2fs) world %s\n", mark, p.Case.ID, p.Done, p.Total, p.Last.Duration.Std().Seconds(), p.Last.World)
			return
		}
		const width = 30
		n := width * p.Done / max(p.Total, 1)
		bar := strings.Repeat("█", n) + strings.Repeat("░", width-n)
		failed := ""
		if p.Failed > 0 {
			failed = fmt.Sprintf(", %d failed", p.Failed)
		}
		fmt.Fprintf(w, "\r\033[K%s %d/%d%s · %.0fs · %s", bar, p.Done, p.Total, failed, time.Since(start).Seconds(), p.Case.ID)
		drawn = true
	}
}

func newEvalCompareCommand(a *app) *cobra.Command {
	var asJSON bool
	var models []string
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B [--json]",
		Short: "Say what changed between two eval runs, the regressions first",
		Long: `Compare two eval runs case by case (and model by model): which cases pass
in one and fail in the other, and how their tokens, cost and latency moved,
the cases that regressed first, then the totals over the cases both ran.

A run is the id demiurge eval printed (kept in the store: demiurge eval
runs lists them), latest or previous, or the path of a report --out or
--json wrote. With --model A,B the cases of run A with
model A are compared with those of run B with model B (give one run twice
to compare the models of a run made with --model A,B).

Exit status: 1 when a case that passed in A fails in B.`,
		Example: `  demiurge eval compare previous latest
  demiurge eval compare 20260102-150405-a1b2 latest --json
  demiurge eval compare latest latest --model gpt-5-mini,gpt-5`,
		Args: wantArgs(2, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ma, mb string
			switch len(models) {
			case 0:
			case 2:
				ma, mb = models[0], models[1]
			default:
				return usagef("--model %s: want two models, A,B", strings.Join(models, ","))
			}
			var ra, rb *eval.Report
			if err := a.withEvalRuns(cmd.Context(), func(runs eval.RunStore) (err error) {
				if ra, err = loadRun(cmd.Context(), runs, args[0]); err != nil {
					return err
				}
				rb, err = loadRun(cmd.Context(), runs, args[1])
				return err
			}); err != nil {
				return err
			}
			c := eval.Compare(ra, rb, ma, mb)
			if len(c.Rows) == 0 {
				return fmt.Errorf("eval compare: runs %s and %s have no case in common to compare", ra.Run, rb.Run)
			}
			write := c.WriteText
			if asJSON {
				write = c.WriteJSON
			}
			if err := write(a.out); err != nil {
				return err
			}
			if c.Regressions() > 0 {
				return &exitStatus{exitFailure}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as one JSON object (on one line)")
	cmd.Flags().StringSliceVar(&models, "model", nil, "compare run A's cases with model `A` to run B's with model B: A,B")
	return cmd
}

// loadRun reads a kept run by id (or latest, previous) from runs, or a
// report file.
func loadRun(ctx context.Context, runs eval.RunStore, ref string) (*eval.Report, error) {
	if strings.ContainsAny(ref, `/\`) || strings.HasSuffix(ref, ".json") {
		f, _, err := readall.Open(ref, "an eval report", readall.NoLimit) // ReadReport bounds it
		if err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
		defer f.Close()
		r, err := eval.ReadReport(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ref, err)
		}
		return r, nil
	}
	return runs.Load(ctx, ref)
}

func newEvalRunsCommand(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "runs [--json]",
		Short: "List the eval runs the store keeps, the newest first",
		Long: `List the eval runs the store keeps (its evals directory, or a PostgreSQL
store's eval_runs table), the newest first:
each run's id, when it started, its suite, what answered (a provider or a
cassette), its models and how many cases passed. With --json, one JSON
array ([] for none) of {"run", "suite", "llm", "started" (RFC 3339),
"models", "total"} ("total" as in the report: docs/eval-report.schema.json).`,
		Example: `  demiurge eval runs
  demiurge --store ci/.demiurge eval runs --json`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			var list []eval.RunInfo
			var where string
			if err := a.withEvalRuns(cmd.Context(), func(runs eval.RunStore) (err error) {
				list, err = runs.List(cmd.Context())
				where = runs.Where()
				return err
			}); err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []eval.RunInfo{}
				}
				return writeJSON(a.out, list)
			}
			for _, r := range list {
				fmt.Fprintf(a.out, "%s  %s  %s  %s  %d/%d passed  %s\n", r.Run, r.Started.Local().Format("2006-01-02 15:04:05"), r.Suite,
					strings.Join(r.Models, ","), r.Total.Passed, r.Total.Cases-r.Total.Skipped, r.LLM)
			}
			if len(list) == 0 && !asJSON {
				fmt.Fprintf(a.out, "no eval runs in %s yet (demiurge eval SUITE makes one)\n", where)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the runs as one JSON array")
	return cmd
}

func newEvalSchemaCommand(a *app) *cobra.Command {
	var suite bool
	cmd := &cobra.Command{
		Use:   "schema [--suite]",
		Short: "Print the JSON Schema of a case file (or of suite.yaml)",
		Long: `Print the JSON Schema (draft 2020-12) a case file follows, as published in
docs/eval-case.schema.json; --suite prints suite.yaml's
(docs/eval-suite.schema.json). Editors that read JSON Schema complete and
check case files with it.`,
		Example: `  demiurge eval schema > eval-case.schema.json
  demiurge eval schema --suite`,
		Args: wantArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			b := eval.CaseSchema
			if suite {
				b = eval.SuiteSchema
			}
			_, err := a.out.Write(b)
			return err
		},
	}
	cmd.Flags().BoolVar(&suite, "suite", false, "print the schema of suite.yaml")
	return cmd
}
