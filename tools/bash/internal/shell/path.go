package shell

import (
	"fmt"
	"strings"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// Commands along $PATH. The sandbox's utilities are programs in /usr/bin
// and /bin (one directory, as on a merged-/usr system); a script of the
// workspace is a program in its directory. A name is looked for in
// $PATH's directories in order, as bash does: a script in a directory
// before /usr/bin comes before the utility of the same name, and a
// utility is not found when $PATH names neither /usr/bin nor /bin. The
// tools of the sandbox are not programs: they are found whatever $PATH
// says.

// utilityDirs are the directories the utilities are in.
var utilityDirs = map[string]bool{"/usr/bin": true, "/bin": true, "/usr/bin/": true, "/bin/": true}

// defaultPath is the $PATH of command -p.
const defaultPath = "/usr/bin:/bin"

// pathHit is a command found along $PATH: a utility (script false) or a
// file of the workspace; shown is its path as bash shows it (the
// directory as $PATH spells it), abs its absolute path.
type pathHit struct {
	shown, abs string
	script     bool
	exec       bool // the file is executable (utilities are)
}

// isUtility reports whether name is a utility of the sandbox (a program,
// not a tool).
func (sh *shell) isUtility(name string) bool {
	if name == "bash" || name == "sh" || shellUtility[name] {
		return true
	}
	return sh.r.cfg.Kind != nil && sh.r.cfg.Kind(name) == "file"
}

// currentPath is $PATH for a lookup: the command's own PATH=..., command
// -p's default, or the variable.
func (sh *shell) currentPath(assigns []tempAssign) (string, bool) {
	if sh.defaultPathLookup {
		return defaultPath, true
	}
	for _, a := range assigns {
		if a.name == "PATH" {
			return a.val, true
		}
	}
	return sh.varValue("PATH")
}

// searchPath finds name along path: the first hit (an executable file
// before a file that is not), or every hit when all is set.
func (sh *shell) searchPath(name, path string, all bool) []pathHit {
	if name == "" || strings.Contains(name, "/") {
		return nil
	}
	utility := sh.isUtility(name)
	fsys := sh.r.cfg.FS
	var hits []pathHit
	var lose *pathHit // a file that is not executable: found only if nothing else is
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		shown := strings.TrimSuffix(dir, "/") + "/" + name
		if utilityDirs[dir] {
			if utility {
				hits = append(hits, pathHit{shown: shown, abs: shown, exec: true})
				if !all {
					return hits
				}
			}
			continue
		}
		if fsys == nil {
			continue
		}
		abs := vfs.Abs(sh.dir, shown)
		if !strings.HasPrefix(abs, vfs.WorkspaceDir+"/") && !strings.HasPrefix(abs, vfs.TmpDir+"/") {
			continue
		}
		info, err := fsys.Stat(sh.r.ctx, abs)
		if err != nil || info.IsDir() {
			continue
		}
		h := pathHit{shown: shown, abs: abs, script: true, exec: info.Mode()&0o111 != 0}
		if !h.exec {
			if lose == nil {
				lose = &h
			}
			continue
		}
		hits = append(hits, h)
		if !all {
			return hits
		}
	}
	if len(hits) == 0 && lose != nil {
		hits = append(hits, *lose)
	}
	return hits
}

// findCommand is the first hit for name along the current $PATH.
func (sh *shell) findCommand(name string, assigns []tempAssign) (pathHit, bool) {
	path, ok := sh.currentPath(assigns)
	if !ok {
		return pathHit{}, false
	}
	hits := sh.searchPath(name, path, false)
	if len(hits) == 0 {
		return pathHit{}, false
	}
	return hits[0], true
}

// hashTable remembers where commands were found (bash's hash), for the
// $PATH it was filled with.
type hashTable struct {
	path string
	m    map[string]*hashEntry
}

type hashEntry struct {
	hit  pathHit
	hits int
}

// hashWritable returns the table for writing, emptied if $PATH changed.
func (sh *shell) hashWritable(path string) *hashTable {
	switch {
	case sh.hash == nil || sh.hash.path != path:
		sh.hash = &hashTable{path: path, m: map[string]*hashEntry{}}
	case sh.hashShared:
		m := make(map[string]*hashEntry, len(sh.hash.m))
		for k, e := range sh.hash.m {
			c := *e
			m[k] = &c
		}
		sh.hash = &hashTable{path: path, m: m}
	}
	sh.hashShared = false
	return sh.hash
}

