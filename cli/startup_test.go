package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkStartup starts `demiurge sh -c true` (demiurge_sh) and
// `demiurge-sh -c true` (demiurge-sh, cmd/demiurge-sh: the same shell
// without a world in a program of its own) as processes, side by side
// with `bash -c true` and an empty Go program in the same run: the cost
// of a process start (loading the binary, package initialization,
// running an empty script). The binaries are built with `go build` first,
// outside the timer; the benchmark is skipped without the go command or
// bash.
//
// demiurge_sh, demiurge-sh and bash-c time each command alone;
// interleaved runs them in turns, one of each an iteration, with
// demiurge-sh built without cgo too (a static binary, as
// `CGO_ENABLED=0 go install` makes it), so that a machine whose load
// changes during the run slows all alike, and reports the medians
// (demiurge-ms for demiurge sh, sh-ms for demiurge-sh, static-ms for the
// static one, bash-ms, go-ms for the empty program) and the ratios to
// bash's: x-bash (demiurge sh), sh-x-bash (demiurge-sh, the figure issue
// #26 sets at 3 at most) and static-x-bash, and demiurge-sh's to the
// empty Go program's, sh-x-go.
func BenchmarkStartup(b *testing.B) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("go command not found")
	}
	dir := b.TempDir()
	// build builds pkg in the module of directory in ("": this one),
	// with env added to the environment.
	build := func(name, in, pkg string, env ...string) string {
		bin := filepath.Join(dir, name)
		cmd := exec.Command(gobin, "build", "-o", bin, pkg)
		cmd.Dir = in
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
		return bin
	}
	demiurge := []string{build("demiurge", "", "../cmd/demiurge"), "sh", "-c", "true"}
	sh := []string{build("demiurge-sh", "", "../cmd/demiurge-sh"), "-c", "true"}
	static := []string{build("demiurge-sh-static", "", "../cmd/demiurge-sh", "CGO_ENABLED=0"), "-c", "true"}
	bench := func(b *testing.B, argv []string) {
		if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
			b.Fatalf("%s: %v", argv, err)
		}
		for b.Loop() {
			exec.Command(argv[0], argv[1:]...).Run()
		}
	}
	b.Run("demiurge_sh", func(b *testing.B) { bench(b, demiurge) })
	b.Run("demiurge-sh", func(b *testing.B) { bench(b, sh) })
	bash, err := exec.LookPath("bash")
	if err != nil {
		b.Log("bash not installed: no side-by-side figures")
		return
	}
	emptyDir := filepath.Join(dir, "empty")
	if err := os.MkdirAll(emptyDir, 0o755); err != nil {
		b.Fatal(err)
	}
	for name, text := range map[string]string{"go.mod": "module empty\n\ngo 1.26\n", "main.go": "package main\n\nfunc main() {}\n"} {
		if err := os.WriteFile(filepath.Join(emptyDir, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	empty := build("empty.bin", emptyDir, ".")
	b.Run("bash-c", func(b *testing.B) { bench(b, []string{bash, "-c", "true"}) })
	b.Run("interleaved", func(b *testing.B) {
		var d, s, st, sb, g []time.Duration
		timed := func(argv ...string) time.Duration {
			start := time.Now()
			if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
				b.Fatalf("%s: %v", argv, err)
			}
			return time.Since(start)
		}
		for b.Loop() {
			d = append(d, timed(demiurge...))
			s = append(s, timed(sh...))
			st = append(st, timed(static...))
			sb = append(sb, timed(bash, "-c", "true"))
			g = append(g, timed(empty))
		}
		median := func(ts []time.Duration) float64 {
			slices.Sort(ts)
			return float64(ts[len(ts)/2]) / float64(time.Millisecond)
		}
		dm, sm, tm, bm, gm := median(d), median(s), median(st), median(sb), median(g)
		b.ReportMetric(dm, "demiurge-ms")
		b.ReportMetric(sm, "sh-ms")
		b.ReportMetric(tm, "static-ms")
		b.ReportMetric(bm, "bash-ms")
		b.ReportMetric(gm, "go-ms")
		b.ReportMetric(dm/bm, "x-bash")
		b.ReportMetric(sm/bm, "sh-x-bash")
		b.ReportMetric(sm/gm, "sh-x-go")
		b.ReportMetric(tm/bm, "static-x-bash")
	})
}

// sdkGroups are the libraries whose cost at start BenchmarkStartupSDKs
// measures: the packages of each that the module's packages import.
// Packages no module in go.mod provides (an SDK another branch adds, or
// one the project dropped) are left out, and a group left with none is
// skipped.
var sdkGroups = []struct {
	name string
	pkgs []string
}{
	{"empty", nil},
	{"net-http", []string{"net/http"}},
	{"openai-go", []string{"github.com/openai/openai-go/v3", "github.com/openai/openai-go/v3/option",
		"github.com/openai/openai-go/v3/packages/param", "github.com/openai/openai-go/v3/packages/ssestream",
		"github.com/openai/openai-go/v3/responses", "github.com/openai/openai-go/v3/shared"}},
	{"anthropic-sdk-go", []string{"github.com/anthropics/anthropic-sdk-go/v2", "github.com/anthropics/anthropic-sdk-go/v2/option"}},
	{"genai", []string{"google.golang.org/genai"}},
	{"mcp-go-sdk", []string{"github.com/modelcontextprotocol/go-sdk/mcp", "github.com/modelcontextprotocol/go-sdk/jsonrpc",
		"github.com/google/jsonschema-go/jsonschema"}},
	{"wazero", []string{"github.com/tetratelabs/wazero", "github.com/tetratelabs/wazero/api", "github.com/tetratelabs/wazero/experimental",
		"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1", "github.com/tetratelabs/wazero/sys"}},
	{"gojq", []string{"github.com/itchyny/gojq"}},
	{"blake3", []string{"github.com/zeebo/blake3"}},
	{"prometheus", []string{"github.com/prometheus/client_golang/prometheus", "github.com/prometheus/client_golang/prometheus/collectors",
		"github.com/prometheus/client_golang/prometheus/promhttp"}},
	{"catwalk", []string{"charm.land/catwalk/pkg/catwalk", "charm.land/catwalk/pkg/embedded"}},
	{"pgx", []string{"github.com/jackc/pgx/v5", "github.com/jackc/pgx/v5/pgconn", "github.com/jackc/pgx/v5/pgxpool"}},
	{"cobra", []string{"github.com/spf13/cobra", "github.com/spf13/pflag"}},
	{"mvdan-sh", []string{"mvdan.cc/sh/v3/expand", "mvdan.cc/sh/v3/interp", "mvdan.cc/sh/v3/syntax"}},
}

// BenchmarkStartupSDKs measures what linking each library costs every
// start of a program, whatever it runs: for each group of sdkGroups, a
// program that only imports its packages (their package inits run, their
// types' itabs load, their pages fault in), and "all-deps", one that
// imports every third-party package the module's packages import. Beside
// them: demiurge sh -c true, built as go build makes it (demiurge_sh) and
// without cgo (demiurge_sh-static); demiurge-sh -c true (cmd/demiurge-sh)
// the same two ways (demiurge-sh, demiurge-sh-static); bash -c true; and
// testdata/startup/shbash, which runs -c true in package tools/bash and
// links nothing else of demiurge (the floor of a shell of ours).
// Each is started in turns with the two floors, bash -c true and the empty
// Go program, so that the machine's changing load falls on all three
// alike, and reports its median wall time (ms), its median CPU time
// (cpu-ms, user and system), its median page faults (faults) and the
// ratios of its median to bash's (x-bash) and to the empty program's
// (x-go). The library programs are built in a temporary module with the
// module's go.mod requirements and go.sum, from the module cache
// (GOPROXY=off); a group whose packages no module of go.mod provides (an
// SDK another branch adds) is skipped.
func BenchmarkStartupSDKs(b *testing.B) {
	lab := newStartupLab(b)
	groups := append(slices.Clone(sdkGroups), struct {
		name string
		pkgs []string
	}{"all-deps", lab.all})
	// demiurge and demiurge-sh as go build makes them, the same without
	// cgo (static binaries: no dynamic loader, no libc), and the shell
	// alone (testdata/startup/shbash, not shipped).
	demiurge := lab.goBuild("demiurge", "../cmd/demiurge")
	static := lab.goBuild("demiurge-static", "../cmd/demiurge", "CGO_ENABLED=0")
	sh := lab.goBuild("demiurge-sh", "../cmd/demiurge-sh")
	shStatic := lab.goBuild("demiurge-sh-static", "../cmd/demiurge-sh", "CGO_ENABLED=0")
	shbash := lab.goBuild("shbash", "./testdata/startup/shbash")
	for _, g := range groups {
		pkgs := slices.DeleteFunc(slices.Clone(g.pkgs), func(p string) bool { return !lab.inGoMod(p) })
		if g.name != "empty" && len(pkgs) == 0 {
			b.Logf("%s: no module of go.mod provides its packages", g.name)
			continue
		}
		bin, ok := lab.build(g.name, pkgs)
		if !ok {
			continue
		}
		b.Run(g.name, func(b *testing.B) { lab.measure(b, bin) })
	}
	b.Run("demiurge_sh", func(b *testing.B) { lab.measure(b, demiurge, "sh", "-c", "true") })
	b.Run("demiurge_sh-static", func(b *testing.B) { lab.measure(b, static, "sh", "-c", "true") })
	b.Run("demiurge-sh", func(b *testing.B) { lab.measure(b, sh, "-c", "true") })
	b.Run("demiurge-sh-static", func(b *testing.B) { lab.measure(b, shStatic, "-c", "true") })
	b.Run("shbash", func(b *testing.B) { lab.measure(b, shbash, "-c", "true") })
	b.Run("bash-c", func(b *testing.B) { lab.measure(b, lab.bash, "-c", "true") })
}

// BenchmarkLinkedWithout measures what each library of sdkGroups costs
// among all the others: "all-deps" (every third-party package demiurge
// imports, as in BenchmarkStartupSDKs) and, for each group, all-deps
// without the packages of the group's modules (without-NAME), started in
// turns with all-deps and bash -c true: saved-ms, saved-cpu-ms and
// saved-faults are what dropping that library alone would save a start
// of demiurge. What it shares with the others (net/http, crypto/tls)
// stays, and a module that another one imports stays linked, so its
// saving shows as none.
func BenchmarkLinkedWithout(b *testing.B) {
	lab := newStartupLab(b)
	all, ok := lab.build("all-deps", lab.all)
	if !ok {
		b.Fatal("all-deps did not build")
	}
	b.Run("all-deps", func(b *testing.B) { lab.measure(b, all) })
	for _, g := range sdkGroups {
		var mods []string
		for _, p := range g.pkgs {
			if m := lab.moduleOf(p); m != "" && !slices.Contains(mods, m) {
				mods = append(mods, m)
			}
		}
		if len(mods) == 0 {
			continue // the standard library's, or no module of go.mod
		}
		rest := slices.DeleteFunc(slices.Clone(lab.all), func(p string) bool { return slices.Contains(mods, lab.moduleOf(p)) })
		if len(rest) == len(lab.all) {
			b.Logf("%s: demiurge imports none of its packages", g.name)
			continue
		}
		bin, ok := lab.build("without-"+g.name, rest)
		if !ok {
			continue
		}
		b.Run("without-"+g.name, func(b *testing.B) { lab.measureWithout(b, all, bin) })
	}
}

// measureWithout starts the all-deps program, the one without a library
// and bash -c true in turns, and reports the medians of the one without
// (ms, faults), what it saves against all-deps in the same turns (saved-ms,
// saved-cpu-ms, saved-faults: the differences of the medians) and its
// ratio to bash's (x-bash).
func (lab *startupLab) measureWithout(b *testing.B, all, without string) {
	var with, less, sh []startRun
	for b.Loop() {
		with = append(with, lab.start(all))
		less = append(less, lab.start(without))
		sh = append(sh, lab.start(lab.bash, "-c", "true"))
	}
	wall := func(r startRun) float64 { return float64(r.wall) / float64(time.Millisecond) }
	cpu := func(r startRun) float64 { return float64(r.cpu) / float64(time.Millisecond) }
	faults := func(r startRun) float64 { return float64(r.faults) }
	m := medianOf(less, wall)
	b.ReportMetric(m, "ms")
	b.ReportMetric(medianOf(less, faults), "faults")
	b.ReportMetric(medianOf(with, wall)-m, "saved-ms")
	b.ReportMetric(medianOf(with, cpu)-medianOf(less, cpu), "saved-cpu-ms")
	b.ReportMetric(medianOf(with, faults)-medianOf(less, faults), "saved-faults")
	b.ReportMetric(m/medianOf(sh, wall), "x-bash")
}

// medianOf returns the median of f over rs.
func medianOf(rs []startRun, f func(startRun) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// A startupLab builds small programs in a temporary module with the
// module's go.mod requirements and go.sum, and times their starts beside
// bash -c true and an empty Go program.
type startupLab struct {
	b           *testing.B
	gobin, bash string
	root, work  string
	empty       string
	// all is every third-party package the module's packages import.
	all []string
	// modules are the modules go.mod requires.
	modules []string
}

func newStartupLab(b *testing.B) *startupLab {
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("go command not found")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		b.Skip("bash not installed")
	}
	lab := &startupLab{b: b, gobin: gobin, bash: bash, root: filepath.Dir(goEnv(b, gobin, "GOMOD")), work: b.TempDir()}
	gomod, err := os.ReadFile(filepath.Join(lab.root, "go.mod"))
	if err != nil {
		b.Fatal(err)
	}
	gosum, err := os.ReadFile(filepath.Join(lab.root, "go.sum"))
	if err != nil {
		b.Fatal(err)
	}
	_, requires, _ := strings.Cut(string(gomod), "\nrequire")
	if err := os.WriteFile(filepath.Join(lab.work, "go.mod"), []byte("module startupsdk\n\ngo 1.26\n\nrequire"+requires), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lab.work, "go.sum"), gosum, 0o644); err != nil {
		b.Fatal(err)
	}
	out, err := exec.Command(gobin, "-C", lab.root, "list", "-deps", "-f",
		`{{if .Module}}{{if eq .Module.Path "github.com/demiurge-dev/demiurge"}}{{join .Imports "\n"}}{{end}}{{end}}`, "./cmd/demiurge").Output()
	if err != nil {
		b.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if !strings.HasPrefix(p, "github.com/demiurge-dev/") && strings.Contains(strings.Split(p, "/")[0], ".") && !slices.Contains(lab.all, p) {
			lab.all = append(lab.all, p)
		}
	}
	for line := range strings.Lines(requires) {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require"))
		if len(f) >= 2 && strings.Contains(f[0], ".") {
			lab.modules = append(lab.modules, f[0])
		}
	}
	empty, ok := lab.build("empty", nil)
	if !ok {
		b.Fatal("an empty Go program did not build")
	}
	lab.empty = empty
	return lab
}

