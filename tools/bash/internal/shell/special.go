package shell

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// dynamic computes the value of a dynamic variable.
func (sh *shell) dynamic(name string, v *variable) *variable {
	str := func(s string) *variable {
		return &variable{set: true, str: s, attrs: v.attrs &^ aDynamic}
	}
	list := func(items []string) *variable {
		arr := &indexed{elems: make([]element, len(items))}
		for i, s := range items {
			arr.elems[i] = element{int64(i), s}
		}
		return &variable{set: true, arr: arr, attrs: aIndexed}
	}
	switch name {
	case "RANDOM":
		return str(strconv.Itoa(sh.random()))
	case "SRANDOM":
		return str(strconv.FormatUint(uint64(sh.random())<<17^uint64(sh.random())<<2^uint64(sh.random()), 10))
	case "SECONDS":
		return str(strconv.FormatInt(int64(sh.now().Sub(sh.secBase)/time.Second)+sh.secOff, 10))
	case "EPOCHSECONDS":
		return str(strconv.FormatInt(sh.now().Unix(), 10))
	case "EPOCHREALTIME":
		t := sh.now()
		return str(fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000))
	case "LINENO":
		return str(strconv.Itoa(sh.line))
	case "BASHPID":
		return str(strconv.FormatInt(sh.pid, 10))
	case "BASH_SUBSHELL":
		return str(strconv.Itoa(sh.level))
	case "BASH_COMMAND":
		return str(sh.lastCmd)
	case "HISTCMD":
		return str("1")
	case "FUNCNAME":
		var names []string
		for i := len(sh.frames) - 1; i >= 0; i-- {
			if f := sh.frames[i]; !f.isSource {
				names = append(names, f.fn.name)
			}
		}
		if len(names) == 0 {
			return &variable{attrs: aIndexed}
		}
		if sh.src != nil && sh.fileScript {
			names = append(names, "main")
		}
		return list(names)
	case "BASH_SOURCE":
		var files []string
		for i := len(sh.frames) - 1; i >= 0; i-- {
			f := sh.frames[i]
			files = append(files, f.fn.file)
		}
		if sh.fileScript {
			files = append(files, sh.argv0)
		}
		return list(files)
	case "BASH_LINENO":
		var lines []string
		for i := len(sh.frames) - 1; i >= 0; i-- {
			lines = append(lines, strconv.Itoa(sh.frames[i].callLine))
		}
		if sh.fileScript && len(lines) > 0 {
			lines = append(lines, "0")
		}
		return list(lines)
	case "BASH_ARGC", "BASH_ARGV", "GROUPS":
		if name == "GROUPS" {
			return list([]string{"1000"})
		}
		return list(nil)
	case "DIRSTACK":
		return list(sh.dirStack())
	case "PIPESTATUS":
		items := make([]string, len(sh.pipestatus))
		for i, s := range sh.pipestatus {
			items[i] = strconv.Itoa(s)
		}
		return list(items)
	case "SHELLOPTS":
		return str(sh.shellopts())
	case "BASHOPTS":
		return str(sh.bashopts())
	case "BASH_ALIASES":
		m := newAssoc()
		for _, k := range sortedKeys(sh.aliases.m) {
			m.set(k, sh.aliases.m[k])
		}
		return &variable{set: true, assc: m, attrs: aAssoc}
	case "BASH_CMDS":
		return &variable{set: true, assc: newAssoc(), attrs: aAssoc}
	}
	return v
}

// setDynamic assigns a dynamic variable; false when the assignment makes
// it an ordinary variable.
func (sh *shell) setDynamic(name, val string) bool {
	switch name {
	case "RANDOM":
		n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err == nil {
			sh.randSeed = uint32(n)
		}
		return true
	case "SECONDS":
		n, _ := sh.arithString(val)
		sh.secBase = sh.now()
		sh.secOff = n
		return true
	case "LINENO", "BASHPID", "BASH_SUBSHELL", "EPOCHSECONDS", "EPOCHREALTIME", "SRANDOM", "HISTCMD",
		"BASH_ARGC", "BASH_ARGV", "BASH_SOURCE", "BASH_LINENO", "FUNCNAME", "GROUPS", "BASH_COMMAND":
		return true
	case "PIPESTATUS", "DIRSTACK", "BASH_ALIASES", "BASH_CMDS":
		return false
	}
	return false
}

