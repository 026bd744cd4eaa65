package eval

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/internal/readall"
	"github.com/demiurge-dev/demiurge/tools/workspace"
)

// DefaultTimeout bounds a case that sets no timeout: all its turns and
// checks.
const DefaultTimeout = 5 * time.Minute

// SuiteFiles are the names a suite's shared settings may have, in its
// directory; every other .yaml, .yml or .json file there is a case.
var SuiteFiles = []string{"suite.yaml", "suite.yml", "suite.json"}

// maxFile bounds the size of a suite's file.
const maxFile = 1 << 20

// Suite is a suite of cases, as Load reads it.
type Suite struct {
	// Dir is the suite's directory; Name its name in reports.
	Dir  string
	Name string
	// Description is suite.yaml's.
	Description string
	// Cases are the suite's cases, in file name order.
	Cases []*Case
}

// Case is one case of a suite, its fields filled from the suite's where
// it leaves them out.
type Case struct {
	// ID names the case: its file name without the extension.
	ID string
	// File is the case's file.
	File        string
	Description string
	Tags        []string
	// Skip, if not empty, skips the case, for this reason.
	Skip string
	// Manifest is the agent world's AIR (a path that opens from the
	// working directory).
	Manifest string
	// Models are the models the case runs with, one run each.
	Models []string
	// JudgeModel grades rubric checks ("": the case's model).
	JudgeModel   string
	Instructions string
	// Tools limits the tools the model may call (nil: all).
	Tools      []string
	ToolChoice string
	Limits     agent.Limits
	Timeout    time.Duration
	// Files are written to the workspace before the first turn, over the
	// files of SeedDir if it is set.
	Files   map[string]string
	SeedDir string
	// Turns are the user's messages, each with its checks.
	Turns []Turn
	// Checks are made once the last turn ended: the case's, then the
	// suite's.
	Checks []*Check
}

// Turn is one message of a case and the checks of the turn it starts.
type Turn struct {
	User   string
	Checks []*Check
}

// NumChecks counts the case's checks.
func (c *Case) NumChecks() int {
	n := len(c.Checks)
	for _, t := range c.Turns {
		n += len(t.Checks)
	}
	return n
}

// fileShape is what a case or suite file holds, once it has passed the
// schema.
type fileShape struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Skip        string   `json:"skip"`
	Manifest    string   `json:"manifest"`
	Model       string   `json:"model"`
	Models      []string `json:"models"`
	Judge       *struct {
		Model string `json:"model"`
	} `json:"judge"`
	Instructions string      `json:"instructions"`
	Tools        []string    `json:"tools"`
	ToolChoice   string      `json:"tool_choice"`
	Limits       *limitShape `json:"limits"`
	Timeout      string      `json:"timeout"`
	Workspace    *struct {
		Files map[string]string `json:"files"`
		Dir   string            `json:"dir"`
	} `json:"workspace"`
	User  string `json:"user"`
	Turns []struct {
		User string `json:"user"`
	} `json:"turns"`
}

type limitShape struct {
	MaxRounds   uint64 `json:"max_rounds"`
	MaxTokens   uint64 `json:"max_tokens"`
	MaxRepeats  uint64 `json:"max_repeats"`
	TokenBudget uint64 `json:"token_budget"`
	OutputLimit uint64 `json:"output_limit"`
}

var caseID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })

