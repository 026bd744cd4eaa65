package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/pgstore"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/world"
)

// Exit codes of the demiurge command.
const (
	exitOK      = 0 // the command did what was asked
	exitFailure = 1 // it could not, or it found problems (invalid AIR, a corrupt store)
	exitUsage   = 2 // the command line is wrong: unknown command or flag, bad arguments
	// exitQueued: send's event waits in a PostgreSQL world's inbox, which
	// no worker journaled within --wait; it is kept, not lost.
	exitQueued = 6
)

// defaultStoreDir is the store a command uses without --store or
// $DEMIURGE_STORE: a directory in the current one.
const defaultStoreDir = ".demiurge"

// storeEnv names the environment variable that overrides defaultStoreDir.
const storeEnv = "DEMIURGE_STORE"

// stdio is where a command reads and writes.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// app is the state the commands of one invocation share: where they
// write, and the global flags.
type app struct {
	stdio
	storeDir string
	// storeGiven is whether --store was on the command line: a command
	// that run prints for the user to paste names it too (approveHint).
	storeGiven bool
	verbose    bool
	log        *slog.Logger
	// usedStore is set once the command opens (or tries to open) the
	// store: a damaged blob in a bundle is not the store's damage.
	usedStore bool
	// command is the command line's command ("demiurge serve"): what the
	// store says holds it to another process that finds it locked.
	command string
	// clock and entropy stamp the inputs of the worlds run opens; nil
	// means the wall clock and crypto/rand (tests fix them).
	clock   func() time.Time
	entropy io.Reader
	// interrupts routes Ctrl-C; nil when the process's signals are not
	// ours (tests).
	interrupts *interrupts
	// ext is what a program extending the command line adds (Main's
	// options); nil for none.
	ext *extensions
	// raw is set by --raw (run, trace): the error line keeps its control
	// characters (by default they are shown escaped, escapeControls).
	raw bool
	// wasi lets WASM reducer modules import the deterministic WASI
	// (--wasi); wasm is the host that runs them (wasmHost).
	wasi bool
	wasm wasmState
	// wasmLimits are --wasm-fuel, --wasm-memory-pages and
	// --wasm-backstop, as given (see wasmFlags).
	wasmLimits wasmFlags
	// noWASMCache keeps the compile cache in memory (validate, which does
	// not use the store).
	noWASMCache bool
}

// usageError is a mistake on the command line; it exits with exitUsage.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// exitStatus ends a command with an exit code of its own, after the
// command printed what it had to say (demiurge sh exits with its script's
// status). execute prints nothing for it.
type exitStatus struct{ code int }

func (e *exitStatus) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// usagef returns a usageError.
func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// wantArgs checks that a command has lo to hi arguments and reports a
// usage error naming its usage line otherwise.
func wantArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if lo <= len(args) && len(args) <= hi {
			return nil
		}
		var want string
		switch {
		case hi == 0:
			want = "no arguments"
		case lo == hi:
			want = plural(lo, "argument")
		case lo == 0:
			want = "at most " + plural(hi, "argument")
		default:
			want = fmt.Sprintf("%d to %d arguments", lo, hi)
		}
		got := fmt.Sprint(len(args))
		if len(args) > 0 {
			got += fmt.Sprintf(" %q", args)
		}
		name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
		return usagef("%s takes %s, got %s (usage: %s)", name, want, got, cmd.UseLine())
	}
}

// execute runs the demiurge command line args and returns the exit code.
// Errors are printed on std.err as "demiurge: <message>". getenv reads the
// environment ($DEMIURGE_STORE).
func execute(ctx context.Context, args []string, std stdio, getenv func(string) string) int {
	return executeApp(ctx, newApp(std, nil), args, getenv)
}

// newApp returns the app of one invocation; interrupts, if not nil, routes
// Ctrl-C.
func newApp(std stdio, in *interrupts) *app {
	return &app{stdio: std, log: slog.New(slog.DiscardHandler), interrupts: in}
}