// runLookup finds a program to run: from the hash table, else along
// $PATH (and remembered). A command's own PATH=... and command -p do
// not use the table.
func (sh *shell) runLookup(name string, assigns []tempAssign) (pathHit, bool) {
	if sh.defaultPathLookup || len(assigns) > 0 && hasAssign(assigns, "PATH") {
		return sh.findCommand(name, assigns)
	}
	path, ok := sh.varValue("PATH")
	if !ok {
		return pathHit{}, false
	}
	if sh.hash != nil && sh.hash.path == path && sh.opts.hashall {
		if e, ok := sh.hash.m[name]; ok {
			e2 := sh.hashWritable(path).m[name]
			e2.hits++
			return e.hit, true
		}
	}
	hits := sh.searchPath(name, path, false)
	if len(hits) == 0 {
		return pathHit{}, false
	}
	if sh.opts.hashall {
		sh.hashWritable(path).m[name] = &hashEntry{hit: hits[0], hits: 1}
	}
	return hits[0], true
}

func hasAssign(assigns []tempAssign, name string) bool {
	for _, a := range assigns {
		if a.name == name {
			return true
		}
	}
	return false
}

func builtinHash(sh *shell, args []string) int {
	args = args[1:]
	reset, list, del, show := false, false, false, false
	setPath := ""
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		if args[0] == "--" {
			args = args[1:]
			break
		}
		for i := 1; i < len(args[0]); i++ {
			switch c := args[0][i]; c {
			case 'r':
				reset = true
			case 'l':
				list = true
			case 'd':
				del = true
			case 't':
				show = true
			case 'p':
				if len(args) < 2 {
					return sh.usage("hash", "-p: option requires an argument")
				}
				setPath = args[1]
				args = args[1:]
			default:
				sh.errorf("hash: -%c: invalid option", c)
				sh.usageLine("hash: usage: hash [-lr] [-p pathname] [-dt] [name ...]")
				return 2
			}
		}
		args = args[1:]
	}
	path, _ := sh.varValue("PATH")
	if reset {
		sh.hash, sh.hashShared = nil, false
	}
	if len(args) == 0 {
		if reset {
			return 0
		}
		if sh.hash == nil || sh.hash.path != path || len(sh.hash.m) == 0 {
			sh.errorf("hash: hash table empty")
			return 0
		}
		var b strings.Builder
		names := sortedKeys(sh.hash.m)
		if list {
			for _, n := range names {
				fmt.Fprintf(&b, "builtin hash -p %s %s\n", sh.hash.m[n].hit.shown, n)
			}
		} else {
			b.WriteString("hits\tcommand\n")
			for _, n := range names {
				fmt.Fprintf(&b, "%4d\t%s\n", sh.hash.m[n].hits, sh.hash.m[n].hit.shown)
			}
		}
		sh.out("hash", b.String())
		return 0
	}
	status := 0
	for _, n := range args {
		switch {
		case del:
			if sh.hash == nil || sh.hash.m[n] == nil {
				sh.errorf("hash: %s: not found", n)
				status = 1
				continue
			}
			delete(sh.hashWritable(path).m, n)
		case show:
			if sh.hash == nil || sh.hash.path != path || sh.hash.m[n] == nil {
				sh.errorf("hash: %s: not found", n)
				status = 1
				continue
			}
			p := sh.hash.m[n].hit.shown
			if len(args) > 1 {
				p = n + "\t" + p
			}
			sh.out("hash", p+"\n")
		case setPath != "":
			sh.hashWritable(path).m[n] = &hashEntry{hit: pathHit{shown: setPath, abs: vfs.Abs(sh.dir, setPath), script: true, exec: true}}
		default:
			if _, ok := builtins[n]; ok && n != "bash" && n != "sh" {
				continue
			}
			if _, ok := sh.funcs.m[n]; ok {
				continue
			}
			if sh.r.cfg.Kind != nil && sh.r.cfg.Kind(n) == "tool" {
				continue
			}
			hits := sh.searchPath(n, path, false)
			if len(hits) == 0 {
				sh.errorf("hash: %s: not found", n)
				status = 1
				continue
			}
			sh.hashWritable(path).m[n] = &hashEntry{hit: hits[0]}
		}
	}
	return status
}

// which is the program which (debianutils): where each name is along
// $PATH (-a: every one); 1 when one is not found. A tool is named as it
// is.
func (sh *shell) which(args []string) int {
	all := false
	status := 0
	var b strings.Builder
	for _, n := range args[1:] {
		if n == "-a" {
			all = true
			continue
		}
		if strings.HasPrefix(n, "-") {
			continue
		}
		if sh.r.cfg.Kind != nil && sh.r.cfg.Kind(n) == "tool" {
			b.WriteString(n + "\n")
			continue
		}
		hits := sh.programHits(n, all)
		if len(hits) == 0 {
			status = 1
		}
		for _, h := range hits {
			b.WriteString(h.path + "\n")
		}
	}
	sh.out("which", b.String())
	return status
}
