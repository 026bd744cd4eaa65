package eval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer/demiurge"
	"github.com/demiurge-dev/demiurge/tools/workspace"
	"github.com/demiurge-dev/demiurge/tools/workspace/history"
	"github.com/demiurge-dev/demiurge/world"
)

// Options configure Run.
type Options struct {
	// Storage is the store the cases' worlds are made in, one new world
	// per case, model and run. Required.
	Storage world.Storage
	// Agent are more options for every world: the program's tools,
	// reducers and adapters, the environment, a logger.
	Agent []agent.Option
	// Models, if set, replace every case's models.
	Models []string
	// NewModel makes the model a case's model name is reached with (a
	// provider, its base URL, its options); nil is agent.Model{Name:
	// name}, OpenAI's Responses API with the environment's key.
	NewModel func(name string) (agent.Model, error)
	// Cassettes, if set, answers the model calls from recordings under
	// this directory (see CassetteDir) instead of a model, strictly
	// unless Loose is set.
	Cassettes string
	Loose     bool
	// LooseHint is how the program's user makes the cassettes loose,
	// which a mismatch's error names (default: Command --cassette-loose).
	LooseHint string
	// Command is how the program's user runs a suite, which the advice of
	// a cassette's mismatch names (record the case again: Command SUITE
	// --case NAME --record DIR); default "demiurge eval".
	Command string
	// suiteDir is the suite's directory, for that advice.
	suiteDir string
	// Record, if set, keeps each case's first run as a cassette under
	// this directory (see CassetteDir): its world, exported.
	Record string
	// Runs is how many times each case runs with each model (default 1).
	Runs int
	// Concurrency bounds how many cases run at once (default 4).
	Concurrency int
	// PassRate is the share of a case's runs that must pass for the case
	// to pass (default 1: all).
	PassRate float64
	// RunID names the run (default: the time and 4 random hex digits);
	// the worlds are eval-<RunID>.<case>.<model>[.<run>].
	RunID string
	// LLM says in the report what answered: a provider, or cassette:DIR.
	LLM string
	// Store names the store in the report.
	Store string
	// Now is the clock of the report's times (default time.Now).
	Now func() time.Time
	// Progress, if set, is called after each case's run ends, from the
	// goroutine that ran it, one call at a time.
	Progress func(Progress)
}

// Progress is how far a Run has got.
type Progress struct {
	Done, Total, Failed int
	// Last is the run that just ended, and the case it is of.
	Case *Case
	Last *RunResult
}

// DefaultConcurrency is how many cases Run runs at once by default.
const DefaultConcurrency = 4

// ErrNoRecording is returned (wrapped) for a case whose cassette is not
// in the cassettes' directory.
var ErrNoRecording = errors.New("eval: no recording")

// CassetteDir is where a case's recording with a model is kept under
// dir: dir/<case>/<model>, the model's name with characters other than
// letters, digits, '.', '_' and '-' made '_'. The judge's recording of
// its rubric checks is beside it, in <model>.judge.
func CassetteDir(dir, caseID, model string) string {
	return filepath.Join(dir, caseID, safeName(model))
}

