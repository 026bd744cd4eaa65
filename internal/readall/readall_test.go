package readall_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/demiurge-dev/demiurge/internal/readall"
)

func TestSized(t *testing.T) {
	body := strings.Repeat("0123456789", 1000)
	tests := []struct {
		name string
		size int64
	}{
		{"declared", int64(len(body))},
		{"unknown", -1},
		{"zero", 0},
		{"declared shorter", 10},
		{"declared longer", int64(len(body)) * 3},
		{"huge", 1 << 62},
	}
	for _, tc := range tests {
		for _, r := range []struct {
			name string
			r    func() io.Reader
		}{
			{"whole", func() io.Reader { return strings.NewReader(body) }},
			{"bytewise", func() io.Reader { return iotest.OneByteReader(strings.NewReader(body)) }},
			{"eof with data", func() io.Reader { return iotest.DataErrReader(strings.NewReader(body)) }},
		} {
			got, err := readall.Sized(r.r(), tc.size)
			if err != nil || string(got) != body {
				t.Errorf("%s/%s: Sized = %d bytes, %v; want the %d-byte body", tc.name, r.name, len(got), err, len(body))
			}
		}
	}
}

func TestSizedError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom))
	got, err := readall.Sized(r, 3)
	if !errors.Is(err, boom) || !bytes.Equal(got, []byte("abc")) {
		t.Errorf("Sized = %q, %v; want \"abc\", boom", got, err)
	}
}

func TestSizedOneAllocation(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 20000)
	r := bytes.NewReader(body)
	allocs := testing.AllocsPerRun(20, func() {
		r.Reset(body)
		if _, err := readall.Sized(r, int64(len(body))); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("Sized of a declared body made %v allocations, want 1", allocs)
	}
}
