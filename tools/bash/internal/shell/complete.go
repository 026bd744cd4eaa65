package shell

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// Programmable completion without a terminal: complete records specs
// (and prints them), compgen generates the words a spec would offer,
// compopt changes options. Nothing completes interactively.

// compSpec is a completion specification.
type compSpec struct {
	options  []string // -o
	actions  []string // -A names, in order
	glob     string   // -G
	words    string   // -W
	hasWords bool
	function string // -F
	command  string // -C
	filter   string // -X
	prefix   string // -P
	suffix   string // -S
}

// compActions maps compgen's letter flags to action names.
var compActions = map[byte]string{'a': "alias", 'b': "builtin", 'c': "command", 'd': "directory", 'e': "export",
	'f': "file", 'g': "group", 'j': "job", 'k': "keyword", 's': "service", 'u': "user", 'v': "variable"}

var compActionNames = []string{"alias", "arrayvar", "binding", "builtin", "command", "directory", "disabled",
	"enabled", "export", "file", "function", "group", "helptopic", "hostname", "job", "keyword", "running",
	"service", "setopt", "shopt", "signal", "stopped", "user", "variable"}

var compOptionNames = []string{"bashdefault", "default", "dirnames", "filenames", "noquote", "nosort", "nospace",
	"plusdirs"}

const completeUsage = "complete: usage: complete [-abcdefgjksuv] [-pr] [-DEI] [-o option] [-A action] [-G globpat] [-W wordlist] [-F function] [-C command] [-X filterpat] [-P prefix] [-S suffix] [name ...]"

// parseCompSpec reads the options of complete and compgen; rest are the
// names (complete) or the word (compgen).
func (sh *shell) parseCompSpec(name string, args []string) (spec *compSpec, flags string, rest []string, status int) {
	spec = &compSpec{}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			takes := strings.IndexByte("oAGWFCXPS", c) >= 0
			val := ""
			if takes {
				if j+1 < len(a) {
					val = a[j+1:]
				} else if i+1 < len(args) {
					i++
					val = args[i]
				} else {
					sh.errorf("%s: -%c: option requires an argument", name, c)
					return nil, "", nil, 2
				}
			}
			switch c {
			case 'o':
				if !slices.Contains(compOptionNames, val) {
					sh.errorf("%s: %s: invalid option name", name, val)
					return nil, "", nil, 2
				}
				spec.options = append(spec.options, val)
			case 'A':
				if !slices.Contains(compActionNames, val) {
					sh.errorf("%s: %s: invalid action name", name, val)
					return nil, "", nil, 2
				}
				spec.actions = append(spec.actions, val)
			case 'G':
				spec.glob = val
			case 'W':
				spec.words, spec.hasWords = val, true
			case 'F':
				spec.function = val
			case 'C':
				spec.command = val
			case 'X':
				spec.filter = val
			case 'P':
				spec.prefix = val
			case 'S':
				spec.suffix = val
			case 'p', 'r', 'D', 'E', 'I':
				flags += string(c)
			default:
				act, ok := compActions[c]
				if !ok {
					sh.errorf("%s: -%c: invalid option", name, c)
					if name == "complete" {
						sh.writeErr(completeUsage + "\n")
					}
					return nil, "", nil, 2
				}
				spec.actions = append(spec.actions, act)
			}
			if takes {
				break
			}
		}
	}
	return spec, flags, args[i:], 0
}

// compSpecText prints a spec as complete -p does.
func compSpecText(name string, s *compSpec) string {
	var b strings.Builder
	b.WriteString("complete")
	for _, o := range s.options {
		b.WriteString(" -o " + o)
	}
	for _, a := range s.actions {
		letter := ""
		for c, n := range compActions {
			if n == a {
				letter = string(c)
			}
		}
		if letter != "" {
			b.WriteString(" -" + letter)
		} else {
			b.WriteString(" -A " + a)
		}
	}
	if s.glob != "" {
		b.WriteString(" -G " + aliasQuote(s.glob))
	}
	if s.hasWords {
		b.WriteString(" -W " + aliasQuote(s.words))
	}
	if s.prefix != "" {
		b.WriteString(" -P " + aliasQuote(s.prefix))
	}
	if s.suffix != "" {
		b.WriteString(" -S " + aliasQuote(s.suffix))
	}
	if s.filter != "" {
		b.WriteString(" -X " + aliasQuote(s.filter))
	}
	if s.function != "" {
		b.WriteString(" -F " + s.function)
	}
	if s.command != "" {
		b.WriteString(" -C " + aliasQuote(s.command))
	}
	b.WriteString(" " + name + "\n")
	return b.String()
}