var unsafe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]`) })

func safeName(s string) string {
	s = unsafe().ReplaceAllString(s, "_")
	if s == "" || s[0] == '.' || s[0] == '_' || s[0] == '-' {
		s = "m" + s
	}
	return s
}

// NewRunID makes a run's id from the time t and 4 random hex digits:
// 20260102-150405-a1b2.
func NewRunID(t time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return t.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// job is one run of one case with one model.
type job struct {
	c     *Case
	model string
	run   int // from 1
	slot  *CaseResult
}

// Run runs the suite's cases, each with each model Options.Runs times,
// in a fresh world of Options.Storage, Options.Concurrency at a time,
// and reports what every check found. An error is returned for options
// that cannot work (no storage), and ErrInterrupted, with the report of
// what ran, when ctx ends first; a case that cannot run (its manifest does
// not load, its recording is missing) is reported as failed with the
// reason.
func Run(ctx context.Context, s *Suite, opts Options) (*Report, error) {
	if opts.Storage == nil {
		return nil, errors.New("eval: Options.Storage is nil: give the store the cases' worlds go in")
	}
	if opts.Cassettes != "" && opts.Record != "" {
		return nil, errors.New("eval: recording a run answered from cassettes records nothing new: give Record or Cassettes, not both")
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	runs := max(opts.Runs, 1)
	conc := opts.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	rate := opts.PassRate
	if rate <= 0 || rate > 1 {
		rate = 1
	}
	opts.suiteDir = s.Dir
	if opts.Command == "" {
		opts.Command = "demiurge eval"
	}
	if opts.LooseHint == "" {
		opts.LooseHint = opts.Command + " --cassette-loose"
	}
	if opts.RunID == "" {
		opts.RunID = NewRunID(now())
	}
	started := now()
	rep := &Report{Version: ReportVersion, Run: opts.RunID, Suite: s.Name, Dir: s.Dir, Started: started.UTC(),
		LLM: opts.LLM, Store: opts.Store, Runs: runs, PassRate: rate, Concurrency: conc}
	var jobs []job
	for _, c := range s.Cases {
		models := c.Models
		if len(opts.Models) > 0 {
			models = opts.Models
		}
		for _, m := range models {
			cr := &CaseResult{Case: c.ID, Model: m, File: c.File, Description: c.Description, Skipped: c.Skip}
			rep.Cases = append(rep.Cases, cr)
			if c.Skip != "" {
				continue
			}
			for r := 1; r <= runs; r++ {
				jobs = append(jobs, job{c: c, model: m, run: r, slot: cr})
			}
		}
	}
	results := make([]*RunResult, len(jobs))
	var (
		mu       sync.Mutex
		done     int
		failed   int
		progress = opts.Progress
	)
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(conc, max(len(jobs), 1)) {
		wg.Go(func() {
			for i := range work {
				if ctx.Err() != nil {
					continue // not run
				}
				j := jobs[i]
				r := runCase(ctx, j, &opts, runs)
				results[i] = r
				mu.Lock()
				done++
				if !r.Pass {
					failed++
				}
				if progress != nil {
					progress(Progress{Done: done, Total: len(jobs), Failed: failed, Case: j.c, Last: r})
				}
				mu.Unlock()
			}
		})
	}
feed:
	for i := range jobs {
		if ctx.Err() != nil {
			break
		}
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	for i, j := range jobs {
		r := results[i]
		if r == nil { // never started: the run was cancelled
			r = &RunResult{Run: j.run, World: worldName(opts.RunID, j.c.ID, j.model, j.run, runs), Error: "not run: " + ErrInterrupted.Error()}
		}
		j.slot.Runs = append(j.slot.Runs, r)
	}
	for _, cr := range rep.Cases {
		cr.summarize(rate)
	}
	rep.Duration = Duration(now().Sub(started))
	rep.total()
	if ctx.Err() != nil {
		return rep, fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(ctx))
	}
	return rep, nil
}

// ErrInterrupted is returned (wrapped), with the report of what ran, by
// a Run whose ctx ended before every case ran: the cases under way were
// stopped (their worlds say so) and the rest were not run.
var ErrInterrupted = errors.New("eval: the run was interrupted")

// worldName is the world of one run of a case.
func worldName(runID, caseID, model string, run, runs int) string {
	name := "eval-" + runID + "." + caseID + "." + safeName(model)
	if runs > 1 {
		name += fmt.Sprintf(".%d", run)
	}
	if len(name) > journal.MaxWorldLen-len(".judge") {
		sum := cas.Sum([]byte(name)).Digest()
		name = name[:journal.MaxWorldLen-len(".judge")-9] + "-" + hex.EncodeToString(sum[:4])
	}
	return name
}

// caseRun is one run of a case under way.
type caseRun struct {
	j      job
	opts   *Options
	res    *RunResult
	w      *agent.World
	judgeW *agent.World
	judged int // rubric checks graded so far: the judge's chat ids
	// args are the whole arguments of the calls, by call id.
	args map[string]string
	// all gathers every turn's subject for the case's own checks.
	all subject
	// sess reads the world's journal, turn after turn, from nextSeq on:
	// the commands bash scripts ran.
	sess    *session.Reader
	nextSeq uint64
}

// runCase runs one job: it never panics, and reports what went wrong.
func runCase(ctx context.Context, j job, opts *Options, runs int) (res *RunResult) {
	res = &RunResult{Run: j.run, World: worldName(opts.RunID, j.c.ID, j.model, j.run, runs)}
	t0 := time.Now()
	defer func() {
		if p := recover(); p != nil {
			res.Error = fmt.Sprintf("eval: a panic running the case: %v\n%s", p, debug.Stack())
		}
		res.Duration = Duration(time.Since(t0))
		res.Pass = res.Error == "" && !slices.ContainsFunc(res.Checks, func(c CheckResult) bool { return !c.Pass })
	}()
	ctx, cancel := context.WithTimeoutCause(ctx, j.c.Timeout, fmt.Errorf("the case took longer than its timeout, %s", j.c.Timeout))
	defer cancel()
	cr := &caseRun{j: j, opts: opts, res: res, args: map[string]string{}}
	defer cr.close()
	if err := cr.open(ctx); err != nil {
		res.Error = err.Error()
		return res
	}
	if err := cr.seed(ctx); err != nil {
		res.Error = err.Error()
		return res
	}
	for i, t := range j.c.Turns {
		sub, err := cr.turn(ctx, i, t)
		if err != nil {
			res.Error = fmt.Sprintf("turn %d: %v", i+1, err)
			return res
		}
		cr.checks(ctx, sub, t.Checks, i)
		if sub.outcome == string(agent.OutcomeFailed) && !slices.ContainsFunc(t.Checks, func(c *Check) bool { return c.Kind == "outcome" }) {
			// A turn that failed unexpectedly: the turns after it would
			// run on a broken conversation. Their checks are not made.
			why := fmt.Sprintf("not made: turn %d failed", i+1)
			for k, later := range j.c.Turns[i+1:] {
				for _, c := range later.Checks {
					res.Checks = append(res.Checks, CheckResult{Turn: i + 2 + k, Kind: c.Kind, Name: c.Name, Where: fmt.Sprintf("%s:%d", c.File, c.Line), Problem: why})
				}
			}
			for _, c := range j.c.Checks {
				res.Checks = append(res.Checks, CheckResult{Kind: c.Kind, Name: c.Name, Where: fmt.Sprintf("%s:%d", c.File, c.Line), Problem: why})
			}
			return res
		}
	}
	if len(j.c.Checks) > 0 {
		cr.checks(ctx, &cr.all, j.c.Checks, -1)
	}
	if opts.Record != "" && j.run == 1 {
		if err := cr.record(ctx); err != nil {
			res.Error = err.Error()
		}
	}
	return res
}

// model is the model the case runs with: a cassette, or the provider's.
func (cr *caseRun) model(name, dir string) (agent.Model, error) {
	if cr.opts.Cassettes != "" {
		if _, err := os.Stat(filepath.Join(dir, "journal.cbor")); err != nil {
			return agent.Model{}, fmt.Errorf("%w of case %s with model %s in %s (record it: demiurge eval SUITE --record %s, with the model's key)",
				ErrNoRecording, cr.j.c.ID, name, dir, cr.opts.Cassettes)
		}
		m := agent.Cassette(dir)
		if cr.opts.Loose {
			m = agent.CassetteLoose(dir)
		}
		m.Name = name
		m.CassetteLooseHint = cr.opts.LooseHint
		m.CassetteAdvice = cr.mismatchAdvice(name)
		return m, nil
	}
	if cr.opts.NewModel != nil {
		return cr.opts.NewModel(name)
	}
	return agent.Model{Name: name}, nil
}

// mismatchAdvice is what the error of a model call the case's cassette
// refuses ends with: what the user does about it, with the command that
// records the case again.
func (cr *caseRun) mismatchAdvice(model string) string {
	rec := fmt.Sprintf("%s %s --case %s", cr.opts.Command, shellQuote(cr.opts.suiteDir), shellQuote(cr.j.c.ID))
	if len(cr.opts.Models) > 0 {
		rec += " --model " + shellQuote(model)
	}
	rec += " --record " + shellQuote(cr.opts.Cassettes)
	return fmt.Sprintf("Case %s now makes a model call its cassette did not record. If a tool, the prompt or the manifest broke, fix it; "+
		"if the new behaviour is right, record the case again with its model (%s, with the model's key) and review the cassette's diff; "+
		"%s answers from the recording all the same.", cr.j.c.ID, rec, cr.opts.LooseHint)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// open opens the case's world.
func (cr *caseRun) open(ctx context.Context) error {
	c := cr.j.c
	m, err := cr.model(cr.j.model, CassetteDir(cr.opts.Cassettes, c.ID, cr.j.model))
	if err != nil {
		return err
	}
	o := []agent.Option{agent.WithStorage(cr.opts.Storage), agent.WithWorld(cr.res.World), agent.WithModel(m), agent.WithLimits(c.Limits)}
	if c.Instructions != "" {
		o = append(o, agent.WithInstructions(c.Instructions))
	}
	w, err := agent.Open(ctx, c.Manifest, append(o, cr.opts.Agent...)...)
	if err != nil {
		return fmt.Errorf("open the case's world: %w", err)
	}
	cr.w = w
	return nil
}

func (cr *caseRun) close() {
	for _, w := range []*agent.World{cr.judgeW, cr.w} {
		if w != nil {
			_ = w.Close()
		}
	}
}

// seed writes the case's files into the chat's workspace, as one
// version, before the first turn.
func (cr *caseRun) seed(ctx context.Context) error {
	c := cr.j.c
	if c.SeedDir == "" && len(c.Files) == 0 {
		return nil
	}
	st := cr.w.Storage().CAS()
	var root cas.Ref
	var err error
	if c.SeedDir != "" {
		var skipped []string
		root, _, err = workspace.ImportDir(ctx, st, c.SeedDir, "", func(p, reason string) { skipped = append(skipped, p+": "+reason) })
		if err != nil {
			return fmt.Errorf("workspace dir %s: %w", c.SeedDir, err)
		}
		if len(skipped) > 0 {
			return fmt.Errorf("workspace dir %s: cannot hold %s", c.SeedDir, strings.Join(skipped, "; "))
		}
	} else if root, err = workspace.EmptyRoot(ctx, st); err != nil {
		return err
	}
	for _, p := range sortedKeys(c.Files) {
		if root, _, err = workspace.WriteBytes(ctx, st, root, p, []byte(c.Files[p]), 0o644); err != nil {
			return fmt.Errorf("workspace file %s: %w", p, err)
		}
	}
	w := cr.w.World()
	commit, _ := json.Marshal(map[string]any{
		"workspace": "default", "expected_head": 0,
		"meta": map[string]any{"root_hash": root.String(), "owner": "eval", "created_at": "1970-01-01T00:00:00Z"},
	})
	if _, err := w.SendJSON(ctx, history.CommitSchema, commit); err != nil {
		return fmt.Errorf("seed the workspace: %w", err)
	}
	if err := w.WaitIdle(ctx); err != nil {
		return fmt.Errorf("seed the workspace: %w", err)
	}
	h, err := cr.history("default")
	if err != nil {
		return fmt.Errorf("seed the workspace: %w", err)
	}
	if v, ok := h.Version(h.Latest); !ok || v.RootHash != root {
		return fmt.Errorf("seed the workspace: the world did not record it (does the manifest route %s to %s?)", history.CommitSchema, history.Module)
	}
	return nil
}

func (cr *caseRun) history(ws string) (history.History, error) {
	v, _, ok := cr.w.World().State(history.Module, ws)
	if !ok {
		return history.History{}, nil
	}
	return history.Decode(v)
}

// readFile reads a file of a workspace of the case's world, at its latest
// version.
func (cr *caseRun) readFile(ctx context.Context, ws, p string) ([]byte, bool, error) {
	h, err := cr.history(ws)
	if err != nil {
		return nil, false, fmt.Errorf("workspace %s: %w", ws, err)
	}
	v, ok := h.Version(h.Latest)
	if !ok {
		return nil, false, nil
	}
	b, _, err := workspace.ReadBytes(ctx, cr.w.Storage().CAS(), v.RootHash, p, nil)
	switch {
	case errors.Is(err, workspace.ErrNotFound), errors.Is(err, workspace.ErrIsDir), errors.Is(err, workspace.ErrNotDir):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("workspace %s: %s: %w", ws, p, err)
	}
	return b, true, nil
}

// turn sends the i-th message and gathers what its turn did.
func (cr *caseRun) turn(ctx context.Context, i int, t Turn) (*subject, error) {
	c := cr.j.c
	var copts []agent.ChatOption
	if len(c.Tools) > 0 {
		copts = append(copts, agent.AllowTools(c.Tools...))
	}
	if c.ToolChoice != "" {
		tc, _ := agent.ParseToolChoice(c.ToolChoice)
		copts = append(copts, agent.DefaultToolChoice(tc))
	}
	chat := cr.w.Chat(mainChat, copts...)
	s := &subject{readFile: cr.readFile, judge: cr.judge}
	tr := TurnResult{User: t.User}
	var end *agent.TurnEnd
	var errs, notices []string
	var direct []call
	started := map[string]int{} // call id → index in direct
	rounds := map[uint64]bool{}
	modelCalls := uint64(0)
	t0 := time.Now()
	for e, err := range chat.Send(ctx, t.User) {
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
				return nil, cause
			}
			return nil, err
		}
		switch e := e.(type) {
		case agent.Message:
			if e.Role == "assistant" {
				rounds[e.Round] = true
			}
		case agent.ModelCall:
			modelCalls++
		case agent.ToolCallStarted:
			rounds[e.Round] = true
			cl := call{tool: e.Tool, raw: e.Arguments, id: e.CallID, via: viaDirect}
			if e.Ref != nil {
				tc, err := demiurge.ToolCallOf(ctx, cr.w.Storage().CAS(), demiurge.Entry{Kind: demiurge.EntryToolCall, Ref: e.Ref, Text: e.Arguments, Tool: &e.Tool, CallID: &e.CallID})
				if err == nil {
					cl.raw = tc.ArgumentsJSON
				}
			}
			cl.args = argsOf(cl.raw)
			cr.args[e.CallID] = cl.raw
			started[e.CallID] = len(direct)
			direct = append(direct, cl)
		case agent.ToolCallFinished:
			if k, ok := started[e.CallID]; ok {
				direct[k].status = e.Status
			}
		case agent.TurnError:
			errs = append(errs, e.Text)
		case agent.Notice:
			notices = append(notices, e.Text)
		case agent.GuardStop:
			errs = append(errs, "stopped: "+e.Reason)
		case agent.TurnEnd:
			end = &e
		}
		s.events = append(s.events, e)
	}
	s.latency = time.Since(t0)
	if end == nil {
		if cause := context.Cause(ctx); ctx.Err() != nil && cause != nil {
			return nil, cause
		}
		return nil, errors.New("the turn's stream ended without its end")
	}
	commands, err := cr.commands(ctx, end.RequestID)
	if err != nil {
		return nil, fmt.Errorf("read the commands its bash scripts ran: %w", err)
	}
	for _, d := range direct {
		s.calls = append(s.calls, d)
		s.calls = append(s.calls, commands[d.id]...)
	}
	s.answer = end.Answer
	s.outcome, s.finish = string(end.Outcome), end.Finish
	s.rounds = max(modelCalls, uint64(len(rounds)))
	s.usage, s.tokens = end.Usage, end.Usage.Prompt+end.Usage.Completion
	s.cost, s.costUnknown, s.usageUnknown = end.CostMicroUSD, end.CostUnknown, end.UsageUnknown
	tr.Answer, tr.Outcome, tr.Finish, tr.RequestID, tr.Seq = s.answer, s.outcome, s.finish, end.RequestID, end.Seq
	tr.Rounds, tr.Usage, tr.CostMicroUSD, tr.Duration = s.rounds, end.Usage, s.cost, Duration(s.latency)
	tr.CallsCostUnknown, tr.CallsUsageUnknown = s.costUnknown, s.usageUnknown
	tr.ToolCalls = len(direct)
	tr.Errors, tr.Notices = errs, notices
	if ctx.Err() != nil {
		if cause := context.Cause(ctx); cause != nil {
			tr.Errors = append(tr.Errors, cause.Error())
		}
	}
	r := cr.res
	r.Turns = append(r.Turns, tr)
	r.Rounds += s.rounds
	r.Usage = addUsage(r.Usage, s.usage)
	r.CostMicroUSD += s.cost
	r.CallsCostUnknown += s.costUnknown
	r.CallsUsageUnknown += s.usageUnknown
	// The case as a whole, for its own checks.
	a := &cr.all
	a.readFile, a.judge = cr.readFile, cr.judge
	a.events = append(a.events, s.events...)
	a.calls = append(a.calls, s.calls...)
	a.answer, a.outcome, a.finish = s.answer, s.outcome, s.finish
	a.rounds += s.rounds
	a.usage = addUsage(a.usage, s.usage)
	a.tokens += s.tokens
	a.cost += s.cost
	a.costUnknown += s.costUnknown
	a.usageUnknown += s.usageUnknown
	a.latency += s.latency
	// A turn that failed fails the case, unless the turn checks its
	// outcome itself.
	if s.outcome == string(agent.OutcomeFailed) && !slices.ContainsFunc(t.Checks, func(c *Check) bool { return c.Kind == "outcome" }) {
		why := "it ended failed"
		if len(errs) > 0 {
			why = firstLine(errs[0])
			if len(errs) > 1 || strings.Contains(errs[0], "\n") {
				why += " (the turn's errors follow)"
			}
		}
		r.Checks = append(r.Checks, CheckResult{Turn: i + 1, Kind: "outcome", Name: "the turn does not fail", Problem: "the turn failed: " + why})
	}
	return s, nil
}

// mainChat is the chat of the case's turns.
const mainChat = "main"

// commands returns the tool commands that the bash scripts of turn
// request ran, by the call id of the script's call, as the world's
// journal records them (each command's call and exit status in the
// script's receipt): the journal is read on from where the last turn
// left it.
func (cr *caseRun) commands(ctx context.Context, request uint64) (map[string][]call, error) {
	if cr.sess == nil {
		cr.sess = session.NewReader(cr.w.Storage().CAS())
		cr.nextSeq = 1
	}
	err := cr.w.Storage().Journal().Read(ctx, cr.res.World, cr.nextSeq, func(rec journal.Record) error {
		cr.nextSeq = rec.Seq + 1
		return cr.sess.Record(rec)
	})
	if err != nil {
		return nil, err
	}
	out := map[string][]call{}
	for _, t := range cr.sess.Turns() {
		if t.Chat != mainChat || t.RequestID != request {
			continue
		}
		for _, rd := range t.Rounds {
			for _, tc := range rd.Calls {
				for _, cmd := range tc.Commands {
					status := "ok"
					if cmd.ExitCode != 0 || cmd.Error != "" {
						status = "error"
					}
					out[tc.CallID] = append(out[tc.CallID], call{tool: cmd.Tool, raw: cmd.Arguments, args: argsOf(cmd.Arguments),
						status: status, via: viaBash, in: tc.Tool, id: tc.CallID})
				}
			}
		}
	}
	return out, nil
}

// argsOf decodes a call's arguments: nil if they are no JSON object.
func argsOf(raw string) map[string]any {
	var args map[string]any
	if json.Unmarshal([]byte(raw), &args) != nil {
		return nil
	}
	return args
}

// checks makes the checks of turn i (-1: of the case) and notes what
// they found.
func (cr *caseRun) checks(ctx context.Context, s *subject, checks []*Check, i int) {
	for _, c := range checks {
		cres := CheckResult{Turn: i + 1, Kind: c.Kind, Name: c.Name, Where: fmt.Sprintf("%s:%d", c.File, c.Line)}
		problem, err := c.run(ctx, s)
		switch {
		case err != nil:
			cres.Problem = "could not check: " + err.Error()
		case problem != "":
			cres.Problem = problem
		default:
			cres.Pass = true
		}
		cr.res.Checks = append(cr.res.Checks, cres)
	}
}

// record exports the case's world (and its judge's) as cassettes under
// Options.Record.
func (cr *caseRun) record(ctx context.Context) error {
	dir := CassetteDir(cr.opts.Record, cr.j.c.ID, cr.j.model)
	for _, x := range []struct {
		w   *agent.World
		dir string
	}{{cr.w, dir}, {cr.judgeW, dir + ".judge"}} {
		if err := os.RemoveAll(x.dir); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		if x.w == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(x.dir), 0o755); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		if _, err := x.w.Export(ctx, x.dir); err != nil {
			return fmt.Errorf("record: %w", err)
		}
	}
	cr.res.Recorded = dir
	return nil
}