// moduleOf returns the module of go.mod that provides pkg (the longest
// that matches), or "" for the standard library's and for a package no
// module of go.mod provides.
func (lab *startupLab) moduleOf(pkg string) string {
	var mod string
	for _, m := range lab.modules {
		if (pkg == m || strings.HasPrefix(pkg, m+"/")) && len(m) > len(mod) {
			mod = m
		}
	}
	return mod
}

// inGoMod reports whether pkg is the standard library's or a module of
// go.mod provides it: a package of none of them is left out.
func (lab *startupLab) inGoMod(pkg string) bool {
	return !strings.Contains(strings.Split(pkg, "/")[0], ".") || lab.moduleOf(pkg) != ""
}

// build builds a program that imports pkgs and does nothing, or reports
// why it did not build.
func (lab *startupLab) build(name string, pkgs []string) (string, bool) {
	dir := filepath.Join(lab.work, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		lab.b.Fatal(err)
	}
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n")
	for _, p := range pkgs {
		fmt.Fprintf(&src, "\t_ %q\n", p)
	}
	src.WriteString(")\n\nfunc main() {}\n")
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src.String()), 0o644); err != nil {
		lab.b.Fatal(err)
	}
	bin := filepath.Join(lab.work, name+".bin")
	cmd := exec.Command(lab.gobin, "build", "-mod=mod", "-o", bin, "./"+name)
	cmd.Dir = lab.work
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		lab.b.Logf("%s: not built (a package outside go.mod?): %s", name, strings.TrimSpace(string(out)))
		return "", false
	}
	return bin, true
}