// Load reads the suite at path: a directory of case files (YAML or JSON,
// one case each, with an optional suite.yaml of what they share), or one
// case file (with its directory's suite.yaml, if any). Every file is
// checked against the published schema (CaseSchema, SuiteSchema) and what
// a schema cannot say (a regular expression that does not compile, a jq
// expression, a path outside the workspace); the error is a LoadErrors
// that names every problem, by file, line and JSON pointer, with how to
// fix it.
func Load(path string) (*Suite, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	dir, only := path, ""
	if !fi.IsDir() {
		dir, only = filepath.Dir(path), filepath.Base(path)
		switch strings.ToLower(filepath.Ext(only)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil, fmt.Errorf("eval: %s is neither a suite's directory nor a case file (NAME.yaml, .yml or .json; see docs/evals.md)", path)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	s := &Suite{Dir: dir, Name: filepath.Base(filepath.Clean(dir))}
	if abs, err := filepath.Abs(dir); err == nil && (s.Name == "." || s.Name == "/") {
		s.Name = filepath.Base(abs)
	}
	var errs LoadErrors
	var suiteFile string
	var caseFiles []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		switch strings.ToLower(filepath.Ext(name)) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		if isSuiteFile(name) {
			if suiteFile != "" {
				errs = append(errs, &LoadError{File: filepath.Join(dir, name), Msg: fmt.Sprintf("a second suite file beside %s: keep one", filepath.Base(suiteFile))})
				continue
			}
			suiteFile = filepath.Join(dir, name)
			continue
		}
		if only != "" && name != only {
			continue
		}
		caseFiles = append(caseFiles, filepath.Join(dir, name))
	}
	if only != "" && isSuiteFile(only) {
		return nil, fmt.Errorf("eval: %s is the suite's shared settings, not a case: give the suite's directory, or a case file", path)
	}
	sort.Strings(caseFiles)
	var base *fileShape
	var baseDoc *doc
	var suiteChecks []*Check
	if suiteFile != "" {
		d, fs, checks, lerrs := readFile(suiteFile, true)
		errs = append(errs, lerrs...)
		if fs != nil {
			base, baseDoc, suiteChecks = fs, d, checks[len(checks)-1]
			if fs.Name != "" {
				s.Name = fs.Name
			}
			s.Description = fs.Description
		}
	}
	if len(caseFiles) == 0 && len(errs) == 0 {
		return nil, fmt.Errorf("eval: %s has no cases: write one file per case (NAME.yaml; see docs/evals.md)", dir)
	}
	ids := map[string]string{}
	for _, f := range caseFiles {
		name := filepath.Base(f)
		id := strings.TrimSuffix(name, filepath.Ext(name))
		if !caseID().MatchString(id) {
			errs = append(errs, &LoadError{File: f, Msg: fmt.Sprintf("the case's name %q (its file name) must be letters, digits, '.', '_' and '-', starting with a letter or digit: rename the file", id)})
			continue
		}
		if other, ok := ids[id]; ok {
			errs = append(errs, &LoadError{File: f, Msg: fmt.Sprintf("a second case %s (%s is the first): rename one of the files", id, filepath.Base(other))})
			continue
		}
		ids[id] = f
		d, fs, checks, lerrs := readFile(f, false)
		errs = append(errs, lerrs...)
		if fs == nil {
			continue
		}
		c, lerrs := makeCase(id, f, d, fs, checks, base, baseDoc)
		errs = append(errs, lerrs...)
		if c != nil {
			c.Checks = append(c.Checks, suiteChecks...)
			s.Cases = append(s.Cases, c)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return s, nil
}

func isSuiteFile(name string) bool {
	for _, s := range SuiteFiles {
		if strings.EqualFold(name, s) {
			return true
		}
	}
	return false
}

// readFile reads, validates and decodes one case or suite file, and
// parses its checks (for a case: the turns' too, by turn; the case's
// own in checks[len(turns)]).
func readFile(file string, suite bool) (*doc, *fileShape, [][]*Check, LoadErrors) {
	b, err := readBounded(file)
	if err != nil {
		return nil, nil, nil, LoadErrors{{File: file, Msg: err.Error()}}
	}
	return parseFile(file, b, suite)
}

// parseFile is readFile of the bytes b of file.
func parseFile(file string, b []byte, suite bool) (*doc, *fileShape, [][]*Check, LoadErrors) {
	d, lerr := readDoc(file, b)
	if lerr != nil {
		return nil, nil, nil, LoadErrors{lerr}
	}
	if _, ok := d.value.(map[string]any); !ok {
		return nil, nil, nil, LoadErrors{d.errAt("", "the file holds %s; a case is a map of fields (user, checks, …)", describeValue(d.value))}
	}
	if errs := validate(d, suite); len(errs) > 0 {
		return nil, nil, nil, errs
	}
	js, err := json.Marshal(d.value)
	if err != nil {
		return nil, nil, nil, LoadErrors{{File: file, Msg: err.Error()}}
	}
	var fs fileShape
	if err := json.Unmarshal(js, &fs); err != nil {
		return nil, nil, nil, LoadErrors{{File: file, Msg: err.Error()}}
	}
	var errs LoadErrors
	var checks [][]*Check
	dir := filepath.Dir(file)
	parse := func(ptr string, turn int) []*Check {
		list, _ := valueAt(d.value, ptr).([]any)
		var out []*Check
		for i, v := range list {
			c, err := parseCheck(d, fmt.Sprintf("%s/%d", ptr, i), v, dir)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			c.Turn = turn
			out = append(out, c)
		}
		return out
	}
	for i := range fs.Turns {
		checks = append(checks, parse(fmt.Sprintf("/turns/%d/checks", i), i))
	}
	checks = append(checks, parse("/checks", -1))
	if fs.Timeout != "" {
		if _, err := time.ParseDuration(fs.Timeout); err != nil {
			errs = append(errs, d.errAt("/timeout", "%q is not a duration: write it as 30s, 2m or 1h30m", fs.Timeout))
		}
	}
	if fs.Workspace != nil {
		for _, p := range sortedKeys(fs.Workspace.Files) {
			if _, err := workspace.CleanPath(p); err != nil {
				errs = append(errs, d.keyAt("/workspace/files/"+escapePointer(p), "%v", err))
			}
		}
		if fs.Workspace.Dir != "" {
			wd := resolve(dir, fs.Workspace.Dir)
			if fi, err := os.Stat(wd); err != nil || !fi.IsDir() {
				errs = append(errs, d.errAt("/workspace/dir", "%s is not a directory (the path is relative to %s)", wd, file))
			}
		}
	}
	if fs.Manifest != "" {
		if _, err := os.Stat(resolve(dir, fs.Manifest)); err != nil {
			errs = append(errs, d.errAt("/manifest", "%s: no such file or directory (the path is relative to %s)", resolve(dir, fs.Manifest), file))
		}
	}
	if fs.ToolChoice != "" {
		if _, err := agent.ParseToolChoice(fs.ToolChoice); err != nil {
			errs = append(errs, d.errAt("/tool_choice", "%v", err))
		}
	}
	if len(errs) > 0 {
		return nil, nil, nil, errs
	}
	return d, &fs, checks, nil
}

func describeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "nothing (null)"
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("the text %q", clip(x, 40))
	default:
		return fmt.Sprintf("the value %v", x)
	}
}

// readBounded reads a suite's, a case's or a check's file: a regular
// file of at most maxFile bytes (a FIFO is refused, not waited on).
func readBounded(file string) ([]byte, error) {
	return readall.File(file, "a suite's file", maxFile)
}

// makeCase fills a case from its file, and the suite's where it is
// silent.
func makeCase(id, file string, d *doc, f *fileShape, checks [][]*Check, base *fileShape, baseDoc *doc) (*Case, LoadErrors) {
	c := &Case{ID: id, File: file, Description: f.Description, Tags: f.Tags, Skip: f.Skip,
		Instructions: f.Instructions, Tools: f.Tools, ToolChoice: f.ToolChoice, Timeout: DefaultTimeout}
	dir := filepath.Dir(file)
	if base == nil {
		base = &fileShape{}
	}
	baseDir := ""
	if baseDoc != nil {
		baseDir = filepath.Dir(baseDoc.file)
	}
	switch {
	case f.Manifest != "":
		c.Manifest = resolve(dir, f.Manifest)
	case base.Manifest != "":
		c.Manifest = resolve(baseDir, base.Manifest)
	default:
		return nil, LoadErrors{d.errAt("", "no manifest: give manifest (the agent's AIR, relative to this file) here or in the suite's suite.yaml")}
	}
	switch {
	case len(f.Models) > 0:
		c.Models = f.Models
	case f.Model != "":
		c.Models = []string{f.Model}
	case len(base.Models) > 0:
		c.Models = base.Models
	case base.Model != "":
		c.Models = []string{base.Model}
	default:
		c.Models = []string{agent.DefaultModel}
	}
	if f.Judge != nil {
		c.JudgeModel = f.Judge.Model
	} else if base.Judge != nil {
		c.JudgeModel = base.Judge.Model
	}
	if c.Instructions == "" {
		c.Instructions = base.Instructions
	}
	if c.Tools == nil {
		c.Tools = base.Tools
	}
	if c.ToolChoice == "" {
		c.ToolChoice = base.ToolChoice
	}
	for _, l := range []*limitShape{base.Limits, f.Limits} {
		if l == nil {
			continue
		}
		c.Limits = agent.Limits{MaxRounds: pick(l.MaxRounds, c.Limits.MaxRounds), MaxTokens: pick(l.MaxTokens, c.Limits.MaxTokens),
			MaxRepeats: pick(l.MaxRepeats, c.Limits.MaxRepeats), TokenBudget: pick(l.TokenBudget, c.Limits.TokenBudget),
			OutputLimit: pick(l.OutputLimit, c.Limits.OutputLimit)}
	}
	for _, t := range []string{base.Timeout, f.Timeout} {
		if t != "" {
			c.Timeout, _ = time.ParseDuration(t)
		}
	}
	if f.Workspace != nil {
		c.Files = f.Workspace.Files
		if f.Workspace.Dir != "" {
			c.SeedDir = resolve(dir, f.Workspace.Dir)
		}
	}
	if f.User != "" {
		c.Turns = []Turn{{User: f.User}}
		// The checks of a one-turn case are its turn's.
		for _, ch := range checks[len(checks)-1] {
			ch.Turn = 0
		}
		c.Turns[0].Checks = checks[len(checks)-1]
	} else {
		for i, t := range f.Turns {
			c.Turns = append(c.Turns, Turn{User: t.User, Checks: checks[i]})
		}
		c.Checks = checks[len(checks)-1]
	}
	return c, nil
}

// resolve is p, relative to dir unless it is absolute.
func resolve(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

func pick(v, old uint64) uint64 {
	if v != 0 {
		return v
	}
	return old
}

// Filter keeps the cases whose ID matches one of the patterns (path.Match
// globs, or the ID itself) and that carry one of the tags, when these are
// given. It returns an error naming the cases there are when none is
// left.
func (s *Suite) Filter(patterns, tags []string) error {
	if len(patterns) == 0 && len(tags) == 0 {
		return nil
	}
	var kept []*Case
	for _, c := range s.Cases {
		if len(patterns) > 0 && !matchAny(c.ID, patterns) {
			continue
		}
		if len(tags) > 0 && !hasAny(c.Tags, tags) {
			continue
		}
		kept = append(kept, c)
	}
	if len(kept) == 0 {
		ids := make([]string, len(s.Cases))
		for i, c := range s.Cases {
			ids[i] = c.ID
		}
		return fmt.Errorf("eval: no case of %s matches --case %s --tag %s; its cases are %s",
			s.Dir, strings.Join(patterns, ","), strings.Join(tags, ","), strings.Join(ids, ", "))
	}
	s.Cases = kept
	return nil
}

func matchAny(id string, patterns []string) bool {
	for _, p := range patterns {
		if ok, _ := filepath.Match(p, id); ok || p == id {
			return true
		}
	}
	return false
}

func hasAny(have, want []string) bool {
	for _, w := range want {
		for _, h := range have {
			if h == w {
				return true
			}
		}
	}
	return false
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
