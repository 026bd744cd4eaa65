package jsonschema

import (
	"regexp"
	"sync"
	"sync/atomic"
)

// compileRegexp compiles a regular expression of a schema (Go's syntax, as
// santhosh-tekuri/jsonschema's default), once per process: a pattern is
// compiled when the meta-schema checks it (format "regex") and again for
// the keyword, and every compile of a tool list compiles the same ones.
// (^[A-Za-z0-9._~-]{1,255}$, the workspace tools' name pattern, takes
// about a millisecond.) The cache holds at most maxCachedRegexps.
func compileRegexp(p string) (*regexp.Regexp, error) {
	if c, ok := regexps.Load(p); ok {
		r := c.(regexpResult)
		return r.re, r.err
	}
	re, err := regexp.Compile(p)
	if cachedRegexps.Add(1) <= maxCachedRegexps {
		regexps.Store(p, regexpResult{re, err})
	}
	return re, err
}

const maxCachedRegexps = 4096

var (
	regexps       sync.Map // pattern → regexpResult
	cachedRegexps atomic.Int64
)

type regexpResult struct {
	re  *regexp.Regexp
	err error
}
