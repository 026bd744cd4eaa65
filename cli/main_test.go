package cli

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cli/shcmd"
	"github.com/demiurge-dev/demiurge/internal/pgtest"
	"github.com/demiurge-dev/demiurge/internal/realwire"
	"github.com/demiurge-dev/demiurge/internal/store"
)

// TestMain lets the test binary act as the demiurge command, as
// demiurge-sh (cmd/demiurge-sh), and as the helper commands the scripts
// use to fill and damage stores, when testscript runs it under those
// names.
func TestMain(m *testing.M) {
	testscript.Main(pgtest.Wrap(m), map[string]func(){
		"demiurge":                func() { Main() },
		"demiurge-sh":             shcmd.Main,
		"demiurge-append":         helper(helperAppend),
		"demiurge-corrupt-blob":   helper(helperCorruptBlob),
		"demiurge-corrupt-record": helper(helperCorruptRecord),
		"demiurge-damage":         helper(helperDamage),
		"demiurge-cbor":           helper(helperCBOR),
		"demiurge-hold":           helper(helperHold),
		"demiurge-mcp-server":     helper(helperMCPServer),
	})
}

// TestScripts runs the end-to-end scripts in testdata/script: the real
// binary in a fresh temporary directory each (so the store is
// $WORK/.demiurge, never the user's). The counter example is copied into
// $WORK/counter, the timer, blobecho and demiurge examples into
// $WORK/examples, the recorded session demo (a bundle) into $WORK/demo;
// $EVALS is examples/evals, in the repository.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			if err := copyAIR(filepath.Join("..", "examples", "counter"), filepath.Join(env.WorkDir, "counter")); err != nil {
				return err
			}
			for _, ex := range []string{"timer", "blobecho", "demiurge"} {
				if err := copyAIR(filepath.Join("..", "examples", ex), filepath.Join(env.WorkDir, "examples", ex)); err != nil {
					return err
				}
			}
			if err := copyWASM(env.WorkDir); err != nil {
				return err
			}
			// examples/evals is read in place (its cassettes are many
			// files): eval only reads a suite.
			evals, err := filepath.Abs(filepath.Join("..", "examples", "evals"))
			if err != nil {
				return err
			}
			env.Setenv("EVALS", evals)
			return os.CopyFS(filepath.Join(env.WorkDir, "demo"), os.DirFS(filepath.Join("..", "testdata", "sessions", "demo")))
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":    cmdExits,
			"waitfile": cmdWaitFile,
			"sleep":    cmdSleep,
			"llmtest":  cmdLLMTest,
			"llmwait":  cmdLLMWait,
			"realwire": cmdRealwire,
			"modput":   cmdModPut,
			"airadd":   cmdAIRAdd,
		},
		Condition: condition,
	})
}