// random is bash's $RANDOM: the Park-Miller generator of bash's
// random.c, seeded deterministically.
func (sh *shell) random() int {
	for {
		s := sh.randSeed
		if s == 0 {
			s = 123459876
		}
		h := int32(s / 127773)
		l := int32(s - 127773*uint32(h))
		t := 16807*l - 2836*h
		if t < 0 {
			t += 0x7fffffff
		}
		sh.randSeed = uint32(t)
		r := int((uint32(t)>>16)^(uint32(t)&0xffff)) & 32767
		if r != sh.lastRandom {
			sh.lastRandom = r
			return r
		}
	}
}

// flagString is $-.
func (sh *shell) flagString() string {
	var b strings.Builder
	o := sh.opts
	for _, f := range []struct {
		on bool
		c  byte
	}{{o.allexport, 'a'}, {o.errexit, 'e'}, {o.noglob, 'f'}, {o.hashall, 'h'}, {sh.interactive, 'i'}, {o.keyword, 'k'},
		{o.monitor, 'm'}, {o.noexec, 'n'}, {o.onecmd, 't'}, {o.nounset, 'u'}, {o.verbose, 'v'},
		{o.xtrace, 'x'}, {o.braceexpand, 'B'}, {o.noclobber, 'C'}, {o.errtrace, 'E'}, {o.histexpand, 'H'},
		{o.physical, 'P'}, {o.functrace, 'T'}} {
		if f.on {
			b.WriteByte(f.c)
		}
	}
	if sh.readStdin {
		b.WriteByte('s')
	}
	if sh.dashC {
		b.WriteByte('c')
	}
	return b.String()
}

// optionNames are the set -o options, in bash's order.
var optionNames = []string{"allexport", "braceexpand", "emacs", "errexit", "errtrace", "functrace", "hashall",
	"histexpand", "history", "ignoreeof", "interactive-comments", "keyword", "monitor", "noclobber", "noexec",
	"noglob", "nolog", "notify", "nounset", "onecmd", "physical", "pipefail", "posix", "privileged", "verbose",
	"vi", "xtrace"}

// optionPtr returns the field of a set -o option.
func (sh *shell) optionPtr(name string) *bool {
	o := &sh.opts
	switch name {
	case "allexport":
		return &o.allexport
	case "braceexpand":
		return &o.braceexpand
	case "emacs":
		return &o.emacs
	case "errexit":
		return &o.errexit
	case "errtrace":
		return &o.errtrace
	case "functrace":
		return &o.functrace
	case "hashall":
		return &o.hashall
	case "histexpand":
		return &o.histexpand
	case "history":
		return &o.history
	case "ignoreeof":
		return &o.ignoreeof
	case "interactive-comments":
		return &o.interactiveComments
	case "keyword":
		return &o.keyword
	case "monitor":
		return &o.monitor
	case "noclobber":
		return &o.noclobber
	case "noexec":
		return &o.noexec
	case "noglob":
		return &o.noglob
	case "nolog":
		return &o.nolog
	case "notify":
		return &o.notify
	case "nounset":
		return &o.nounset
	case "onecmd":
		return &o.onecmd
	case "physical":
		return &o.physical
	case "pipefail":
		return &o.pipefail
	case "posix":
		return &o.posix
	case "privileged":
		return &o.privileged
	case "verbose":
		return &o.verbose
	case "vi":
		return &o.vi
	case "xtrace":
		return &o.xtrace
	}
	return nil
}

func (sh *shell) optionByName(name string) (bool, bool) {
	p := sh.optionPtr(name)
	if p == nil {
		return false, false
	}
	return *p, true
}

// shortOption maps set's single-letter flags to option names.
var shortOption = map[byte]string{'a': "allexport", 'e': "errexit", 'f': "noglob", 'h': "hashall", 'k': "keyword",
	'm': "monitor", 'n': "noexec", 't': "onecmd", 'u': "nounset", 'v': "verbose", 'x': "xtrace", 'B': "braceexpand",
	'C': "noclobber", 'E': "errtrace", 'H': "histexpand", 'P': "physical", 'T': "functrace", 'b': "notify", 'p': "privileged"}

