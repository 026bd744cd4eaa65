package shell

import "strings"

// The locale's character type: bash reads text as UTF-8 or as bytes
// after LC_ALL, LC_CTYPE and LANG (the first one set and not empty).
// The sandbox is a machine with the locales of a minimal Debian image
// installed: C, POSIX and C.UTF-8. Naming another one is refused with
// bash's warning and keeps the locale in force, as setlocale's failure
// does. With none of the three set the sandbox reads UTF-8 (bash would
// fall back to C): scripts are written in UTF-8, and its environment
// names no locale.

// localeKind tells whether a locale name is installed and whether its
// text is UTF-8.
func localeKind(name string) (utf8, ok bool) {
	switch name {
	case "C", "POSIX":
		return false, true
	}
	lang, codeset, found := strings.Cut(name, ".")
	if !found || lang != "C" {
		return false, false
	}
	// glibc normalizes the codeset: UTF-8, utf8, UTF8 are one
	cs := strings.ToLower(strings.ReplaceAll(codeset, "-", ""))
	return cs == "utf8", cs == "utf8"
}

// initLocale sets the character type from the environment a shell
// starts with.
func (sh *shell) initLocale() {
	name, set := sh.localeName()
	if !set {
		return
	}
	utf, ok := localeKind(name)
	sh.byteText = !ok || !utf
}

// localeName is the locale the variables name, and whether one does.
func (sh *shell) localeName() (string, bool) {
	for _, v := range [...]string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if s, ok := sh.varValue(v); ok && s != "" {
			return s, true
		}
	}
	return "", false
}

// localeChanged follows an assignment or unset of one of the locale
// variables, as bash's setlocale calls do: LC_ALL set rules; otherwise
// LC_CTYPE, then LANG; all of them unset or empty is the C locale. A
// locale that is not installed is refused (with a warning for LC_ALL and
// LC_CTYPE) and the one in force kept.
func (sh *shell) localeChanged(name string) {
	all, _ := sh.varValue("LC_ALL")
	val, _ := sh.varValue(name)
	switch {
	case name == "LC_ALL" && all != "", name == "LC_CTYPE" && all == "" && val != "":
		if utf, ok := localeKind(val); ok {
			sh.byteText = !utf
		} else {
			sh.localeWarning(name, val)
		}
	case all != "":
		// LC_ALL overrides LC_CTYPE and LANG
	default:
		loc, _ := sh.varValue("LC_CTYPE")
		if loc == "" {
			loc, _ = sh.varValue("LANG")
		}
		if loc == "" {
			sh.byteText = true
		} else if utf, ok := localeKind(loc); ok {
			sh.byteText = !utf
		}
	}
}

// checkTempLocale warns, as bash does, of an assignment before a command
// that names a locale not installed.
func (sh *shell) checkTempLocale(name, val string) {
	if val == "" || name != "LC_ALL" && name != "LC_CTYPE" {
		return
	}
	if all, _ := sh.varValue("LC_ALL"); name == "LC_CTYPE" && all != "" {
		return
	}
	if _, ok := localeKind(val); !ok {
		sh.localeWarning(name, val)
	}
}

// localeWarning is bash's message for a locale that is not installed.
func (sh *shell) localeWarning(name, val string) {
	sh.errorf("warning: setlocale: %s: cannot change locale (%s): No such file or directory", name, val)
}