// condition answers the scripts' own conditions:
//
//	[env:NAME]  the environment variable NAME is set (DEMIURGE_REALWIRE:
//	            the extended corpus the realwire command also reads)
func condition(cond string) (bool, error) {
	if name, ok := strings.CutPrefix(cond, "env:"); ok && name != "" {
		return os.Getenv(name) != "", nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// copyWASM lays out the worlds of the WASM scripts in dir: our counter
// as a WASM world in wasm-counter (wasmCounterWorld), the modules of the
// examples as wasm/counter.wasm and so on, the host's test modules in
// wasm/test/, and examples/wasm/tally (a reducer to add to a world) as
// tally.
func copyWASM(dir string) error {
	if err := os.CopyFS(filepath.Join(dir, "tally"), os.DirFS(filepath.Join("..", "examples", "wasm", "tally"))); err != nil {
		return err
	}
	if err := wasmCounterWorld(filepath.Join(dir, "wasm-counter")); err != nil {
		return err
	}
	return copyWASMModules(dir)
}

// copyWASMModules copies the modules of the examples into dir as
// wasm/<example>.wasm (wasm/counter.wasm, wasm/timer.wasm, ...) and the
// host's test modules into wasm/test/.
func copyWASMModules(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "wasm", "test"), 0o755); err != nil {
		return err
	}
	for _, pattern := range []string{"../examples/*/modules/*/*.wasm", "../reducer/wasm/testdata/*.wasm"} {
		files, _ := filepath.Glob(filepath.FromSlash(pattern))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			to := filepath.Join(dir, "wasm", "test", filepath.Base(f))
			if !strings.Contains(f, "testdata") { // ../examples/<example>/modules/...
				to = filepath.Join(dir, "wasm", strings.Split(filepath.ToSlash(f), "/")[2]+".wasm")
			}
			if err := os.WriteFile(to, b, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// wasmCounterModule is the name of our counter's defmodule in the WASM
// counter world. examples/counter names it counter/Counter@1, which the
// binary serves with the Go reducer (a registered Go reducer takes its
// name), so the world renames it for its WASM module to run.
const wasmCounterModule = "counter/WasmCounter@1"

// wasmCounterWorld lays out in dst our own counter (examples/counter) as a
// WASM world: its AIR with the defmodule renamed wasmCounterModule, and
// its AssemblyScript module (built from examples/wasm/assembly/counter.ts)
// beside it as modules/counter/WasmCounter@1-<sha256>.wasm.
func wasmCounterWorld(dst string) error {
	src := filepath.Join("..", "examples", "counter")
	files, err := filepath.Glob(filepath.Join(src, "*.air.json"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no AIR files in %s: %v", src, err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		b = []byte(strings.ReplaceAll(string(b), `"counter/Counter@1"`, `"`+wasmCounterModule+`"`))
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o644); err != nil {
			return err
		}
	}
	return putCounterModule(dst, wasmCounterModule)
}

// agentOSCounterWorld lays out in dst AgentOS's own 00-counter, its AIR
// read from the AgentOS AIR folder air ($DEMIURGE_AGENTOS_AIR; the
// repository keeps no copy), with our AssemblyScript counter beside it as
// its reducer demo/CounterSM@1 (the state and events have the same shape).
func agentOSCounterWorld(air, dst string) error {
	if err := copyAIR(filepath.Join(air, "examples", "00-counter"), dst); err != nil {
		return err
	}
	return putCounterModule(dst, "demo/CounterSM@1")
}

// putCounterModule writes the counter's WASM module (examples/counter's)
// into the world folder dir as the module of the defmodule name.
func putCounterModule(dir, name string) error {
	counter, err := filepath.Glob(filepath.Join("..", "examples", "counter", "modules", "counter", "Counter@1-*.wasm"))
	if err != nil || len(counter) != 1 {
		return fmt.Errorf("the counter's module: %v %v", counter, err)
	}
	b, err := os.ReadFile(counter[0])
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "modules", filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(fmt.Sprintf("%s-%x.wasm", path, sha256.Sum256(b)), b, 0o644)
}

// copyAIR copies the AIR files of a world folder into dst.
func copyAIR(src, dst string) error {
	files, err := filepath.Glob(filepath.Join(src, "*.air.json"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no AIR files in %s: %v", src, err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// cmdModPut puts a WASM module beside a manifest, as AgentOS lays modules
// out, replacing the module's other files:
//
//	modput FILE DIR MODULE
//
// writes FILE as DIR/modules/MODULE-<sha256 hex of FILE>.wasm.
func cmdModPut(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: modput FILE DIR MODULE")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	path := filepath.Join(ts.MkAbs(args[1]), "modules", filepath.FromSlash(args[2]))
	old, _ := filepath.Glob(path + "-*.wasm")
	for _, f := range old {
		ts.Check(os.Remove(f))
	}
	ts.Check(os.MkdirAll(filepath.Dir(path), 0o755))
	ts.Check(os.WriteFile(fmt.Sprintf("%s-%x.wasm", path, sha256.Sum256(b)), b, 0o644))
}

// cmdAIRAdd adds entries to the lists of a manifest file:
//
//	airadd FILE PATH JSON...
//
// appends each JSON value to the array at PATH (dot-separated members,
// such as modules or routing.events) of the JSON object in FILE.
func cmdAIRAdd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: airadd FILE PATH JSON...")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	var doc map[string]any
	ts.Check(json.Unmarshal(b, &doc))
	obj, keys := doc, strings.Split(args[1], ".")
	for _, k := range keys[:len(keys)-1] {
		next, ok := obj[k].(map[string]any)
		if !ok {
			ts.Fatalf("airadd: %s has no object %s", args[0], k)
		}
		obj = next
	}
	last := keys[len(keys)-1]
	list, ok := obj[last].([]any)
	if !ok {
		ts.Fatalf("airadd: %s has no array %s", args[0], args[1])
	}
	for _, a := range args[2:] {
		var v any
		ts.Check(json.Unmarshal([]byte(a), &v))
		list = append(list, v)
	}
	obj[last] = list
	out, err := json.MarshalIndent(doc, "", "  ")
	ts.Check(err)
	ts.Check(os.WriteFile(path, out, 0o644))
}

// cmdExits runs a program and checks its exit code:
//
//	exits CODE PROG [ARGS...]
//
// Its stdout and stderr are kept for the stdout and stderr commands.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exits")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d; want %d", args[1], got, want)
	}
}

// cmdSleep lets time pass (a deadline, say):
//
//	sleep DURATION
func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sleep DURATION")
	}
	d, err := time.ParseDuration(args[0])
	if err != nil {
		ts.Fatalf("sleep: %v", err)
	}
	time.Sleep(d)
}

// cmdWaitFile waits (up to 30 s, times slowdown) until a file exists, and holds LINES
// lines if given:
//
//	waitfile FILE [LINES]
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfile FILE [LINES]")
	}
	lines := 0
	if len(args) == 2 {
		n, err := strconv.Atoi(args[1])
		if err != nil {
			ts.Fatalf("waitfile: %v", err)
		}
		lines = n
	}
	path := ts.MkAbs(args[0])
	for deadline := time.Now().Add(slowdown * 30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && strings.Count(string(b), "\n") >= lines {
			return
		}
	}
	ts.Fatalf("%s did not appear (with %d lines) within %v", args[0], lines, slowdown*30*time.Second)
}

