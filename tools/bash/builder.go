package bash

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/coreutils"
	"github.com/demiurge-dev/demiurge/tools/bash/internal/shell"
)

// Builder configures a Tool. Its methods record settings and
// return the Builder for chaining; mistakes (a duplicate or invalid tool
// name, a bad schema or environment variable) are reported by Build.
// A Builder is not safe for concurrent use; Build does not consume it.
type Builder struct {
	name      string
	short     string
	tools     []*registered
	env       [][2]string
	limits    Limits
	sanitize  bool
	compact   bool
	clock     func() time.Time
	user      string
	host      string
	filesNote string
	errs      []error
}

// NewBuilder starts a bash tool called name (its identifier in
// registries and LLM tool specs).
func NewBuilder(name string) *Builder {
	return &Builder{name: name, limits: DefaultLimits(), sanitize: true, user: DefaultUsername, host: DefaultHostname,
		filesNote: DefaultFilesNote}
}

// FilesNote sets the system prompt's tip about files (default
// DefaultFilesNote): say what the files are and whether they last.
func (b *Builder) FilesNote(s string) *Builder {
	b.filesNote = s
	return b
}

// Defaults of Username and Hostname.
const (
	DefaultUsername = "agent"
	DefaultHostname = "sandbox"
)

// Username sets what whoami prints and $USER holds (default "agent").
func (b *Builder) Username(name string) *Builder {
	b.user = name
	return b
}

// Hostname sets what hostname prints and $HOSTNAME holds (default
// "sandbox").
func (b *Builder) Hostname(name string) *Builder {
	b.host = name
	return b
}

// ShortDescription sets the one-line summary; the default is
// "ScriptedTool: <name>".
func (b *Builder) ShortDescription(s string) *Builder {
	b.short = s
	return b
}

// Tool registers a command whose callback receives parsed, validated
// flags.
func (b *Builder) Tool(def ToolDef, fn ToolCallback) *Builder {
	if fn == nil {
		b.errs = append(b.errs, fmt.Errorf("tool %q: nil callback", def.Name))
		return b
	}
	b.tools = append(b.tools, &registered{def: def, fn: fn})
	return b
}

// PositionalTool registers a command whose callback receives its argv
// unparsed (the seed's `(args, stdin)` form). --help and --dry-run are
// still interpreted; the input schema, if any, is only documentation.
func (b *Builder) PositionalTool(def ToolDef, fn PositionalCallback) *Builder {
	if fn == nil {
		b.errs = append(b.errs, fmt.Errorf("tool %q: nil callback", def.Name))
		return b
	}
	b.tools = append(b.tools, &registered{def: def, pos: fn})
	return b
}

// Env sets an environment variable of every script. Scripts see only
// these variables, plus HOME=/, PWD=/, PATH= (empty) and a few shell
// variables; never the host's.
func (b *Builder) Env(key, value string) *Builder {
	b.env = append(b.env, [2]string{key, value})
	return b
}

// Limits sets the execution limits; unset fields keep their defaults.
func (b *Builder) Limits(l Limits) *Builder {
	b.limits = l
	return b
}

// SanitizeErrors chooses whether a callback's error text is hidden from
// the script (the default, true: "<tool>: callback failed") or printed
// (false: "<tool>: <error>"). A UserError is always printed.
func (b *Builder) SanitizeErrors(on bool) *Builder {
	b.sanitize = on
	return b
}

// CompactPrompt makes SystemPrompt list commands with their descriptions
// instead of their flags, for tools with many commands.
func (b *Builder) CompactPrompt(on bool) *Builder {
	b.compact = on
	return b
}

// Clock sets the clock `date` reads; the default is time.Now. A world
// passes its ingress stamp here (or per run, in RunOptions.Clock).
func (b *Builder) Clock(now func() time.Time) *Builder {
	b.clock = now
	return b
}

// toolNamePattern is what isToolName accepts, for its error messages.
const toolNamePattern = `^[A-Za-z_][A-Za-z0-9_.-]*$`

// isToolName tells a valid tool name: toolNamePattern, checked by hand
// (compiling the regexp was ~0.1 ms of every start of demiurge sh).
func isToolName(s string) bool { return isName(s, "_.-") }

// isEnvName tells a valid variable name: ^[A-Za-z_][A-Za-z0-9_]*$.
func isEnvName(s string) bool { return isName(s, "_") }

