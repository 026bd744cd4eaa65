package schema

import (
	"fmt"
	"strconv"
	"strings"
)

// Name is a qualified AIR name, "namespace/name@version", such as
// "sys/BlobPutParams@1".
type Name = string

// checkName reports whether s is a well-formed AIR name:
// ^[a-z][a-z0-9._-]*/[A-Za-z][A-Za-z0-9._-]*@[1-9][0-9]*$.
func checkName(s string) error {
	ns, rest, ok := strings.Cut(s, "/")
	if !ok {
		return fmt.Errorf("name %q must look like namespace/Name@1", s)
	}
	name, ver, ok := strings.Cut(rest, "@")
	if !ok {
		return fmt.Errorf("name %q has no version: want %s@1", s, s)
	}
	if ns == "" || !isLower(ns[0]) || !allOf(ns[1:], func(c byte) bool { return isLower(c) || isDigit(c) || c == '.' || c == '_' || c == '-' }) {
		return fmt.Errorf("name %q: namespace %q must start with a lowercase letter and hold only a-z 0-9 . _ -", s, ns)
	}
	if name == "" || !isLetter(name[0]) || !allOf(name[1:], func(c byte) bool { return isLetter(c) || isDigit(c) || c == '.' || c == '_' || c == '-' }) {
		return fmt.Errorf("name %q: %q must start with a letter and hold only letters, digits, . _ -", s, name)
	}
	if ver == "" || ver[0] == '0' || !allOf(ver, isDigit) {
		return fmt.Errorf("name %q: version %q must be a positive integer without leading zeros", s, ver)
	}
	if _, err := strconv.ParseUint(ver, 10, 32); err != nil {
		return fmt.Errorf("name %q: version %q is too large", s, ver)
	}
	return nil
}

// checkIdent reports whether s is a step id, variable or grant name:
// ^[A-Za-z_][A-Za-z0-9_.-]{0,63}$.
func checkIdent(what, s string) error {
	if s == "" || len(s) > 64 || !(isLetter(s[0]) || s[0] == '_') ||
		!allOf(s[1:], func(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' || c == '.' || c == '-' }) {
		return fmt.Errorf("%s %q must start with a letter or _ and hold at most 64 letters, digits, _ . -", what, s)
	}
	return nil
}

// checkDotted reports whether s is an effect kind or cap type:
// lowercase dotted words such as "http.request".
func checkDotted(what, s string) error {
	if s == "" || !isLower(s[0]) || !allOf(s, func(c byte) bool { return isLower(c) || isDigit(c) || c == '_' || c == '.' || c == '-' }) {
		return fmt.Errorf("%s %q must be lowercase dotted words like http.request", what, s)
	}
	return nil
}

func isLower(c byte) bool  { return 'a' <= c && c <= 'z' }
func isLetter(c byte) bool { return isLower(c) || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

func allOf(s string, f func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !f(s[i]) {
			return false
		}
	}
	return true
}
