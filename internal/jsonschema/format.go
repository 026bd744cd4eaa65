package jsonschema

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/internal/jsonschema/internal/msg"
)

// A format checks strings of one form (RFC 3339 dates, e-mail
// addresses…); other values pass. Drafts 4, 6 and 7 check format; later
// drafts only when the meta-schema requires it, which the drafts' own do
// not. The checks and their messages are santhosh-tekuri/jsonschema's.
type format struct {
	name  string
	check func(v any) error
}

// formatNamed is the check of a format, or nil for a format no one
// checks. (A switch rather than a map: nothing is built at init.)
func formatNamed(name string) *format {
	var check func(string) error
	switch name {
	case "regex":
		check = checkRegex
	case "json-pointer":
		check = checkJSONPointer
	case "relative-json-pointer":
		check = checkRelativeJSONPointer
	case "uuid":
		check = checkUUID
	case "duration":
		check = checkDuration
	case "period":
		check = checkPeriod
	case "ipv4":
		check = checkIPv4
	case "ipv6":
		check = checkIPv6
	case "hostname":
		check = checkHostname
	case "email":
		check = checkEmail
	case "date":
		check = checkDate
	case "time":
		check = checkTime
	case "date-time":
		check = checkDateTime
	case "uri", "iri":
		check = checkURI
	case "uri-reference", "iri-reference":
		check = checkURIReference
	case "uri-template":
		check = checkURITemplate
	case "semver":
		check = checkSemver
	default:
		return nil
	}
	return &format{name: name, check: stringCheck(check)}
}

func stringCheck(f func(string) error) func(any) error {
	return func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		return f(s)
	}
}

// formatError is a format's message: printed as fmt does in Error, as the
// English printer does in a validation message (kind.Format).
type formatError struct {
	format string
	args   []any
}

func formatErr(format string, args ...any) error { return &formatError{format, args} }

func (e *formatError) Error() string     { return fmt.Sprintf(e.format, e.args...) }
func (e *formatError) Localized() string { return msg.Sprintf(e.format, e.args...) }

func checkRegex(s string) error {
	_, err := compileRegexp(s)
	return err
}

// checkJSONPointer: RFC 6901.
func checkJSONPointer(s string) error {
	if s == "" {
		return nil
	}
	if !strings.HasPrefix(s, "/") {
		return formatErr("not starting with /")
	}
	for _, tok := range strings.Split(s, "/")[1:] {
		afterTilde := false
		for _, r := range tok {
			if afterTilde {
				afterTilde = false
				if r != '0' && r != '1' {
					return formatErr("~ must be followed by 0 or 1")
				}
				continue
			}
			if r == '~' {
				afterTilde = true
				continue
			}
			if !(r <= 0x2E || (r >= 0x30 && r <= 0x7D) || (r >= 0x7F && r <= 0x10FFFF)) {
				return formatErr("invalid character %q", r)
			}
		}
		if afterTilde {
			return formatErr("~ must be followed by 0 or 1")
		}
	}
	return nil
}

// checkRelativeJSONPointer: draft-handrews-relative-json-pointer-01.
func checkRelativeJSONPointer(s string) error {
	digits := leadingDigits(s)
	if digits == 0 {
		return formatErr("must start with non-negative integer")
	}
	if digits > 1 && s[0] == '0' {
		return formatErr("starts with zero")
	}
	if s = s[digits:]; s == "#" {
		return nil
	}
	return checkJSONPointer(s)
}

// leadingDigits counts the ASCII digits s starts with.
func leadingDigits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// checkUUID: RFC 4122's 8-4-4-4-12 hex digits.
func checkUUID(s string) error {
	lens := []int{8, 4, 4, 4, 12}
	groups := strings.Split(s, "-")
	if len(groups) != len(lens) {
		return formatErr("must have %d elements", len(lens))
	}
	for i, g := range groups {
		if len(g) != lens[i] {
			return formatErr("element %d must be %d characters long", i+1, lens[i])
		}
		for _, r := range g {
			if !isHex(r) {
				return formatErr("non-hex character %q", r)
			}
		}
	}
	return nil
}

func isHex(r rune) bool {
	return (r >= '0' && r <= '9') || (r >= 'a' && r <= 'f') || (r >= 'A' && r <= 'F')
}

// checkDuration: RFC 3339 appendix A.
func checkDuration(s string) error {
	s, ok := strings.CutPrefix(s, "P")
	if !ok {
		return formatErr("must start with P")
	}
	if s == "" {
		return formatErr("nothing after P")
	}
	if w, ok := strings.CutSuffix(s, "W"); ok {
		if w == "" {
			return formatErr("no number in week")
		}
		for _, r := range w {
			if r < '0' || r > '9' {
				return formatErr("invalid week")
			}
		}
		return nil
	}
	units := [...]string{"YMD", "HMS"}
	for i, part := range strings.Split(s, "T") {
		if i != 0 && part == "" {
			return formatErr("no time elements")
		}
		if i >= len(units) {
			return formatErr("more than one T")
		}
		left := units[i]
		for part != "" {
			n := leadingDigits(part)
			if n == 0 {
				return formatErr("missing number")
			}
			if part = part[n:]; part == "" {
				return formatErr("missing unit")
			}
			u := part[0]
			j := strings.IndexByte(left, u)
			if j < 0 {
				if strings.IndexByte(units[i], u) >= 0 {
					return formatErr("unit %q out of order", u)
				}
				return formatErr("invalid unit %q", u)
			}
			left, part = left[j+1:], part[1:]
		}
	}
	return nil
}