// isName: a letter or _, then letters, digits and the bytes of more.
func isName(s, more string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c == '_':
		case i > 0 && (c >= '0' && c <= '9' || strings.IndexByte(more, c) >= 0):
		default:
			return false
		}
	}
	return s != ""
}

// reservedEnv are variables the sandbox sets itself.
var reservedEnv = map[string]bool{
	"HOME": true, "PWD": true, "PATH": true, "TMPDIR": true, "UID": true, "EUID": true,
	"GID": true, "IFS": true, "OPTIND": true, "USER": true, "LOGNAME": true, "HOSTNAME": true,
	"SHELL": true, "OLDPWD": true,
}

// Build checks the configuration and returns the tool. Errors name the
// offending tool or variable.
func (b *Builder) Build() (*Tool, error) {
	errs := slices.Clone(b.errs)
	if !isToolName(b.name) {
		errs = append(errs, fmt.Errorf("tool name %q: want letters, digits, '_', '-' or '.'", b.name))
	}
	t := &Tool{
		name:      b.name,
		short:     b.short,
		byName:    make(map[string]*registered),
		limits:    b.limits.withDefaults(),
		sanitize:  b.sanitize,
		compact:   b.compact,
		clock:     b.clock,
		jq:        &coreutils.JQCache{},
		user:      b.user,
		host:      b.host,
		filesNote: b.filesNote,
	}
	for _, nv := range [][2]string{{"username", b.user}, {"hostname", b.host}} {
		if !isEnvName(strings.ReplaceAll(nv[1], "-", "_")) {
			errs = append(errs, fmt.Errorf("%s %q: want letters, digits, '_' or '-'", nv[0], nv[1]))
		}
	}
	if t.short == "" {
		t.short = "ScriptedTool: " + b.name
	}
	for _, r := range b.tools {
		name := r.def.Name
		switch {
		case !isToolName(name):
			errs = append(errs, fmt.Errorf("tool %q: name must match %s", name, toolNamePattern))
			continue
		case strings.HasPrefix(name, shell.ReservedPrefix):
			errs = append(errs, fmt.Errorf("tool %q: names starting with %s are reserved by the shell", name, shell.ReservedPrefix))
			continue
		case syntax.IsKeyword(name) || shell.IsBuiltin(name) || name == "help" || name == "discover":
			errs = append(errs, fmt.Errorf("tool %q: clashes with a shell keyword or builtin", name))
			continue
		}
		if _, ok := coreutils.Lookup(name); ok {
			errs = append(errs, fmt.Errorf("tool %q: clashes with the sandbox utility of that name", name))
			continue
		}
		if _, dup := t.byName[name]; dup {
			errs = append(errs, fmt.Errorf("tool %q: registered twice", name))
			continue
		}
		sch, doc, err := compileSchema(name, r.def.InputSchema)
		if err != nil {
			errs = append(errs, fmt.Errorf("tool %q: %w", name, err))
			continue
		}
		reg := &registered{def: r.def, fn: r.fn, pos: r.pos, schema: sch, flags: &flagSchema{root: doc}}
		if sch != nil {
			reg.fast = newFastSchema(doc)
		}
		reg.def.Tags = slices.Clone(r.def.Tags)
		reg.usage = usageHint(reg.flags)
		t.tools = append(t.tools, reg)
		t.byName[name] = reg
	}
	seen := make(map[string]bool)
	for _, kv := range b.env {
		k := kv[0]
		switch {
		case !isEnvName(k):
			errs = append(errs, fmt.Errorf("environment variable %q: invalid name", k))
		case reservedEnv[k]:
			errs = append(errs, fmt.Errorf("environment variable %q: set by the sandbox", k))
		case strings.ContainsRune(kv[1], 0):
			errs = append(errs, fmt.Errorf("environment variable %q: value contains a NUL byte", k))
		case seen[k]:
			errs = append(errs, fmt.Errorf("environment variable %q: set twice", k))
		default:
			seen[k] = true
			t.env = append(t.env, k+"="+kv[1])
			t.envNames = append(t.envNames, k)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("bash tool %s: %w", b.name, err)
	}
	return t, nil
}

// MustBuild is Build for configurations known to be valid (tests,
// examples): it panics on error.
func (b *Builder) MustBuild() *Tool {
	t, err := b.Build()
	if err != nil {
		panic(err)
	}
	return t
}