// executeApp is execute for the app a.
func executeApp(ctx context.Context, a *app, args []string, getenv func(string) string) int {
	std := a.stdio
	root := newRootCommandFor(a, getenv, args)
	if args == nil {
		args = []string{}
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var xs *exitStatus
	if errors.As(err, &xs) {
		return xs.code
	}
	if errors.Is(context.Cause(ctx), errTerminated) && (errors.Is(err, errTerminated) || errors.Is(err, context.Canceled)) {
		// Not "context canceled": what ended the command, with what
		// came of it when the command says (run: its turn).
		if !errors.Is(err, errTerminated) {
			err = errTerminated
		}
		fmt.Fprintf(std.err, "%s: %v\n", root.Name(), err)
		return exitTerminated
	}
	msg := err.Error() // it may quote a model, a tool, a server
	if !a.raw {
		msg = escapeControls(msg)
	}
	fmt.Fprintf(std.err, "%s: %s\n", root.Name(), msg)
	if a.usedStore && storeDamaged(err) && !errors.Is(err, cas.ErrMetaDamaged) { // that one says what to do
		fmt.Fprintf(std.err, "%s: the store in %s is damaged: restore it from a copy, or import a bundle that `demiurge export` wrote into a new store (--store); `demiurge cas verify` and `demiurge journal verify` show what can still be read\n", a.progName(), a.storeName())
	}
	var ue *usageError
	if errors.As(err, &ue) {
		if cmd == nil {
			cmd = root
		}
		fmt.Fprintf(std.err, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	}
	return exitFailure
}

// storeDamaged reports whether err says that the store's file or its data
// are damaged (not merely missing or locked).
func storeDamaged(err error) bool {
	return errors.Is(err, cas.ErrCorrupt) || errors.Is(err, journal.ErrCorrupt)
}

// newRootCommand builds the command tree of a, reading the default store
// directory with getenv.
func newRootCommand(a *app, getenv func(string) string) *cobra.Command {
	return newRoot(a, getenv, nil)
}

// newRootCommandFor builds the command tree that runs the command line
// args: the root with only the subcommand args name, when they name one
// after nothing but global flags (see commandNamed), else the whole tree.
// Building every command cost each start of the binary ~0.5–1 ms
// (`demiurge sh -c true` included), while a command line runs one. What
// that one does, prints and exits with is the same in either tree, for
// cobra finds it by its name and gives it the root's flags alone
// (TestCommandTreeForArgs).
func newRootCommandFor(a *app, getenv func(string) string, args []string) *cobra.Command {
	if name := commandNamed(args); name != "" {
		for _, sc := range subcommands(a, getenv) {
			if sc.name == name {
				return newRoot(a, getenv, &sc)
			}
		}
	}
	return newRootCommand(a, getenv)
}

// commandNamed returns the first argument of args that is not a global
// flag (--store DIR, --store=DIR, -v, --verbose) or a global flag's
// value: the name of the command args run. It returns "" when another
// flag or "--" comes first, or none is left.
func commandNamed(args []string) string {
	for i := 0; i < len(args); i++ {
		switch s := args[i]; {
		case s == "--store":
			i++ // its value
		case strings.HasPrefix(s, "--store=") || s == "-v" || s == "--verbose":
		case strings.HasPrefix(s, "-"):
			return ""
		default:
			return s
		}
	}
	return ""
}

// subcommand is a command of the root, and how to build it.
type subcommand struct {
	name  string // the command's Name()
	build func() *cobra.Command
}

// subcommands are the commands of the root, in the order they are added.
func subcommands(a *app, getenv func(string) string) []subcommand {
	out := []subcommand{
		{"version", func() *cobra.Command { return newVersionCommand(a) }},
		{"validate", func() *cobra.Command { return newValidateCommand(a) }},
		{"cas", func() *cobra.Command { return newCASCommand(a) }},
		{"journal", func() *cobra.Command { return newJournalCommand(a) }},
		{"run", func() *cobra.Command { return newRunCommand(a, getenv) }},
		{"approve", func() *cobra.Command { return newDecideCommand(a, getenv, true) }},
		{"deny", func() *cobra.Command { return newDecideCommand(a, getenv, false) }},
		{"send", func() *cobra.Command { return newSendCommand(a) }},
		{"worker", func() *cobra.Command { return newWorkerCommand(a, getenv) }},
		{"state", func() *cobra.Command { return newStateCommand(a) }},
		{"replay", func() *cobra.Command { return newReplayCommand(a) }},
		{"fork", func() *cobra.Command { return newForkCommand(a) }},
		{"trace", func() *cobra.Command { return newTraceCommand(a) }},
		{"export", func() *cobra.Command { return newExportCommand(a) }},
		{"import", func() *cobra.Command { return newImportCommand(a) }},
		{"recover", func() *cobra.Command { return newRecoverCommand(a) }},
		{"sh", func() *cobra.Command { return newShCommand(a, getenv) }},
		{"workspace", func() *cobra.Command { return newWorkspaceCommand(a) }},
		{"mcp", func() *cobra.Command { return newMCPCommand(a, getenv) }},
		{"worlds", func() *cobra.Command { return newWorldsCommand(a) }},
		{"ui", func() *cobra.Command { return newUICommand(a) }},
		{"serve", func() *cobra.Command { return newServeCommand(a, getenv) }},
		{"models", func() *cobra.Command { return newModelsCommand(a) }},
		{"eval", func() *cobra.Command { return newEvalCommand(a, getenv) }},
	}
	if a.ext != nil {
		for _, c := range a.ext.commands {
			out = append(out, subcommand{c.Name(), func() *cobra.Command { return c }})
		}
	}
	return out
}

// newRoot builds the root command of a with the subcommand only, or with
// every subcommand and the completion command when only is nil.
func newRoot(a *app, getenv func(string) string, only *subcommand) *cobra.Command {
	storeDefault := defaultStoreDir
	if v := getenv(storeEnv); v != "" {
		storeDefault = v
	}
	name := "demiurge"
	if a.ext != nil && a.ext.name != "" {
		name = a.ext.name
	}
	root := &cobra.Command{
		Use:   name,
		Short: "A deterministic, event-sourced workflow engine for tool-using LLM agents",
		Long: `demiurge runs worlds defined in AIR manifests. Every input is journaled and
every blob is stored under its BLAKE3 hash, so a recorded session replays to
the same bytes.

The store (--store, default .demiurge in the current directory, or
$DEMIURGE_STORE) is one bbolt file holding the content-addressed blobs and
the journal. A command that writes it holds it exclusively; read-only
commands share it and leave it unchanged. A postgres:// URL instead names a
store in PostgreSQL, which any number of processes share: its worlds run
on workers (demiurge worker), and run and send reach them there.

Exit codes:
  0  ok
  1  failure: the command could not do its job, or found problems
     (invalid AIR, a corrupt blob or journal, a replay that diverges)
  2  usage error: unknown command or flag, wrong arguments
run -m (and approve, deny, and run on a pipe, after its last message) exits
with how the turn ended:
  0  an answer
  1  a failure
  3  a guard stopped it
  4  the answer was cut off
  5  a call waits for approval: --approve ask (the default) with no terminal
     to ask at, or with --json; --approve never denies the call instead, and
     the turn goes on
  130  Ctrl-C stopped it
  143  SIGTERM (kill) stopped it, as Ctrl-C does (another command that
       SIGTERM cuts short exits 143 too; worker stops cleanly, exiting 0)
send exits 6 when its event waits in the inbox of a world of a PostgreSQL
store that no worker journaled within --wait: it is kept, and a worker
journals it when it takes the world (do not send it again).
sh exits with its script's exit status (see demiurge sh --help).
eval exits 1 when a case fails (eval compare: when a case regressed).`,
		Example: `  # the offline demo, from a checkout of the repository: the model's answers
  # come from a recorded session, the tools run for real
  demiurge run examples/demiurge --llm cassette:testdata/sessions/demo -m "Write a hello note and show it to me."
  demiurge trace
  demiurge replay
  demiurge worlds`,
		Args:          cobra.ArbitraryArgs,
		RunE:          groupRunE,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			// Without -v only errors are logged: what goes wrong in a turn
			// (a retried model call, say) is shown by the command itself.
			level := slog.LevelError
			if a.verbose {
				level = slog.LevelDebug
			}
			a.log = slog.New(slog.NewTextHandler(a.err, &slog.HandlerOptions{Level: level}))
			a.command = cmd.CommandPath()
			if f := cmd.Flag("store"); f != nil {
				a.storeGiven = f.Changed
			}
			if _, _, err := a.wasmLimits.limits(); err != nil {
				return err
			}
			return nil
		},
	}
	// --version prints what the version command prints.
	root.Version = readVersion(debug.ReadBuildInfo()).text()
	root.SetVersionTemplate("{{.Version}}")
	root.SetIn(a.in)
	root.SetOut(a.out)
	root.SetErr(a.err)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return &usageError{err}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.storeDir, "store", storeDefault, "the store: a `DIR`ectory, or a postgres:// URL (env "+storeEnv+")")
	// --help shows the default from $DEMIURGE_STORE without its password.
	pf.Lookup("store").DefValue = store.Redact(storeDefault)
	pf.BoolVarP(&a.verbose, "verbose", "v", false, "log debug messages on stderr (without it, only errors are logged)")
	pf.BoolVar(&a.wasi, "wasi", false, "let WASM reducer modules import a deterministic WASI (fixed clocks, zero entropy, no files or environment), as Go's wasip1 and TinyGo modules need")
	a.wasmLimits.add(pf)

	if only != nil {
		// The command line runs this one command. Cobra's completion
		// command, which it would add as the root has a subcommand, is
		// left out: "completion" and "__complete" build the whole tree.
		root.CompletionOptions.DisableDefaultCmd = true
		root.AddCommand(only.build())
		registerCompletions(a, root)
		return root
	}
	for _, sc := range subcommands(a, getenv) {
		root.AddCommand(sc.build())
	}
	initCompletionCommand(root)
	registerCompletions(a, root)
	return root
}

