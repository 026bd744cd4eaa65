package coreutils

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// rgTypes are the file types of rg -t/-T, by glob.
var rgTypes = map[string][]string{
	"c": {"*.c", "*.h"}, "cpp": {"*.cpp", "*.cc", "*.hpp", "*.h", "*.cxx"}, "css": {"*.css"},
	"go": {"*.go"}, "html": {"*.html", "*.htm"}, "java": {"*.java"}, "js": {"*.js", "*.mjs", "*.cjs", "*.jsx"},
	"json": {"*.json"}, "md": {"*.md", "*.markdown"}, "markdown": {"*.md", "*.markdown"}, "py": {"*.py", "*.pyi"},
	"python": {"*.py", "*.pyi"}, "rust": {"*.rs"}, "rs": {"*.rs"}, "sh": {"*.sh", "*.bash"}, "sql": {"*.sql"},
	"toml": {"*.toml"}, "ts": {"*.ts", "*.tsx", "*.mts", "*.cts"}, "txt": {"*.txt"}, "yaml": {"*.yaml", "*.yml"},
	"yml": {"*.yaml", "*.yml"}, "xml": {"*.xml"}, "csv": {"*.csv"}, "ruby": {"*.rb"}, "rb": {"*.rb"},
}

// rgCmd searches files recursively, as ripgrep: rg [-i -S -s -w -x -v -F
// -c -l --files-without-match -o -n -N -H --no-filename -q -A N -B N -C N
// -m N -e PAT -g GLOB -t TYPE -T TYPE --hidden -u --files --sort path]
// PATTERN [PATH]...; without PATH it searches the working directory.
// Hidden files and binary files are skipped unless named; results come
// in path order (rg's --sort path).
func rgCmd(c *cmd, args []string) int {
	o := grepOpts{maxCount: -1, eol: '\n', ere: true, noZeroCounts: true}
	var patterns []string
	havePatterns, hidden, listFiles, smart, numbers, noNumbers := false, false, false, false, false, false
	var globs, types, notTypes []string
	withName := 0
	num := func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("invalid number %s", quote(v))
		}
		return n, nil
	}
	args = joinLongValues(args, "--regexp", "--glob", "--type", "--type-not", "--max-count", "--after-context",
		"--before-context", "--context", "--sort", "--max-depth", "--threads")
	maxDepth := -1
	rest, st, ok := c.flags(args, "eABCgmtTjd", 2, func(f, v string) error {
		var err error
		switch f {
		case "-i", "--ignore-case":
			o.icase, smart = true, false
		case "-s", "--case-sensitive":
			o.icase, smart = false, false
		case "-S", "--smart-case":
			smart = true
		case "-w", "--word-regexp":
			o.word = true
		case "-x", "--line-regexp":
			o.line = true
		case "-v", "--invert-match":
			o.invert = true
		case "-F", "--fixed-strings":
			o.fixed = true
		case "-c", "--count":
			o.count = true
		case "-l", "--files-with-matches":
			o.filesWith = true
		case "--files-without-match":
			o.filesWithout = true
		case "-o", "--only-matching":
			o.only = true
		case "-n", "--line-number":
			numbers = true
		case "-N", "--no-line-number":
			noNumbers = true
		case "-H", "--with-filename":
			withName = 1
		case "-I", "--no-filename":
			withName = -1
		case "-q", "--quiet":
			o.quiet = true
		case "-A", "--after-context":
			o.after, err = num(v)
		case "-B", "--before-context":
			o.before, err = num(v)
		case "-C", "--context":
			o.after, err = num(v)
			o.before = o.after
		case "-m", "--max-count":
			o.maxCount, err = num(v)
		case "-e", "--regexp":
			patterns = append(patterns, v)
			havePatterns = true
		case "-g", "--glob", "--iglob":
			globs = append(globs, v)
		case "-t", "--type":
			if _, ok := rgTypes[v]; !ok {
				return fmt.Errorf("unrecognized file type: %s", v)
			}
			types = append(types, v)
		case "-T", "--type-not":
			if _, ok := rgTypes[v]; !ok {
				return fmt.Errorf("unrecognized file type: %s", v)
			}
			notTypes = append(notTypes, v)
		case "--hidden", "-.":
			hidden = true
		case "-u", "--unrestricted", "--no-ignore", "-uu", "-uuu":
			hidden = hidden || f != "--no-ignore"
		case "--files":
			listFiles = true
		case "-d", "--max-depth":
			maxDepth, err = num(v)
		case "--sort", "-j", "--threads", "--no-heading", "--color", "--colors", "--no-messages", "-a", "--text", "--sort-files",
			"-P", "--pcre2", "--no-config", "--heading", "-L", "--follow", "--vimgrep", "--trim", "-z", "--search-zip", "--no-ignore-vcs", "--line-buffered":
			if f == "--vimgrep" {
				numbers, withName = true, 1
			}
		default:
			return errUnknownFlag
		}
		return err
	})
	if !ok {
		return st
	}
	if !c.needFS() {
		return 2
	}
	if !havePatterns && !listFiles {
		if len(rest) == 0 {
			return c.errf(2, "error: a pattern is required\n\nUSAGE:\n    rg [OPTIONS] PATTERN [PATH ...]")
		}
		patterns = []string{rest[0]}
		rest = rest[1:]
	}
	if smart {
		o.icase = true
		for _, p := range patterns {
			if strings.ToLower(p) != p {
				o.icase = false
			}
		}
	}
	if !listFiles {
		re, err := grepRegex(patterns, &o)
		if err != nil {
			return c.errf(2, "regex parse error:\n    %s\nerror: %v", strings.Join(patterns, "|"), err)
		}
		o.re = re
	}
	bare := len(rest) == 0
	if bare {
		rest = []string{"."}
	}
	single := len(rest) == 1
	if single {
		if info, err := c.env.FS.Stat(c.ctx, c.abs(rest[0])); err == nil && info.IsDir() {
			single = false
		}
	}
	switch {
	case withName != 0:
		o.withName = withName
	case single:
		o.withName = -1
	default:
		o.withName = 1
	}
	o.number = numbers && !noNumbers
	selectFile := func(p string) bool {
		name := path.Base(p)
		if len(types) > 0 {
			ok := false
			for _, t := range types {
				ok = ok || matchAny(rgTypes[t], name)
			}
			if !ok {
				return false
			}
		}
		for _, t := range notTypes {
			if matchAny(rgTypes[t], name) {
				return false
			}
		}
		included, anyInclude := false, false
		for _, g := range globs {
			neg := strings.HasPrefix(g, "!")
			g = strings.TrimPrefix(g, "!")
			m := rgGlobMatch(g, p)
			if neg && m {
				return false
			}
			if !neg {
				anyInclude = true
				included = included || m
			}
		}
		return !anyInclude || included
	}
	selected, failed := false, false
	for _, start := range rest {
		abs := c.abs(start)
		info, err := c.env.FS.Stat(c.ctx, abs)
		if err != nil {
			c.errf(2, "%s: %s (os error 2)", start, why(err))
			failed = true
			continue
		}
		visit := func(p, abs string, info *vfs.Info, depth int) error {
			if c.stopped() {
				return errStopped
			}
			name := path.Base(p)
			if depth > 0 && !hidden && strings.HasPrefix(name, ".") {
				if info.IsDir() {
					return errSkipDir
				}
				return nil
			}
			if info.IsDir() {
				if maxDepth >= 0 && depth >= maxDepth {
					return errSkipDir
				}
				return nil
			}
			shown := p
			if bare {
				shown = strings.TrimPrefix(p, "./")
			}
			if depth > 0 && !selectFile(shown) {
				return nil
			}
			if listFiles {
				c.out.WriteString(shown + "\n")
				selected = true
				return nil
			}
			data, err := c.env.FS.ReadFile(c.ctx, abs)
			if err != nil {
				c.errf(2, "%s: %s", shown, why(err))
				failed = true
				return nil
			}
			if bytes.IndexByte(data, 0) >= 0 {
				return nil // binary files are skipped, as rg does
			}
			hit, stop := c.grepData(&o, shown, data)
			selected = selected || hit
			if stop {
				return errStopped
			}
			return nil
		}
		if !info.IsDir() {
			if err := visit(start, abs, info, 0); err != nil {
				break
			}
			continue
		}
		if err := c.walk(start, visit, func(p string, err error) {
			c.errf(2, "%s: %s", p, why(err))
			failed = true
		}); err != nil && c.stopped() {
			return c.errf(2, "interrupted")
		}
		if o.quiet && selected {
			break
		}
	}
	switch {
	case selected && (o.quiet || !failed):
		return c.done(0)
	case failed:
		return c.done(2)
	case selected:
		return c.done(0)
	}
	return c.done(1)
}

// rgGlobMatch matches a -g glob as rg does: a glob without a slash
// matches the base name, one with a slash the whole path; ** spans
// directories.
func rgGlobMatch(g, p string) bool {
	p = strings.TrimPrefix(p, "./")
	if !strings.Contains(g, "/") {
		ok, _ := path.Match(g, path.Base(p))
		return ok
	}
	g = strings.TrimPrefix(g, "/")
	if strings.Contains(g, "**") {
		pre, post, _ := strings.Cut(g, "**")
		pre = strings.TrimSuffix(pre, "/")
		post = strings.TrimPrefix(post, "/")
		if pre != "" && !strings.HasPrefix(p, pre+"/") && p != pre {
			return false
		}
		rest := strings.TrimPrefix(strings.TrimPrefix(p, pre), "/")
		if post == "" {
			return true
		}
		parts := strings.Split(rest, "/")
		for i := range parts {
			if ok, _ := path.Match(post, strings.Join(parts[i:], "/")); ok {
				return true
			}
		}
		return false
	}
	ok, _ := path.Match(g, p)
	return ok
}
