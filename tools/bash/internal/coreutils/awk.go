package coreutils

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/awk"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// awkPrograms caches compiled awk programs by source (programs are
// immutable); it holds at most awkCacheSize.
var awkPrograms = struct {
	sync.Mutex
	m map[string]*awk.Program
}{m: map[string]*awk.Program{}}

const awkCacheSize = 256

func compileAwk(src string) (*awk.Program, error) {
	awkPrograms.Lock()
	p, ok := awkPrograms.m[src]
	awkPrograms.Unlock()
	if ok {
		return p, nil
	}
	p, err := awk.Compile(src)
	if err != nil {
		return nil, err
	}
	awkPrograms.Lock()
	if len(awkPrograms.m) >= awkCacheSize {
		clear(awkPrograms.m)
	}
	awkPrograms.m[src] = p
	awkPrograms.Unlock()
	return p, nil
}

// awkCmd runs an awk program: awk [-F FS] [-v VAR=VALUE]... ['PROGRAM' |
// -f FILE...] [FILE | VAR=VALUE]... Files are the sandbox's; system(),
// "cmd" | getline and print | "cmd" run sandbox command lines.
func awkCmd(c *cmd, args []string) (status int) {
	defer func() {
		// The interpreter never panics on input; should a bug make it,
		// the script gets an error, not a crash.
		if r := recover(); r != nil {
			status = c.errf(2, "internal error: %v", r)
		}
	}()
	var fs *string
	var vars [][2]string
	var progFiles []string
	src := ""
	haveSrc := false
	i := 0
	for i < len(args) {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		takeValue := func(flag string) (string, bool) {
			if len(a) > len(flag) {
				v := a[len(flag):]
				if strings.HasPrefix(flag, "--") {
					v = strings.TrimPrefix(v, "=")
				}
				return v, true
			}
			if i+1 >= len(args) {
				return "", false
			}
			i++
			return args[i], true
		}
		switch {
		case strings.HasPrefix(a, "-F") || strings.HasPrefix(a, "--field-separator"):
			flag := "-F"
			if strings.HasPrefix(a, "--") {
				flag = "--field-separator"
			}
			v, ok := takeValue(flag)
			if !ok {
				return c.errf(2, "option requires an argument -- F")
			}
			if v == "t" {
				v = "\t"
			}
			v = unescapeFS(v)
			fs = &v
		case strings.HasPrefix(a, "-v") || strings.HasPrefix(a, "--assign"):
			flag := "-v"
			if strings.HasPrefix(a, "--") {
				flag = "--assign"
			}
			v, ok := takeValue(flag)
			if !ok {
				return c.errf(2, "option requires an argument -- v")
			}
			name, val, found := strings.Cut(v, "=")
			if !found || !validAwkName(name) {
				return c.errf(2, "invalid -v argument %s: want NAME=VALUE", quote(v))
			}
			vars = append(vars, [2]string{name, val})
		case strings.HasPrefix(a, "-f") || strings.HasPrefix(a, "--file"):
			flag := "-f"
			if strings.HasPrefix(a, "--") {
				flag = "--file"
			}
			v, ok := takeValue(flag)
			if !ok {
				return c.errf(2, "option requires an argument -- f")
			}
			progFiles = append(progFiles, v)
		case strings.HasPrefix(a, "-e") || strings.HasPrefix(a, "--source"):
			flag := "-e"
			if strings.HasPrefix(a, "--") {
				flag = "--source"
			}
			v, ok := takeValue(flag)
			if !ok {
				return c.errf(2, "option requires an argument -- e")
			}
			src += v + "\n"
			haveSrc = true
		case a == "--posix" || a == "--traditional" || a == "-P" || a == "--re-interval" || a == "-S" || a == "--sandbox" || a == "-b" || a == "--characters-as-bytes":
		case a == "--version" || a == "-V":
			c.out.WriteString("awk (demiurge sandbox) 1.0, a POSIX awk\n")
			return c.done(0)
		default:
			return c.errf(2, "unknown option %s", a)
		}
		i++
	}
	for _, f := range progFiles {
		data, err := c.readFile(f)
		if err != nil {
			return c.errf(2, "can't open source file %s: %s", quote(f), why(err))
		}
		src += string(data) + "\n"
		haveSrc = true
	}
	if !haveSrc {
		if i >= len(args) {
			return c.errf(2, "usage: awk [-F fs][-v var=value] ['program' | -f progfile] [file ...]")
		}
		src = args[i]
		i++
	}
	prog, err := compileAwk(src)
	if err != nil {
		var se *awk.SyntaxError
		if errors.As(err, &se) {
			return c.errf(1, "%v", se)
		}
		return c.errf(2, "%v", err)
	}
	c.out.Flush()
	cfg := &awk.Config{
		Stdin:   c.in,
		Stdout:  c.out,
		Stderr:  c.env.Stderr,
		Args:    args[i:],
		Vars:    vars,
		FS:      fs,
		Environ: c.environ(),
		Now:     c.env.Now,
		Hold:    c.hold,
	}
	if c.env.FS != nil {
		cfg.Open = func(name string) (io.Reader, error) {
			r, err := c.openInput(name)
			if err != nil {
				return nil, errors.New(why(err))
			}
			return r, nil
		}
		cfg.Create = func(name string, appendTo bool) (io.Writer, error) {
			flag := vfs.O_WRONLY | vfs.O_CREATE | vfs.O_TRUNC
			if appendTo {
				flag = vfs.O_WRONLY | vfs.O_CREATE | vfs.O_APPEND
			}
			f, err := c.env.FS.Open(c.ctx, c.abs(name), flag, 0)
			if err != nil {
				return nil, errors.New(why(err))
			}
			return f, nil
		}
	}
	if c.env.Exec != nil {
		cfg.Exec = func(ctx context.Context, cmdline string, stdin io.Reader, stdout io.Writer) int {
			return c.env.Exec(ctx, []string{"sh", "-c", cmdline}, stdin, stdout, c.env.Stderr)
		}
	}
	st, err := prog.Run(c.ctx, cfg)
	if err != nil {
		if c.stopped() {
			return c.done(2)
		}
		return c.errf(2, "%v", err)
	}
	return c.done(st)
}

func validAwkName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || i > 0 && ch >= '0' && ch <= '9') {
			return false
		}
	}
	return true
}

// unescapeFS processes the escapes of -F's value (\t, \\, ...).
func unescapeFS(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b bytes.Buffer
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case '\\':
			b.WriteString(`\\`)
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