func builtinComplete(sh *shell, args []string) int {
	spec, flags, names, st := sh.parseCompSpec("complete", args[1:])
	if st != 0 {
		return st
	}
	if strings.Contains(flags, "D") {
		names = append(names, "_DefaultCmD_")
	}
	if strings.Contains(flags, "E") {
		names = append(names, "_EmptycmD_")
	}
	if strings.Contains(flags, "I") {
		names = append(names, "_InitialWorD_")
	}
	empty := len(spec.actions) == 0 && len(spec.options) == 0 && !spec.hasWords && spec.glob == "" &&
		spec.function == "" && spec.command == "" && spec.filter == "" && spec.prefix == "" && spec.suffix == ""
	if strings.Contains(flags, "r") {
		if len(names) == 0 {
			sh.compSpecs = nil
			return 0
		}
		specs := sh.compSpecsWritable()
		status := 0
		for _, n := range names {
			if _, ok := specs[n]; !ok {
				sh.errorf("complete: %s: no completion specification", n)
				status = 1
			}
			delete(specs, n)
		}
		return status
	}
	if strings.Contains(flags, "p") || len(names) == 0 && empty {
		var b strings.Builder
		status := 0
		list := names
		if len(list) == 0 {
			list = sortedKeys(sh.compSpecs)
		}
		for _, n := range list {
			s, ok := sh.compSpecs[n]
			if !ok {
				sh.errorf("complete: %s: no completion specification", n)
				status = 1
				continue
			}
			b.WriteString(compSpecText(n, s))
		}
		sh.out("complete", b.String())
		return status
	}
	if len(names) == 0 {
		sh.writeErr(completeUsage + "\n")
		return 2
	}
	specs := sh.compSpecsWritable()
	for _, n := range names {
		c := *spec
		specs[n] = &c
	}
	return 0
}

// compSpecsWritable returns the specs for writing (a subshell copies its
// parent's first).
func (sh *shell) compSpecsWritable() map[string]*compSpec {
	m := make(map[string]*compSpec, len(sh.compSpecs)+1)
	for k, v := range sh.compSpecs {
		m[k] = v
	}
	sh.compSpecs = m
	return m
}

func builtinCompopt(sh *shell, args []string) int {
	args = args[1:]
	names := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case (a == "-o" || a == "+o") && i+1 < len(args):
			if !slices.Contains(compOptionNames, args[i+1]) {
				sh.errorf("compopt: %s: invalid option name", args[i+1])
				return 2
			}
			i++
		case a == "-D" || a == "-E" || a == "-I":
			names++
		case !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+"):
			names++
		}
	}
	if names == 0 {
		sh.errorf("compopt: not currently executing completion function")
		return 1
	}
	return 0
}

func builtinCompgen(sh *shell, args []string) int {
	spec, _, rest, st := sh.parseCompSpec("compgen", args[1:])
	if st != 0 {
		return st
	}
	word := ""
	if len(rest) > 0 {
		word = rest[0]
	}
	if spec.function != "" {
		sh.errorf("compgen: warning: -F option may not work as you expect")
	}
	if spec.command != "" {
		sh.errorf("compgen: warning: -C option may not work as you expect")
	}
	words, ok := sh.compGenerate(spec, word)
	if !ok {
		return 1
	}
	if len(words) == 0 {
		return 1
	}
	var b strings.Builder
	for _, w := range words {
		b.WriteString(spec.prefix + w + spec.suffix + "\n")
	}
	sh.out("compgen", b.String())
	return 0
}