// checkPeriod: a start and an end (date-times), or one of them a duration.
func checkPeriod(s string) error {
	start, end, ok := strings.Cut(s, "/")
	if !ok {
		return formatErr("missing slash")
	}
	if strings.HasPrefix(start, "P") {
		if err := checkDuration(start); err != nil {
			return formatErr("invalid start duration: %v", err)
		}
		if err := checkDateTime(end); err != nil {
			return formatErr("invalid end date-time: %v", err)
		}
		return nil
	}
	if err := checkDateTime(start); err != nil {
		return formatErr("invalid start date-time: %v", err)
	}
	if strings.HasPrefix(end, "P") {
		if err := checkDuration(end); err != nil {
			return formatErr("invalid end duration: %v", err)
		}
	} else if err := checkDateTime(end); err != nil {
		return formatErr("invalid end date-time: %v", err)
	}
	return nil
}

func checkIPv4(s string) error {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return formatErr("expected four decimals")
	}
	for _, p := range parts {
		if len(p) > 1 && p[0] == '0' {
			return formatErr("leading zeros")
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return err
		}
		if n < 0 || n > 255 {
			return formatErr("decimal must be between 0 and 255")
		}
	}
	return nil
}

func checkIPv6(s string) error {
	if !strings.Contains(s, ":") {
		return formatErr("missing colon")
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return err
	}
	if addr.Zone() != "" {
		return formatErr("zone id is not a part of ipv6 address")
	}
	return nil
}

// checkHostname: labels of 1 to 63 letters, digits and hyphens, not at
// either end; 253 characters in all.
func checkHostname(s string) error {
	s = strings.TrimSuffix(s, ".")
	if len(s) > 253 {
		return formatErr("more than 253 characters long")
	}
	for _, label := range strings.Split(s, ".") {
		if len(label) < 1 || len(label) > 63 {
			return formatErr("label must be 1 to 63 characters long")
		}
		if strings.HasPrefix(label, "-") {
			return formatErr("label starts with hyphen")
		}
		if strings.HasSuffix(label, "-") {
			return formatErr("label ends with hyphen")
		}
		for _, r := range label {
			if !isAlnum(r) && r != '-' {
				return formatErr("invalid character %q", r)
			}
		}
	}
	return nil
}

func isAlnum(r rune) bool {
	return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
}

func checkEmail(s string) error {
	if len(s) > 254 {
		return formatErr("more than 255 characters long")
	}
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return formatErr("missing @")
	}
	local, domain := s[:at], s[at+1:]
	if len(local) > 64 {
		return formatErr("local part more than 64 characters long")
	}
	if len(local) > 1 && strings.HasPrefix(local, `"`) && strings.HasSuffix(local, `"`) {
		if strings.ContainsAny(local[1:len(local)-1], `\"`) {
			return formatErr("backslash and quote are not allowed within quoted local part")
		}
	} else {
		switch {
		case strings.HasPrefix(local, "."):
			return formatErr("starts with dot")
		case strings.HasSuffix(local, "."):
			return formatErr("ends with dot")
		case strings.Contains(local, ".."):
			return formatErr("consecutive dots")
		}
		for _, r := range local {
			if !isAlnum(r) && !strings.ContainsRune(".!#$%&'*+-/=?^_`{|}~", r) {
				return formatErr("invalid character %q", r)
			}
		}
	}
	if strings.HasPrefix(domain, "[") && strings.HasSuffix(domain, "]") {
		ip := domain[1 : len(domain)-1]
		if v6, ok := strings.CutPrefix(ip, "IPv6:"); ok {
			if err := checkIPv6(v6); err != nil {
				return formatErr("invalid ipv6 address: %v", err)
			}
			return nil
		}
		if err := checkIPv4(ip); err != nil {
			return formatErr("invalid ipv4 address: %v", err)
		}
		return nil
	}
	if err := checkHostname(domain); err != nil {
		return formatErr("invalid domain: %v", err)
	}
	return nil
}

// checkDate: RFC 3339 full-date.
func checkDate(s string) error {
	_, err := time.Parse("2006-01-02", s)
	return err
}

