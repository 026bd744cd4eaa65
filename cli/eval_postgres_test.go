package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/internal/pgtest"
	"github.com/demiurge-dev/demiurge/tools/workspace"
)

// TestPostgresEval runs examples/evals on a PostgreSQL store (a private
// server): the cases' worlds run in the eval process and land in the
// store, where worlds and trace find them; the runs are kept in the store,
// where eval runs, compare and the web view find them; a deliberately
// broken tool fails the cases that use it and compare puts them first.
func TestPostgresEval(t *testing.T) {
	srv := pgtest.Shared(t)
	pg := pgtest.URL(t)
	ok := run(t, nil, "", "--store", pg, "eval", evalSuite, "--llm", "cassette:"+evalCassettes, "--no-progress")
	if ok.code != 0 || !strings.Contains(ok.stdout, "demiurge-agent: 8 of 8 passed") {
		t.Fatalf("eval on PostgreSQL: exit %d\n%s\n%s", ok.code, ok.stdout, ok.stderr)
	}
	var out, errs strings.Builder
	code := Run(t.Context(), []string{"--store", pg, "eval", evalSuite, "--llm", "cassette:" + evalCassettes, "--no-progress"},
		strings.NewReader(""), &out, &errs, WithAdapter(workspace.EffectCall, brokenWorkspace{}), WithEnv(func(string) string { return "" }))
	if code != exitFailure {
		t.Fatalf("eval with a broken tool: exit %d\n%s\n%s", code, out.String(), errs.String())
	}
	var failing []string
	for _, m := range regexp.MustCompile(`(?m)^FAIL (\S+) \[gpt-5-mini\]`).FindAllStringSubmatch(out.String(), -1) {
		failing = append(failing, m[1])
	}
	if want := []string{"edit-plan", "shopping-list", "write-note"}; !slices.Equal(failing, want) {
		t.Errorf("failing cases %q, want %q:\n%s", failing, want, out.String())
	}
	// The hint names the store: the world is in it.
	world := regexp.MustCompile(`world (eval-\S+\.write-note\.gpt-5-mini): demiurge --store \S+ ui`).FindStringSubmatch(out.String())
	if world == nil {
		t.Fatalf("no world named for write-note:\n%s", out.String())
	}
	for _, s := range []string{ok.stdout, ok.stderr, out.String(), errs.String()} {
		srv.Scrub(t, "eval's output", s)
	}

	// The worlds are in the store.
	r := mustRun(t, 0, "", "--store", pg, "worlds")
	if n := strings.Count(r.stdout, ".write-note.gpt-5-mini: "); n != 2 {
		t.Errorf("worlds lists %d write-note worlds, want 2:\n%s", n, r.stdout)
	}
	r = mustRun(t, 0, "", "--store", pg, "trace", "--world", world[1])
	if !strings.Contains(r.stdout, "workspace_write") || !strings.Contains(r.stdout, "the workspace is read-only") {
		t.Errorf("trace of %s:\n%s", world[1], r.stdout)
	}

	// The runs are kept in the store.
	r = mustRun(t, 0, "", "--store", pg, "eval", "runs", "--json")
	var runs []struct {
		Run   string `json:"run"`
		Total struct {
			Passed int `json:"passed"`
		} `json:"total"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) != 2 || runs[0].Total.Passed != 5 || runs[1].Total.Passed != 8 {
		t.Fatalf("eval runs --json: %s (%v)", r.stdout, err)
	}
	r = run(t, nil, "", "--store", pg, "eval", "compare", "previous", "latest")
	if r.code != exitFailure {
		t.Fatalf("compare: exit %d, want %d\n%s%s", r.code, exitFailure, r.stdout, r.stderr)
	}
	var changes []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(l); len(f) >= 5 && (f[4] == "regressed" || f[4] == "passing") {
			changes = append(changes, f[0]+" "+f[4])
		}
	}
	if want := []string{"edit-plan regressed", "shopping-list regressed", "write-note regressed",
		"count-todos passing", "journal-height passing", "list-plans passing", "refuse-key passing", "sort-words passing"}; !slices.Equal(changes, want) {
		t.Errorf("compare's rows %q, want %q:\n%s", changes, want, r.stdout)
	}
	mustRun(t, 0, "", "--store", pg, "eval", "compare", runs[1].Run, runs[1].Run, "--json")
	if r := run(t, nil, "", "--store", pg, "eval", "compare", "nosuchrun", "latest"); r.code != exitFailure || !strings.Contains(r.stderr, "no such run: nosuchrun in the eval_runs table of") {
		t.Errorf("compare of a run not kept: exit %d, %s", r.code, r.stderr)
	}

	// The web view lists the runs and opens them.
	base, c := serveUI(t, pg)
	page := get(t, c, base+"/evals")
	for _, id := range []string{runs[0].Run, runs[1].Run} {
		if !strings.Contains(page, `href="/evals/`+id+`"`) {
			t.Errorf("the list of eval runs lacks %s:\n%s", id, page)
		}
	}
	page = get(t, c, base+"/evals/"+runs[0].Run)
	if !strings.Contains(page, `href="/w/`+world[1]+`"`) || !strings.Contains(page, "the workspace has no file notes/hello.md") {
		t.Errorf("run %s's page:\n%s", runs[0].Run, page)
	}
	if page := get(t, c, base+"/w/"+world[1]); !strings.Contains(page, "workspace_write") {
		t.Errorf("the world's timeline:\n%s", page)
	}
}

// serveUI runs demiurge ui on store until the test ends and returns its
// address and a client that holds its token.
func serveUI(t *testing.T, store string) (string, *http.Client) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		execute(ctx, []string{"--store", store, "ui"}, stdio{in: strings.NewReader(""), out: pw, err: io.Discard}, func(string) string { return "" })
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("demiurge ui still runs after Ctrl-C")
		}
	})
	sc := bufio.NewScanner(pr)
	var link string
	for sc.Scan() && link == "" {
		link = regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{64}`).FindString(sc.Text())
	}
	if link == "" {
		t.Fatal("demiurge ui printed no link")
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	get(t, c, link)
	return strings.TrimSuffix(link[:strings.Index(link, "?")], "/"), c
}

// get fetches url with c and returns the page; a status other than 200
// fails the test.
func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", url, resp.StatusCode, b)
	}
	return string(b)
}