// helper turns a function into a helper command's main: it exits 1 and
// prints the error if the function fails.
func helper(fn func(ctx context.Context, args []string) error) func() {
	return func() {
		if err := fn(context.Background(), os.Args[1:]); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", filepath.Base(os.Args[0]), err)
			os.Exit(1)
		}
	}
}

// helperAppend appends records to a world, creating the store:
//
//	demiurge-append DIR WORLD [KIND PAYLOAD]...
//
// A PAYLOAD is JSON (stored as canonical CBOR), "raw:TEXT" or "".
// It prints the new head.
func helperAppend(ctx context.Context, args []string) error {
	if len(args) < 2 {
		return errors.New("usage: demiurge-append DIR WORLD [KIND PAYLOAD]...")
	}
	entries, err := parseEntries(args[2:])
	if err != nil {
		return err
	}
	head, err := appendRecords(ctx, args[0], args[1], entries)
	if err != nil {
		return err
	}
	fmt.Println(head)
	return nil
}

// helperCorruptBlob changes the stored bytes of a blob:
//
//	demiurge-corrupt-blob DIR REF
func helperCorruptBlob(ctx context.Context, args []string) error {
	if len(args) != 2 {
		return errors.New("usage: demiurge-corrupt-blob DIR REF")
	}
	ref, err := cas.ParseRef(args[1])
	if err != nil {
		return err
	}
	return corruptBlob(args[0], ref)
}

// helperCorruptRecord changes the payload of a journal record:
//
//	demiurge-corrupt-record DIR WORLD SEQ
func helperCorruptRecord(ctx context.Context, args []string) error {
	if len(args) != 3 {
		return errors.New("usage: demiurge-corrupt-record DIR WORLD SEQ")
	}
	seq, err := strconv.ParseUint(args[2], 10, 64)
	if err != nil {
		return err
	}
	return corruptRecord(ctx, args[0], args[1], seq)
}

// helperCBOR writes the canonical CBOR node of a JSON document:
//
//	demiurge-cbor JSON
func helperCBOR(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return errors.New("usage: demiurge-cbor JSON")
	}
	b, err := jsonToCBOR(args[0])
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(b)
	return err
}

// helperHold opens a store read-write, creates FILE to say it holds the
// lock, and keeps it open until it is killed (or for a minute at most):
//
//	demiurge-hold DIR FILE
func helperHold(ctx context.Context, args []string) error {
	if len(args) != 2 {
		return errors.New("usage: demiurge-hold DIR FILE")
	}
	s, err := store.Open(args[0], nil)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := os.WriteFile(args[1], nil, 0o644); err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-sig:
	case <-time.After(time.Minute):
	}
	return nil
}