// compGenerate lists the words a spec offers for word.
func (sh *shell) compGenerate(spec *compSpec, word string) ([]string, bool) {
	var out []string
	prefixed := func(list []string) {
		for _, w := range list {
			if strings.HasPrefix(w, word) {
				out = append(out, w)
			}
		}
	}
	for _, a := range spec.actions {
		switch a {
		case "alias":
			prefixed(sortedKeys(sh.aliases.m))
		case "arrayvar":
			var names []string
			for _, n := range sh.allNames() {
				if v := sh.getVar(n); v != nil && v.isArray() {
					names = append(names, n)
				}
			}
			prefixed(names)
		case "builtin", "enabled", "helptopic":
			prefixed(visibleBuiltins())
		case "command":
			var names []string
			names = append(names, sortedKeys(sh.aliases.m)...)
			names = append(names, visibleBuiltins()...)
			names = append(names, sortedKeys(sh.funcs.m)...)
			names = append(names, keywords...)
			if sh.r.cfg.Names != nil {
				names = append(names, sh.r.cfg.Names()...)
			}
			slices.Sort(names)
			prefixed(slices.Compact(names))
		case "directory", "file":
			out = append(out, sh.compFiles(word, a == "directory")...)
		case "export":
			var names []string
			for _, kv := range sh.exported() {
				names = append(names, kv[:strings.IndexByte(kv, '=')])
			}
			prefixed(names)
		case "function":
			prefixed(sortedKeys(sh.funcs.m))
		case "keyword":
			prefixed(keywords)
		case "setopt":
			prefixed(optionNames)
		case "shopt":
			prefixed(shoptNames)
		case "signal":
			var names []string
			for _, n := range signalNames[1:] {
				names = append(names, "SIG"+n)
			}
			prefixed(names)
		case "user":
			var names []string
			for _, u := range sandboxUsers {
				names = append(names, u.name)
			}
			if sh.r.cfg.User != "" && !slices.Contains(names, sh.r.cfg.User) {
				names = append(names, sh.r.cfg.User)
			}
			prefixed(names)
		case "hostname":
			if sh.r.cfg.Host != "" {
				prefixed([]string{sh.r.cfg.Host})
			}
		case "variable":
			prefixed(sh.allNames())
		}
	}
	if spec.glob != "" {
		out = append(out, sh.glob(spec.glob)...)
	}
	if spec.hasWords {
		list, ok := sh.compWordList(spec.words)
		if !ok {
			return nil, false
		}
		prefixed(list)
	}
	if spec.function != "" {
		fn, ok := sh.funcs.m[spec.function]
		if ok {
			sh.unsetVar("COMPREPLY", false)
			sh.setString("COMP_LINE", "", false)
			sh.setString("COMP_POINT", "0", false)
			sh.setString("COMP_CWORD", "-1", false)
			sh.setArray("COMP_WORDS", nil, false, false)
			sh.callFunc(fn, []string{spec.function, "compgen", word, ""})
			if v := sh.getVar("COMPREPLY"); v != nil && v.set {
				switch {
				case v.arr != nil:
					out = append(out, v.arr.values()...)
				case v.assc != nil:
					out = append(out, v.assc.values()...)
				default:
					out = append(out, v.str)
				}
			}
		}
	}
	if spec.command != "" {
		sub := sh.fork()
		buf := &substBuf{max: sh.r.lim.MaxSubstBytes, meter: sh.r.budget.NewMeter(), sh: sh}
		sub.fds.set(1, newOFile(nil, buf, nil, "pipe"))
		sub.runSubshell(func() {
			sub.runSource(&source{name: "compgen", text: spec.command + " compgen " + shellQuote(word) + " ''"}, false)
		})
		sub.release()
		buf.meter.Close()
		for _, l := range strings.Split(strings.TrimRight(buf.b.String(), "\n"), "\n") {
			if l != "" {
				out = append(out, l)
			}
		}
	}
	if spec.filter != "" {
		pat := strings.ReplaceAll(spec.filter, "&", word)
		neg := strings.HasPrefix(pat, "!")
		if neg {
			pat = pat[1:]
		}
		p := compilePattern(pat, false, true)
		kept := out[:0]
		for _, w := range out {
			if p.match(w) == neg {
				kept = append(kept, w)
			}
		}
		out = kept
	}
	return out, true
}

// keywords are the shell's reserved words, as compgen -k lists them.
var keywords = []string{"if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until",
	"do", "done", "in", "function", "time", "{", "}", "!", "[[", "]]", "coproc"}

// visibleBuiltins are the builtins, without the shells.
func visibleBuiltins() []string {
	return slices.DeleteFunc(Builtins(), func(n string) bool { return n == "bash" || n == "sh" })
}

// compFiles lists the files (or directories) whose names start with
// word.
func (sh *shell) compFiles(word string, dirsOnly bool) []string {
	dir, base := "", word
	if i := strings.LastIndexByte(word, '/'); i >= 0 {
		dir, base = word[:i+1], word[i+1:]
	}
	fsys := sh.r.cfg.FS
	if fsys == nil {
		return nil
	}
	list := dir
	if list == "" {
		list = "."
	}
	infos, err := fsys.ReadDir(sh.r.ctx, vfs.Abs(sh.dir, list))
	if err != nil {
		return nil
	}
	var out []string
	for _, in := range infos {
		n := in.Name()
		if !strings.HasPrefix(n, base) || strings.HasPrefix(n, ".") && !strings.HasPrefix(base, ".") {
			continue
		}
		if dirsOnly && !in.IsDir() {
			continue
		}
		out = append(out, dir+n)
	}
	return out
}

// compWordList expands compgen's -W list: expansions done, then split on
// IFS, a backslash keeping a delimiter.
func (sh *shell) compWordList(words string) ([]string, bool) {
	text := words
	if strings.ContainsAny(words, "$`") {
		p := parsers.Get().(*syntax.Parser)
		w, err := p.Document(strings.NewReader(words))
		parsers.Put(p)
		if err != nil {
			sh.errorf("%s: bad substitution", words)
			return nil, false
		}
		ok := true
		func() {
			defer func() {
				if p := recover(); p != nil {
					if _, fatal := p.(fatalPanic); !fatal {
						panic(p)
					}
					ok = false
				}
			}()
			e := sh.newStringExpander()
			e.heredoc = true
			e.word(w.Parts, true)
			text = e.str()
		}()
		if !ok {
			return nil, false
		}
	}
	ifs := sh.ifs()
	var out []string
	var cur strings.Builder
	started := false
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\\' && i+1 < len(text) {
			cur.WriteByte(text[i+1])
			started = true
			i++
			continue
		}
		if strings.IndexByte(ifs, c) >= 0 {
			if started {
				out = append(out, cur.String())
				cur.Reset()
				started = false
			}
			continue
		}
		cur.WriteByte(c)
		started = true
	}
	if started {
		out = append(out, cur.String())
	}
	return out, true
}