// shellopts is $SHELLOPTS: the options on, colon-separated.
func (sh *shell) shellopts() string {
	var on []string
	for _, n := range optionNames {
		if v, _ := sh.optionByName(n); v {
			on = append(on, n)
		}
	}
	return strings.Join(on, ":")
}

// shoptNames are shopt's options, sorted.
var shoptNames = []string{"assoc_expand_once", "autocd", "cdable_vars", "cdspell", "checkhash", "checkjobs",
	"checkwinsize", "cmdhist", "compat31", "compat32", "compat40", "compat41", "compat42", "compat43", "compat44",
	"complete_fullquote", "direxpand", "dirspell", "dotglob", "execfail", "expand_aliases", "extdebug", "extglob",
	"extquote", "failglob", "force_fignore", "globasciiranges", "globskipdots", "globstar", "gnu_errfmt",
	"histappend", "histreedit", "histverify", "hostcomplete", "huponexit", "inherit_errexit",
	"interactive_comments", "lastpipe", "lithist", "localvar_inherit", "localvar_unset", "login_shell",
	"mailwarn", "no_empty_cmd_completion", "nocaseglob", "nocasematch", "noexpand_translation", "nullglob",
	"patsub_replacement", "progcomp", "progcomp_alias", "promptvars", "restricted_shell", "shift_verbose",
	"sourcepath", "varredir_close", "xpg_echo"}

// shoptPtr returns the field of a shopt option the shell acts on (nil
// for the others, kept in shopt.other).
func (sh *shell) shoptPtr(name string) *bool {
	s := &sh.shopt
	switch name {
	case "extglob":
		return &s.extglob
	case "nullglob":
		return &s.nullglob
	case "failglob":
		return &s.failglob
	case "dotglob":
		return &s.dotglob
	case "globstar":
		return &s.globstar
	case "nocaseglob":
		return &s.nocaseglob
	case "nocasematch":
		return &s.nocasematch
	case "lastpipe":
		return &s.lastpipe
	case "expand_aliases":
		return &s.expandAliases
	case "inherit_errexit":
		return &s.inheritErrexit
	case "localvar_inherit":
		return &s.localvarInherit
	case "localvar_unset":
		return &s.localvarUnset
	case "xpg_echo":
		return &s.xpgEcho
	case "sourcepath":
		return &s.sourcepath
	case "globskipdots":
		return &s.globskipdots
	case "globasciiranges":
		return &s.globasciiranges
	case "extquote":
		return &s.extquote
	case "patsub_replacement":
		return &s.patsubReplacement
	case "shift_verbose":
		return &s.shiftVerbose
	case "execfail":
		return &s.execfail
	case "assoc_expand_once":
		return &s.assocExpandOnce
	case "extdebug":
		return &s.extdebug
	}
	return nil
}

func (sh *shell) shoptValue(name string) (bool, bool) {
	if p := sh.shoptPtr(name); p != nil {
		return *p, true
	}
	for _, n := range shoptNames {
		if n == name {
			return sh.shopt.other[name], true
		}
	}
	return false, false
}

func (sh *shell) setShopt(name string, on bool) bool {
	if p := sh.shoptPtr(name); p != nil {
		*p = on
		return true
	}
	for _, n := range shoptNames {
		if n == name {
			other := make(map[string]bool, len(sh.shopt.other)+1)
			for k, v := range sh.shopt.other {
				other[k] = v
			}
			other[name] = on
			sh.shopt.other = other
			return true
		}
	}
	return false
}

// bashopts is $BASHOPTS.
func (sh *shell) bashopts() string {
	var on []string
	for _, n := range shoptNames {
		if v, _ := sh.shoptValue(n); v {
			on = append(on, n)
		}
	}
	return strings.Join(on, ":")
}

// dirStack is the directory stack, the current directory first.
func (sh *shell) dirStack() []string {
	out := []string{sh.dir}
	for i := len(sh.oldDirs) - 1; i >= 0; i-- {
		out = append(out, sh.oldDirs[i])
	}
	return out
}

// formatInt formats n in decimal.
func formatInt(n int64) string { return strconv.FormatInt(n, 10) }