// cmdLLMTest starts a fake model server (adapters/llm/llmtest) for the rest
// of the script, answering from the script of turns in FILE (JSON), and
// points the demiurge command at it ($OPENAI_BASE_URL, $OPENAI_API_KEY, and
// the Anthropic and Gemini twins, which the same server answers):
//
//	llmtest FILE
func cmdLLMTest(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: llmtest FILE")
	}
	script, err := llmtest.LoadScript(ts.MkAbs(args[0]))
	if err != nil {
		ts.Fatalf("llmtest: %v", err)
	}
	srv := llmtest.NewServer(script)
	ts.Defer(srv.Close)
	servers.Store(ts, srv)
	ts.Defer(func() { servers.Delete(ts) })
	ts.Setenv("OPENAI_BASE_URL", srv.URL)
	ts.Setenv("OPENAI_API_KEY", "sk-test-key")
	// The same server plays Anthropic's and Gemini's APIs.
	ts.Setenv("ANTHROPIC_BASE_URL", srv.Root)
	ts.Setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
	ts.Setenv("GOOGLE_GEMINI_BASE_URL", srv.Root)
	ts.Setenv("GEMINI_API_KEY", "gemini-test-key")
}

// servers are the llmtest servers of the running scripts.
var servers sync.Map // *testscript.TestScript → *llmtest.Server

// cmdLLMWait waits (up to 20 s) until the script's llmtest server has had
// N requests:
//
//	llmwait N
func cmdLLMWait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: llmwait N")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("llmwait: %v", err)
	}
	v, ok := servers.Load(ts)
	if !ok {
		ts.Fatalf("llmwait: no llmtest server: run llmtest first")
	}
	srv := v.(*llmtest.Server)
	for deadline := time.Now().Add(slowdown * 20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if len(srv.Requests()) >= n {
			return
		}
	}
	ts.Fatalf("llmwait: the server had %d requests after %v; want %d", len(srv.Requests()), slowdown*20*time.Second, n)
}

// cmdRealwire serves a recording of real provider traffic on loopback
// (adapters/llm/testdata/realwire, or else the extended corpus
// DEMIURGE_REALWIRE names) and points the scripts' model at it:
//
//	realwire NAME [FIRST [COUNT]]
//
// serves interactions FIRST (default 0) to FIRST+COUNT-1 (default: to the
// end), in order, refusing a request the way the provider would (see
// realwire.Recording.Refuse). It sets the base URL of every provider
// (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL), and for
// the run command: RW_LLM (openai-chat, openai-responses, anthropic or
// gemini), RW_MODEL, RW_PROMPT (the last
// user message of the first recorded request), and RW_NOSTREAM (true when the
// responses are JSON, not streams).
func cmdRealwire(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 3 {
		ts.Fatalf("usage: realwire NAME [FIRST [COUNT]]")
	}
	rec, err := realwire.Find(filepath.Join("..", "adapters", "llm", "testdata", "realwire"), args[0])
	if err != nil {
		ts.Fatalf("%v", err)
	}
	first, count := 0, len(rec.Interactions)
	if len(args) > 1 {
		first, _ = strconv.Atoi(args[1])
		count = len(rec.Interactions) - first
	}
	if len(args) > 2 {
		count, _ = strconv.Atoi(args[2])
	}
	its := rec.Interactions[first : first+count]
	var responses []realwire.Response
	for _, it := range its {
		responses = append(responses, it.Response)
	}
	srv := realwire.NewServer(responses)
	srv.SetAPI(rec.API)
	srv.SetCheck(func(_ int, body []byte) error { return rec.Refuse(body) })
	ts.Defer(srv.Close)
	turn, err := its[0].Request.Turn(rec.API)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	prompt := ""
	for _, item := range turn.Items {
		var m struct{ Role, Content string }
		if json.Unmarshal(item, &m) == nil && m.Role == "user" {
			prompt = m.Content
		}
	}
	llm := map[string]string{"chat": "openai-chat", "anthropic": "anthropic", "gemini": "gemini"}[rec.API]
	if llm == "" {
		llm = "openai-responses"
	}
	ts.Setenv("OPENAI_BASE_URL", srv.URL)
	ts.Setenv("OPENAI_API_KEY", "")
	ts.Setenv("ANTHROPIC_BASE_URL", srv.Root)
	ts.Setenv("ANTHROPIC_API_KEY", "")
	ts.Setenv("GOOGLE_GEMINI_BASE_URL", srv.Root)
	ts.Setenv("GEMINI_API_KEY", "")
	ts.Setenv("GOOGLE_API_KEY", "")
	ts.Setenv("RW_LLM", llm)
	ts.Setenv("RW_MODEL", turn.Model)
	ts.Setenv("RW_PROMPT", prompt)
	ts.Setenv("RW_NOSTREAM", strconv.FormatBool(!its[0].Response.IsStream()))
}
