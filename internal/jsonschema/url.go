package jsonschema

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// A location is a place in a document: the document's URL (no fragment)
// and a JSON pointer into it ("" is the whole document).
type location struct {
	url string
	ptr string
}

// String is the location as a URL with the pointer as its fragment, each
// token percent-encoded: "mem:///t.json#/properties/a%20b".
func (l location) String() string { return l.url + "#" + encodeFragment(l.ptr) }

// child is the location of a keyword's value below l, as a string.
func (l location) child(tok string) string {
	return l.url + "#" + encodeFragment(l.ptr) + "/" + encodeFragment(escapeToken(tok))
}

// escapeToken escapes a JSON pointer token (RFC 6901).
func escapeToken(tok string) string {
	tok = strings.ReplaceAll(tok, "~", "~0")
	return strings.ReplaceAll(tok, "/", "~1")
}

// unescapeToken undoes escapeToken; false for a '~' followed by anything
// but 0 or 1.
func unescapeToken(tok string) (string, bool) {
	if !strings.Contains(tok, "~") {
		return tok, true
	}
	var b strings.Builder
	for i := 0; i < len(tok); i++ {
		if tok[i] != '~' {
			b.WriteByte(tok[i])
			continue
		}
		if i+1 == len(tok) {
			return "", false
		}
		switch tok[i+1] {
		case '0':
			b.WriteByte('~')
		case '1':
			b.WriteByte('/')
		default:
			return "", false
		}
		i++
	}
	return b.String(), true
}

// pointer appends escaped tokens to a JSON pointer.
func pointer(ptr string, toks ...string) string {
	for _, t := range toks {
		ptr += "/" + escapeToken(t)
	}
	return ptr
}

// instancePointer is the JSON pointer of an instance location.
func instancePointer(toks []string) string { return pointer("", toks...) }

// encodeFragment percent-encodes each token of a fragment, keeping the
// slashes between them.
func encodeFragment(frag string) string {
	toks := strings.Split(frag, "/")
	for i, t := range toks {
		toks[i] = url.PathEscape(t)
	}
	return strings.Join(toks, "/")
}

// splitHash splits a URL at its first '#'.
func splitHash(s string) (string, string) {
	u, frag, _ := strings.Cut(s, "#")
	return u, frag
}

// splitFragment splits a URL at its first '#' and decodes the fragment.
func splitFragment(s string) (string, string, error) {
	u, frag := splitHash(s)
	f, err := url.PathUnescape(frag)
	if err != nil {
		return "", "", &ParseURLError{URL: s, Err: err}
	}
	return u, f, nil
}

// isAnchor tells a fragment that names an anchor from a JSON pointer.
func isAnchor(frag string) bool { return frag != "" && !strings.HasPrefix(frag, "/") }

// resolveURL resolves ref against base: the resulting URL without its
// fragment, and the fragment decoded.
func resolveURL(base, ref string) (string, string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", "", &ParseURLError{URL: base, Err: err}
	}
	ref, frag, err := splitFragment(ref)
	if err != nil {
		return "", "", err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", "", &ParseURLError{URL: ref, Err: err}
	}
	res := b.ResolveReference(r)
	// net/url drops an opaque base (golang/go#66084): "urn:x" and "#a".
	if !r.IsAbs() && b.Opaque != "" {
		res.Opaque = b.Opaque
	}
	return res.String(), frag, nil
}

// absoluteURL splits an absolute URL and its fragment. Relative URLs are
// refused: a schema's URL names it among the compiler's resources, never a
// file of the working directory.
func absoluteURL(s string) (string, string, error) {
	u, frag, err := splitFragment(s)
	if err != nil {
		return "", "", err
	}
	p, err := url.Parse(u)
	if err != nil {
		return "", "", &ParseURLError{URL: s, Err: err}
	}
	if !p.IsAbs() {
		return "", "", fmt.Errorf("schema URL %q is not absolute", s)
	}
	return u, frag, nil
}

// lookup finds the value at l.ptr in doc.
func lookup(doc any, l location) (any, error) {
	if l.ptr == "" {
		return doc, nil
	}
	v := doc
	for _, tok := range strings.Split(l.ptr, "/")[1:] {
		tok, ok := unescapeToken(tok)
		if !ok {
			return nil, fmt.Errorf("invalid json-pointer %q", l.String())
		}
		switch x := v.(type) {
		case map[string]any:
			if e, ok := x[tok]; ok {
				v = e
				continue
			}
		case []any:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(x) {
				v = x[i]
				continue
			}
		}
		return nil, fmt.Errorf("json-pointer in %q not found", l.String())
	}
	return v, nil
}

// ParseURLError is a URL (of a schema, an $id, a $ref) that does not
// parse.
type ParseURLError struct {
	URL string
	Err error
}

func (e *ParseURLError) Error() string { return fmt.Sprintf("error in parsing %q: %v", e.URL, e.Err) }

// LoadURLError is a schema the compiler cannot load: one that is neither
// added nor a draft's meta-schema.
type LoadURLError struct {
	URL string
	Err error
}

func (e *LoadURLError) Error() string { return fmt.Sprintf("failing loading %q: %v", e.URL, e.Err) }

// Unwrap returns the loader's error.
func (e *LoadURLError) Unwrap() error { return e.Err }

// SchemaValidationError is a schema that its draft's meta-schema refuses.
type SchemaValidationError struct {
	URL string
	Err error // a *ValidationError
}

func (e *SchemaValidationError) Error() string {
	return fmt.Sprintf("%q is not valid against metaschema: %v", e.URL, e.Err)
}

// Unwrap returns the meta-schema's ValidationError.
func (e *SchemaValidationError) Unwrap() error { return e.Err }