// initCompletionCommand adds cobra's completion command (bash, zsh, fish,
// powershell) with the usage errors and examples of the other commands.
func initCompletionCommand(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Args, c.RunE = cobra.ArbitraryArgs, groupRunE
		c.Example = `  # bash: load completions now, or for every new shell
  source <(demiurge completion bash)
  demiurge completion bash > ~/.local/share/bash-completion/completions/demiurge
  # zsh
  demiurge completion zsh > "${fpath[1]}/_demiurge"
  # fish
  demiurge completion fish > ~/.config/fish/completions/demiurge.fish`
		for _, sh := range c.Commands() {
			sh.Args = wantArgs(0, 0)
			sh.Example = completionExamples[sh.Name()]
		}
	}
}

// completionExamples are the examples of the completion commands.
var completionExamples = map[string]string{
	"bash":       "  source <(demiurge completion bash)\n  demiurge completion bash > ~/.local/share/bash-completion/completions/demiurge",
	"zsh":        "  demiurge completion zsh > \"${fpath[1]}/_demiurge\"",
	"fish":       "  demiurge completion fish > ~/.config/fish/completions/demiurge.fish",
	"powershell": "  demiurge completion powershell | Out-String | Invoke-Expression",
}

// completeWorlds completes --world with the worlds of the store.
func completeWorlds(a *app) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		s, err := a.openStore(cmd.Context(), true)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer s.Close()
		names, _ := s.Journal().Worlds(cmd.Context())
		var out []string
		for _, n := range names {
			if strings.HasPrefix(n, prefix) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// registerCompletions completes the flags whose values the store knows
// (--world) in every command that has them, unless the command completes
// them itself (fork's --world names a new world).
func registerCompletions(a *app, c *cobra.Command) {
	if _, own := c.GetFlagCompletionFunc("world"); c.Flags().Lookup("world") != nil && !own {
		_ = c.RegisterFlagCompletionFunc("world", completeWorlds(a))
	}
	for _, sub := range c.Commands() {
		registerCompletions(a, sub)
	}
}

// groupRunE is the RunE of a command that only groups subcommands: with
// no arguments it prints its help, with any it reports an unknown
// command. (cobra would print the help and succeed.)
func groupRunE(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usagef("%s", msg)
}

// notWritten explains a store.ErrNotExist: nothing has written the store
// yet (a PostgreSQL store's error, pgstore.ErrNoStore, says so already).
func notWritten(err error) error {
	if errors.Is(err, pgstore.ErrNoStore) {
		return fmt.Errorf("%w; pick another with --store or $%s", err, storeEnv)
	}
	return fmt.Errorf("%w (nothing has written it yet; pick another with --store or $%s)", err, storeEnv)
}

// openStore opens the store named by --store, read-only or read-write.
func (a *app) openStore(ctx context.Context, readOnly bool) (*store.Handle, error) {
	a.log.Debug("open store", "dir", a.storeName(), "read_only", readOnly)
	a.usedStore = true
	s, err := store.OpenAt(ctx, a.storeDir, &store.Options{ReadOnly: readOnly, Holder: a.command})
	if err != nil {
		if errors.Is(err, store.ErrNotExist) {
			return nil, notWritten(err)
		}
		var le *store.LockedError
		if errors.As(err, &le) && !readOnly {
			return nil, fmt.Errorf("%w: %s", err, lockedHint(le))
		}
		return nil, err
	}
	if pid := s.Served(); pid != 0 {
		a.log.Debug("reading through the process that writes the store", "dir", a.storeName(), "pid", pid)
	}
	return s, nil
}

// lockedHint says what to do about a store another process holds (le):
// stop it or use another store, or, when it is demiurge serve, send it
// the request over HTTP.
func lockedHint(le *store.LockedError) string {
	hint := "stop it (or let it finish), or give this command another store (--store DIR)"
	if strings.HasSuffix(le.Holder, " serve") {
		hint += "; or ask that server over HTTP (docs/api.md): a message is POST /v1/worlds/WORLD/chats/CHAT/messages, an approval POST …/approvals/CALL"
	}
	return hint
}

// checkFile checks the store's file (Handle.CheckFile), except that a
// store read through the process that writes it, whose file cannot be
// checked meanwhile, is taken as sound.
func checkFile(ctx context.Context, s *store.Handle) error {
	if err := s.CheckFile(ctx); err != nil && !errors.Is(err, store.ErrServed) {
		return err
	}
	return nil
}

// explainMissing adds to err, when it says that a blob the journal names is
// missing or that a replay diverges, whether the store's file is damaged
// (the page check of cas verify): a damaged page can hide a blob without
// changing a byte of it. It returns err as it is otherwise.
func explainMissing(ctx context.Context, s *store.Handle, err error) error {
	if err == nil || storeDamaged(err) || ctx.Err() != nil {
		return err
	}
	if _, diverged := errors.AsType[*world.DivergenceError](err); !diverged && !errors.Is(err, cas.ErrNotFound) {
		return err
	}
	if ferr := checkFile(ctx, s); ferr != nil {
		return fmt.Errorf("%w\nthe store's file is damaged, which may be why: %w", err, ferr)
	}
	return err
}

// notingGetter is a cas.Getter that notes the blobs its reads found damaged
// or missing, for commands that show what they can without them (trace).
type notingGetter struct {
	cas.Getter
	mu      sync.Mutex
	damage  error // the first read that found the store damaged
	missing int   // reads that found nothing
}

func (g *notingGetter) Get(ctx context.Context, ref cas.Ref) ([]byte, error) {
	b, err := g.Getter.Get(ctx, ref)
	if err != nil {
		g.mu.Lock()
		switch {
		case errors.Is(err, cas.ErrCorrupt) && g.damage == nil:
			g.damage = err
		case errors.Is(err, cas.ErrNotFound):
			g.missing++
		}
		g.mu.Unlock()
	}
	return b, err
}

// check returns an error if a read found the store in s damaged, or found
// a blob missing from a store whose file is damaged (a damaged page can
// hide a blob); blobs missing from a sound store are not an error.
func (g *notingGetter) check(ctx context.Context, s *store.Handle, op string) error {
	g.mu.Lock()
	damage, missing := g.damage, g.missing
	g.mu.Unlock()
	if damage != nil {
		return fmt.Errorf("%s: what could not be shown above: %w", op, damage)
	}
	if missing == 0 || ctx.Err() != nil {
		return nil
	}
	if err := checkFile(ctx, s); err != nil {
		return fmt.Errorf("%s: %s the records name not found in the store, whose file is damaged: %w", op, plural(missing, "blob"), err)
	}
	return nil
}

// describedError is an error shown as replay.Describe shows it (a replay
// divergence as a diff), which errors.Is and errors.As still see through.
type describedError struct {
	err  error
	opts replay.DescribeOptions
}

func (e *describedError) Error() string { return replay.DescribeWith(e.err, e.opts) }
func (e *describedError) Unwrap() error { return e.err }

// describe returns err shown as replay.Describe shows it.
func describe(err error) error { return &describedError{err: err} }

// describeKept is describe for a replay's divergence, whose derived
// blobs (the replayed state) it keeps in a store of their own
// (replay.Keep), saying where.
func describeKept(ctx context.Context, err error) error {
	dir, kerr := replay.Keep(ctx, err)
	if kerr != nil {
		return fmt.Errorf("%w\n(the replayed state could not be kept: %v)", describe(err), kerr)
	}
	return &describedError{err: err, opts: replay.DescribeOptions{KeptIn: dir}}
}

// storeName is the store as messages name it: its directory, or its URL
// without the password.
func (a *app) storeName() string { return store.Redact(a.storeDir) }

// closeStore closes s, keeping the first error in *errp.
func closeStore(s *store.Handle, errp *error) {
	if err := s.Close(); err != nil && *errp == nil {
		*errp = err
	}
}

// notef writes a note on stderr: what the command says of what it does,
// going on (not an error): "demiurge: note: …", apart from an error's
// "demiurge: …" (docs/cli.md, "Messages").
func (a *app) notef(format string, args ...any) {
	fmt.Fprintf(a.err, "%s: note: %s\n", a.progName(), fmt.Sprintf(format, args...))
}

// warnf writes a warning on stderr: something went wrong or is
// deprecated, and the command goes on: "demiurge: warning: …".
func (a *app) warnf(format string, args ...any) {
	fmt.Fprintf(a.err, "%s: warning: %s\n", a.progName(), fmt.Sprintf(format, args...))
}

// progName is the program's name as its messages start: "demiurge", or
// the name a program that extends the command line gives (WithName).
func (a *app) progName() string {
	if a.ext != nil && a.ext.name != "" {
		return a.ext.name
	}
	return "demiurge"
}