// goBuild builds package pkg of this module with go build, with env
// added to the environment.
func (lab *startupLab) goBuild(name, pkg string, env ...string) string {
	bin := filepath.Join(lab.work, name)
	cmd := exec.Command(lab.gobin, "build", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		lab.b.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// startRun is one start of a program.
type startRun struct {
	wall, cpu time.Duration
	faults    int64
}

func (lab *startupLab) start(argv ...string) startRun {
	t0 := time.Now()
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Run(); err != nil {
		lab.b.Fatalf("%s: %v", argv, err)
	}
	r := startRun{wall: time.Since(t0), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	if u, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.faults = u.Minflt + u.Majflt
	}
	return r
}

// measure starts argv in turns with bash -c true and the empty program,
// one of each an iteration, and reports argv's medians (ms, cpu-ms,
// faults) and their ratios to bash's (x-bash) and the empty program's
// (x-go).
func (lab *startupLab) measure(b *testing.B, argv ...string) {
	var self, sh, floor []startRun
	for b.Loop() {
		self = append(self, lab.start(argv...))
		sh = append(sh, lab.start(lab.bash, "-c", "true"))
		floor = append(floor, lab.start(lab.empty))
	}
	wall := func(r startRun) float64 { return float64(r.wall) / float64(time.Millisecond) }
	m := medianOf(self, wall)
	b.ReportMetric(m, "ms")
	b.ReportMetric(medianOf(self, func(r startRun) float64 { return float64(r.cpu) / float64(time.Millisecond) }), "cpu-ms")
	b.ReportMetric(medianOf(self, func(r startRun) float64 { return float64(r.faults) }), "faults")
	b.ReportMetric(m/medianOf(sh, wall), "x-bash")
	b.ReportMetric(m/medianOf(floor, wall), "x-go")
}

func goEnv(b *testing.B, gobin, name string) string {
	out, err := exec.Command(gobin, "env", name).Output()
	if err != nil {
		b.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}
