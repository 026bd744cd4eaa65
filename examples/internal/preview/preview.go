// Package preview gives reducers a short text preview of a blob, such as
// the body of an HTTP response that an http.request receipt names by ref.
//
// Reading the CAS from a reducer is deterministic: a ref names one byte
// string forever, so replay reads what the live world read, provided the
// store still holds the blob.
package preview

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/reducer"
)

// Max is the longest preview, in bytes of UTF-8, before the ellipsis.
const Max = 80

// Of returns the first Max bytes of the blob ref as text, cut at a
// character boundary, with invalid UTF-8 replaced by U+FFFD and "…"
// appended when the blob is longer. It returns an error if ref does not
// parse or the reducer's CAS cannot give the blob.
func Of(c *reducer.Context, ref string) (string, error) {
	r, err := cas.ParseRef(ref)
	if err != nil {
		return "", fmt.Errorf("preview: %w", err)
	}
	if c == nil || c.CAS == nil {
		return "", fmt.Errorf("preview of %s: the reducer has no CAS", r.Short())
	}
	data, err := c.CAS.Get(context.Background(), r)
	if err != nil {
		return "", fmt.Errorf("preview of %s: %w", r.Short(), err)
	}
	return Text(data), nil
}

// Text returns the preview of data (see Of).
func Text(data []byte) string {
	if len(data) <= Max {
		return strings.ToValidUTF8(string(data), "\uFFFD")
	}
	cut := Max
	for cut > Max-utf8.UTFMax && cut > 0 && !utf8.RuneStart(data[cut]) {
		cut--
	}
	return strings.ToValidUTF8(string(data[:cut]), "\uFFFD") + "…"
}
