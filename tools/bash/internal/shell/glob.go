package shell

import (
	"slices"
	"strings"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// maxGlobMatches bounds the paths one pattern may expand to.
const maxGlobMatches = 100_000

// globField appends a field's words: the paths its pattern matches, or
// the field itself (nullglob: nothing; failglob: an error).
func (sh *shell) globField(out []string, f field, noGlob bool) []string {
	if noGlob || !f.glob {
		return append(out, string(f.s))
	}
	pat := string(f.pat)
	if !hasGlobChars(pat, sh.shopt.extglob) {
		return append(out, string(f.s))
	}
	matches := sh.glob(pat)
	if len(matches) == 0 {
		if sh.shopt.failglob {
			sh.errorf("no match: %s", string(f.s))
			panic(fatalPanic{status: 1})
		}
		if sh.shopt.nullglob {
			return out
		}
		return append(out, string(f.s))
	}
	return append(out, matches...)
}

// glob expands a pattern to the sorted paths of the file system it
// matches.
func (sh *shell) glob(pat string) []string {
	fsys := sh.r.cfg.FS
	if fsys == nil {
		return nil
	}
	abs := strings.HasPrefix(pat, "/")
	parts := strings.Split(pat, "/")
	var starts []string
	if abs {
		starts = []string{""}
		parts = parts[1:]
	} else {
		starts = []string{"."}
	}
	// collapse empty components (a//b)
	var comps []string
	for i, p := range parts {
		if p == "" && i != len(parts)-1 {
			continue
		}
		comps = append(comps, p)
	}
	paths := starts
	for i, comp := range comps {
		last := i == len(comps)-1
		var next []string
		if comp == "" { // trailing slash: only directories
			for _, p := range paths {
				if sh.isDir(p) {
					next = append(next, p+"/")
				}
			}
			paths = next
			continue
		}
		if !hasGlobChars(comp, sh.shopt.extglob) {
			lit := unescapePattern(comp)
			for _, p := range paths {
				np := join(p, lit)
				if last {
					if sh.exists(np) {
						next = append(next, np)
					}
				} else if sh.isDir(np) {
					next = append(next, np)
				}
			}
			paths = next
			continue
		}
		if comp == "**" && sh.shopt.globstar {
			for _, p := range paths {
				next = append(next, sh.globstar(p, last)...)
			}
			paths = dedupe(next)
			continue
		}
		p := compilePatternMode(comp, sh.shopt.nocaseglob, true, sh.byteText)
		dotOK := sh.dotGlob() || strings.HasPrefix(comp, ".") || strings.HasPrefix(comp, `\.`)
		for _, dir := range paths {
			infos, err := fsys.ReadDir(sh.r.ctx, sh.absPath(dir))
			if err != nil {
				continue
			}
			names := make([]string, 0, len(infos)+2)
			if strings.HasPrefix(comp, ".") && !sh.shopt.globskipdots {
				names = append(names, ".", "..")
			}
			for _, in := range infos {
				names = append(names, in.Name())
			}
			for _, name := range names {
				if strings.HasPrefix(name, ".") && !dotOK {
					continue
				}
				if (name == "." || name == "..") && (sh.shopt.globskipdots || !strings.HasPrefix(comp, ".")) {
					continue
				}
				if !p.match(name) {
					continue
				}
				np := join(dir, name)
				if !last && !sh.isDir(np) {
					continue
				}
				next = append(next, np)
				if len(next) > maxGlobMatches {
					sh.r.limit("pathname expansion matches more than %d paths", maxGlobMatches)
				}
			}
		}
		paths = next
		sh.check()
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, strings.TrimPrefix(p, "./"))
	}
	out = sh.globIgnore(out)
	slices.Sort(out)
	return out
}

// dotGlob reports whether globs match names that start with a dot:
// shopt -s dotglob, or a non-empty $GLOBIGNORE (which turns it on in bash).
func (sh *shell) dotGlob() bool {
	if sh.shopt.dotglob {
		return true
	}
	gi, ok := sh.varValue("GLOBIGNORE")
	return ok && gi != ""
}

// globIgnore removes the matches of $GLOBIGNORE: its patterns are
// separated by colons outside brackets, and match a whole path with a
// slash matched only by a slash (fnmatch's FNM_PATHNAME).
func (sh *shell) globIgnore(paths []string) []string {
	gi, ok := sh.varValue("GLOBIGNORE")
	if !ok || gi == "" {
		return paths
	}
	var pats [][]*pattern
	for _, pat := range splitGlobIgnore(gi) {
		if pat == "" {
			continue
		}
		var comps []*pattern
		for _, c := range strings.Split(pat, "/") {
			comps = append(comps, compilePatternMode(c, false, true, sh.byteText))
		}
		pats = append(pats, comps)
	}
	out := paths[:0]
	for _, p := range paths {
		base := p[strings.LastIndexByte(p, '/')+1:]
		if base == "." || base == ".." {
			continue
		}
		parts := strings.Split(p, "/")
		ignored := false
		for _, comps := range pats {
			if len(comps) != len(parts) {
				continue
			}
			all := true
			for i, c := range comps {
				if !c.match(parts[i]) {
					all = false
					break
				}
			}
			if all {
				ignored = true
				break
			}
		}
		if !ignored {
			out = append(out, p)
		}
	}
	return out
}

// splitGlobIgnore splits $GLOBIGNORE at the colons that are not inside a
// bracket expression ([[:alnum:]] is one pattern).
func splitGlobIgnore(s string) []string {
	var out []string
	start, depth := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '[':
			depth++
		case ']':
			if depth > 0 {
				depth--
			}
		case ':':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// globstar lists dir and every directory below it (for **), and the
// files too when ** is the last component.
func (sh *shell) globstar(dir string, files bool) []string {
	var out []string
	if dir == "." {
		out = append(out, "")
	} else {
		out = append(out, dir)
	}
	var walk func(d string)
	walk = func(d string) {
		infos, err := sh.r.cfg.FS.ReadDir(sh.r.ctx, sh.absPath(d))
		if err != nil {
			return
		}
		for _, in := range infos {
			name := in.Name()
			if strings.HasPrefix(name, ".") && !sh.dotGlob() {
				continue
			}
			np := join(d, name)
			if in.IsDir() {
				out = append(out, np)
				if len(out) > maxGlobMatches {
					sh.r.limit("pathname expansion matches more than %d paths", maxGlobMatches)
				}
				walk(np)
			} else if files {
				out = append(out, np)
			}
		}
	}
	walk(dir)
	if out[0] == "" {
		out = out[1:]
		if !files {
			out = append([]string{"."}, out...)
		}
	}
	return out
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	out := list[:0]
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func join(dir, name string) string {
	switch dir {
	case "":
		return "/" + name
	case ".":
		return "./" + name
	case "/":
		return "/" + name
	}
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

func (sh *shell) absPath(p string) string {
	if p == "" {
		return "/"
	}
	return vfs.Abs(sh.dir, p)
}

func (sh *shell) isDir(p string) bool {
	info, err := sh.r.cfg.FS.Stat(sh.r.ctx, sh.absPath(p))
	return err == nil && info.IsDir()
}

func (sh *shell) exists(p string) bool {
	_, err := sh.r.cfg.FS.Stat(sh.r.ctx, sh.absPath(p))
	return err == nil
}
