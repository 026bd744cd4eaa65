package bashfx

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/toolcall"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/tools/workspace"
	"github.com/demiurge-dev/demiurge/world"
)

// crashEnv switches the test binary into the child of TestWorldFilesCrash.
const crashEnv = "DEMIURGE_BASHFX_CRASH_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		if err := crashChild(dir); err != nil {
			fmt.Println("error:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// filesWorld is the test world with the workspace mounted in scripts.
type filesWorld struct {
	cat *schema.Catalog
	st  world.Storage
	svc *workspace.Service
	w   *world.World
}

// openFilesWorld opens the test world on st, its scripts' /workspace the
// service's default workspace (which the test world never records: the
// service keeps its commits as pending, the newest version it knows).
func openFilesWorld(t testing.TB, ctx context.Context, st world.Storage, wrap func(effects.Adapter) effects.Adapter) *filesWorld {
	t.Helper()
	cat := loadCatalog(t)
	fw := newFakeWorld()
	svc := workspace.NewService(st.CAS(), workspace.CellHeads(func(string) (schema.Value, bool) { return nil, false }), nil)
	var tc effects.Adapter = toolcall.New(fw.all()...)
	if wrap != nil {
		tc = wrap(tc)
	}
	grants, err := GrantsFromPlan(cat, "test/tool_plan@1")
	if err != nil {
		t.Fatal(err)
	}
	bash, err := New(Options{Catalog: cat, Tools: fw.all(), Route: mcpRoute, Grants: grants, Workspace: svc,
		Adapters: map[string]effects.Adapter{KindIntrospect: tc, KindWorkspace: tc}})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC)
	w, err := world.Open(ctx, world.Options{
		Name: "files", Catalog: cat, Reducers: reducer.NewRegistry(), Storage: st,
		Adapters: map[string]effects.Adapter{KindScripted: bash, KindIntrospect: tc, KindWorkspace: tc},
		Now:      func() time.Time { return clock },
		Entropy:  bytes.NewReader(make([]byte, 1<<16)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &filesWorld{cat: cat, st: st, svc: svc, w: w}
}

func bashCall(id, script string) []byte {
	return bashCallTimeout(id, script, 10000)
}

// bashCallTimeout is bashCall with the script's time limit.
func bashCallTimeout(id, script string, ms int) []byte {
	return fmt.Appendf(nil, `{"id": %q, "family": "bash", "tool": "bash", "arguments_json": "", "script": %q, "timeout_ms": %d}`, id, script, ms)
}

// toolDone returns the response of each test/ToolDone@1 event, by call id.
func toolDone(t testing.TB, ctx context.Context, st world.Storage, name string) map[string]schema.Value {
	t.Helper()
	done := map[string]schema.Value{}
	err := st.Journal().Read(ctx, name, 1, func(r journal.Record) error {
		if r.Kind != world.KindRaised {
			return nil
		}
		v, err := schema.Decode(r.Payload)
		if err != nil {
			return err
		}
		if schema.FieldPath(v, "schema") == "test/ToolDone@1" {
			ev := schema.FieldPath(v, "value")
			done[schema.FieldPath(ev, "id").(string)] = schema.FieldPath(ev, "response")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return done
}

// TestWorldFiles runs a script that writes, moves and removes files in a
// world: the scripted.run receipt carries one commit, whose diff from the
// version the script started on is exactly what the script did; paths
// outside the workspace cap's path_prefixes are refused with the cap's
// reason; the journal replays from genesis.
func TestWorldFiles(t *testing.T) {
	ctx := t.Context()
	st := world.NewMemoryStorage()
	fw := openFilesWorld(t, ctx, st, nil)
	// Version 1, before the script.
	start, _, err := fw.svc.Update(ctx, "default", func(ctx context.Context, root cas.Ref) (cas.Ref, error) {
		for _, f := range [][2]string{{"notes/keep.md", "keep\n"}, {"notes/old.md", "old\n"}, {"notes/dir/x.txt", "x\n"}, {"README.md", "readme\n"}} {
			var err error
			if root, _, err = workspace.WriteBytes(ctx, fw.svc.Store(), root, f[0], []byte(f[1]), 0); err != nil {
				return cas.Ref{}, err
			}
		}
		return root, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	script := `cd notes
cat keep.md
echo new > new.md
printf 'a\nb\n' > list.txt && sed -i 's/b/B/' list.txt
mv old.md moved.md
rm -r dir
mkdir -p sub/deeper && touch sub/deeper/empty
echo appended >> keep.md
cat ../README.md || echo "read refused: $?"
echo x > ../top.md || echo "write refused: $?"
ls .. || echo "list refused: $?"
rm ../README.md || echo "remove refused: $?"
ls
echo scratch > /tmp/scratch`
	if _, err := fw.w.SendJSON(ctx, "test/ToolCall@1", bashCall("f1", script)); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := fw.w.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	if err := fw.w.Close(); err != nil {
		t.Fatal(err)
	}
	got := checkReceipt(t, fw.cat, effects.OK(AdapterID, toolDone(t, ctx, st, "files")["f1"]))
	wantOut := "keep\nread refused: 1\nwrite refused: 1\nlist refused: 2\nremove refused: 1\nkeep.md\nlist.txt\nmoved.md\nnew.md\nsub\n"
	if got.ExitCode != 0 || got.Stdout != wantOut {
		t.Errorf("exit %d, stdout %q; want 0, %q\nstderr %s", got.ExitCode, got.Stdout, wantOut, got.Stderr)
	}
	for _, want := range []string{
		`cat: ../README.md: Permission denied: cap sys/workspace@1 (grant "notes") refuses workspace.call: path "README.md" is not under the allowed path prefixes [notes]`,
		`bash: line 10: ../top.md: Permission denied: cap sys/workspace@1 (grant "notes") refuses workspace.call: path "top.md" is not under the allowed path prefixes [notes]`,
		`ls: cannot open directory '..': Permission denied: cap sys/workspace@1 (grant "notes") refuses workspace.call: the whole workspace is not under the allowed path prefixes [notes]`,
		`rm: cannot remove '../README.md': Permission denied`,
		"[workspace default: version 1 -> 2: -notes/dir/ ~notes/keep.md +notes/list.txt +notes/moved.md +notes/new.md -notes/old.md +notes/sub/deeper/empty]\n",
	} {
		if !strings.Contains(got.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, got.Stderr)
		}
	}
	if len(got.Commits) != 1 || got.Commits[0].ExpectedHead == nil || *got.Commits[0].ExpectedHead != 1 {
		t.Fatalf("commits %+v; want one, on version 1", got.Commits)
	}
	root, err := cas.ParseRef(got.Commits[0].Meta.RootHash)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := workspace.Diff(ctx, st.CAS(), start.Root, root, "")
	if err != nil {
		t.Fatal(err)
	}
	var diff []string
	for _, c := range changes {
		diff = append(diff, c.Change+" "+c.Path)
	}
	wantDiff := []string{"removed notes/dir", "removed notes/dir/x.txt", "changed notes/keep.md", "added notes/list.txt",
		"added notes/moved.md", "added notes/new.md", "removed notes/old.md", "added notes/sub", "added notes/sub/deeper", "added notes/sub/deeper/empty"}
	if !slices.Equal(diff, wantDiff) {
		t.Errorf("diff %q; want %q", diff, wantDiff)
	}
	for p, want := range map[string]string{"notes/keep.md": "keep\nappended\n", "notes/list.txt": "a\nB\n", "notes/moved.md": "old\n", "README.md": "readme\n"} {
		b, _, err := workspace.ReadBytes(ctx, st.CAS(), root, p, nil)
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
		}
	}
	if _, _, err := workspace.ReadBytes(ctx, st.CAS(), root, "tmp/scratch", nil); err == nil {
		t.Error("/tmp reached the workspace")
	}
	if _, err := world.Rerun(ctx, world.RerunOptions{Name: "files", Catalog: fw.cat, Reducers: reducer.NewRegistry(), Storage: st, FromGenesis: true}); err != nil {
		t.Fatalf("replay: %v", err)
	}
}

// TestWorldFilesFailing: a script that fails, or is stopped by its time
// limit, commits what it wrote before; a script that writes nothing
// commits nothing.
func TestWorldFilesFailing(t *testing.T) {
	ctx := t.Context()
	st := world.NewMemoryStorage()
	fw := openFilesWorld(t, ctx, st, nil)
	for _, js := range [][]byte{bashCall("fail", "set -e; mkdir notes; echo one > notes/one.md; false; echo two > notes/two.md"), bashCall("none", "cat notes/one.md; ls /tmp"),
		bashCallTimeout("slow", "echo late > notes/late.md; sleep 5", 300)} {
		if _, err := fw.w.SendJSON(ctx, "test/ToolCall@1", js); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := fw.w.WaitIdle(wctx); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	fw.w.Close()
	done := toolDone(t, ctx, st, "files")
	failed := checkReceipt(t, fw.cat, effects.OK(AdapterID, done["fail"]))
	if failed.ExitCode != 1 || len(failed.Commits) != 1 || !strings.Contains(failed.Stderr, "[workspace default: version 0 -> 1: +notes/one.md]") {
		t.Errorf("failing script: exit %d, commits %d, stderr %q", failed.ExitCode, len(failed.Commits), failed.Stderr)
	}
	none := checkReceipt(t, fw.cat, effects.OK(AdapterID, done["none"]))
	if none.Stdout != "one\n" || len(none.Commits) != 0 || none.Stderr != "" {
		t.Errorf("reading script: stdout %q, commits %d, stderr %q", none.Stdout, len(none.Commits), none.Stderr)
	}
	slow := checkReceipt(t, fw.cat, effects.OK(AdapterID, done["slow"]))
	if slow.ExitCode != 124 || len(slow.Commits) != 1 || !strings.Contains(slow.Stderr, "[workspace default: version 1 -> 2: +notes/late.md]") {
		t.Errorf("timed-out script: exit %d, commits %d, stderr %q", slow.ExitCode, len(slow.Commits), slow.Stderr)
	}
}

// readyAdapter prints "ready" on stdout when it runs a call: the child of
// TestWorldFilesCrash says so when its script has written its files.
type readyAdapter struct{ next effects.Adapter }

func (r readyAdapter) Run(ctx context.Context, c *effects.Call) effects.Receipt {
	fmt.Println("ready")
	return r.next.Run(ctx, c)
}

// crashChild runs a script that writes files, says "ready" and sleeps
// until it is killed.
func crashChild(dir string) error {
	ctx := context.Background()
	s, err := store.Open(dir, nil)
	if err != nil {
		return err
	}
	st, err := world.NewBoltStorage(s.CAS(), s.Journal())
	if err != nil {
		return err
	}
	fw := openFilesWorld(fatalTB{}, ctx, st, func(a effects.Adapter) effects.Adapter { return readyAdapter{a} })
	_, err = fw.w.SendJSON(ctx, "test/ToolCall@1", bashCall("crash", "mkdir -p notes/d; echo partial > notes/a.md; introspect_state >/dev/null; sleep 60"))
	if err != nil {
		return err
	}
	time.Sleep(time.Minute)
	return nil
}

type fatalTB struct{ testing.TB }

func (fatalTB) Helper()                   {}
func (fatalTB) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (fatalTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

// TestWorldFilesCrash kills (SIGKILL) a process whose script has written
// files and is still running: the journal holds the scripted.run intent
// and no receipt, so no commit of the script's files reached the world,
// and the journal replays.
func TestWorldFilesCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a child process")
	}
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	ready := false
	for sc.Scan() {
		if sc.Text() == "ready" {
			ready = true
			break
		}
		t.Logf("child: %s", sc.Text())
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !ready {
		t.Fatal("the child never ran the script")
	}
	s, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := world.NewBoltStorage(s.CAS(), s.Journal())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var kinds []string
	err = st.Journal().Read(ctx, "files", 1, func(r journal.Record) error {
		switch r.Kind {
		case world.KindIntent:
			v, err := schema.Decode(r.Payload)
			if err != nil {
				return err
			}
			kinds = append(kinds, "intent "+fmt.Sprint(schema.FieldPath(v, "kind")))
		case world.KindReceipt:
			kinds = append(kinds, "receipt")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kinds, []string{"intent scripted.run"}) {
		t.Errorf("journal holds %v; want the scripted.run intent and no receipt", kinds)
	}
	if done := toolDone(t, ctx, st, "files"); len(done) != 0 {
		t.Errorf("the crashed call has a result: %v", done)
	}
	if _, err := world.Rerun(ctx, world.RerunOptions{Name: "files", Catalog: loadCatalog(t), Reducers: reducer.NewRegistry(), Storage: st, FromGenesis: true}); err != nil {
		t.Fatalf("replay: %v", err)
	}
}