// checkTime: RFC 3339 full-time, leap seconds only at 23:59 UTC.
func checkTime(s string) error {
	if len(s) < 9 {
		return formatErr("less than 9 characters long")
	}
	if s[2] != ':' || s[5] != ':' {
		return formatErr("missing colon in correct place")
	}
	var hms [3]int
	for i, tok := range strings.SplitN(s[:8], ":", 3) {
		n, err := strconv.Atoi(tok)
		if err != nil {
			return formatErr("invalid hour/min/sec")
		}
		if n < 0 {
			return formatErr("non-positive hour/min/sec")
		}
		hms[i] = n
	}
	h, m, sec := hms[0], hms[1], hms[2]
	if h > 23 || m > 59 || sec > 60 {
		return formatErr("hour/min/sec out of range")
	}
	s = s[8:]
	if frac, ok := strings.CutPrefix(s, "."); ok {
		n := leadingDigits(frac)
		if n == 0 {
			return formatErr("no digits in second fraction")
		}
		s = frac[n:]
	}
	if s != "z" && s != "Z" {
		if len(s) != 6 {
			return formatErr("offset must be 6 characters long")
		}
		var sign int
		switch s[0] {
		case '+':
			sign = -1
		case '-':
			sign = 1
		default:
			return formatErr("offset must begin with plus/minus")
		}
		s = s[1:]
		if s[2] != ':' {
			return formatErr("missing colon in offset in correct place")
		}
		var zone [2]int
		for i, tok := range strings.SplitN(s, ":", 2) {
			n, err := strconv.Atoi(tok)
			if err != nil {
				return formatErr("invalid hour/min in offset")
			}
			if n < 0 {
				return formatErr("non-positive hour/min in offset")
			}
			zone[i] = n
		}
		if zone[0] > 23 || zone[1] > 59 {
			return formatErr("hour/min in offset out of range")
		}
		// to UTC
		hm := h*60 + m + sign*(zone[0]*60+zone[1])
		if hm < 0 {
			hm += 24 * 60
		}
		h, m = hm/60, hm%60
	}
	if sec >= 60 && (h != 23 || m != 59) {
		return formatErr("invalid leap second")
	}
	return nil
}

// checkDateTime: RFC 3339 date-time.
func checkDateTime(s string) error {
	if len(s) < 20 {
		return formatErr("less than 20 characters long")
	}
	if s[10] != 't' && s[10] != 'T' {
		return formatErr("11th character must be t or T")
	}
	if err := checkDate(s[:10]); err != nil {
		return formatErr("invalid date element: %v", err)
	}
	if err := checkTime(s[11:]); err != nil {
		return formatErr("invalid time element: %v", err)
	}
	return nil
}

// parseURL parses a URL, and checks an IPv6 host, which net/url does not.
func parseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if host := u.Hostname(); strings.Contains(host, ":") {
		if !strings.Contains(u.Host, "[") || !strings.Contains(u.Host, "]") {
			return nil, formatErr("ipv6 address not enclosed in brackets")
		}
		if err := checkIPv6(host); err != nil {
			return nil, formatErr("invalid ipv6 address: %v", err)
		}
	}
	return u, nil
}

func checkURI(s string) error {
	u, err := parseURL(s)
	if err != nil {
		return err
	}
	if !u.IsAbs() {
		return formatErr("relative url")
	}
	return nil
}

func checkURIReference(s string) error {
	if strings.Contains(s, `\`) {
		return formatErr(`contains \`)
	}
	_, err := parseURL(s)
	return err
}

func checkURITemplate(s string) error {
	u, err := parseURL(s)
	if err != nil {
		return err
	}
	for _, tok := range strings.Split(u.RawPath, "/") {
		tok, err = url.PathUnescape(tok)
		if err != nil {
			return formatErr("percent decode failed: %v", err)
		}
		open := false
		for _, r := range tok {
			switch r {
			case '{':
				if open {
					return formatErr("nested curly braces")
				}
				open = true
			case '}':
				if !open {
					return formatErr("nested curly braces")
				}
				open = false
			}
		}
		if open {
			return formatErr("no matching closing brace")
		}
	}
	return nil
}

// checkSemver: semver.org's grammar.
func checkSemver(s string) error {
	if i := strings.IndexByte(s, '+'); i >= 0 {
		build := s[i+1:]
		if build == "" {
			return formatErr("build is empty")
		}
		for _, id := range strings.Split(build, ".") {
			if id == "" {
				return formatErr("build identifier is empty")
			}
			for _, r := range id {
				if !isAlnum(r) && r != '-' {
					return formatErr("invalid character %q in build identifier", r)
				}
			}
		}
		s = s[:i]
	}
	if i := strings.IndexByte(s, '-'); i >= 0 {
		for _, id := range strings.Split(s[i+1:], ".") {
			if id == "" {
				return formatErr("pre-release identifier is empty")
			}
			numeric := true
			for _, r := range id {
				switch {
				case r >= '0' && r <= '9':
				case isAlnum(r) || r == '-':
					numeric = false
				default:
					return formatErr("invalid character %q in pre-release identifier", r)
				}
			}
			if numeric && len(id) > 1 && id[0] == '0' {
				return formatErr("pre-release numeric identifier starts with zero")
			}
		}
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return formatErr("versionCore must have 3 numbers separated by dot")
	}
	for i, p := range parts {
		name := [...]string{"major", "minor", "patch"}[i]
		if p == "" {
			return formatErr("%s is empty", name)
		}
		if len(p) > 1 && p[0] == '0' {
			return formatErr("%s starts with zero", name)
		}
		for _, r := range p {
			if r < '0' || r > '9' {
				return formatErr("%s contains non-digit", name)
			}
		}
	}
	return nil
}
