package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenErrorsSayOneForm: a store that does not open says so in one
// form, on disk and in PostgreSQL: "open store WHERE: what", WHERE
// without its password, never "store: …" or "pgstore: …" first.
func TestOpenErrorsSayOneForm(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nowhere")
	_, err := OpenAt(t.Context(), dir, &Options{ReadOnly: true})
	if want := "open store " + dir + ": no store there: "; err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, ErrNotExist) {
		t.Errorf("a missing store on disk: %v; want it to start %q, and be ErrNotExist", err, want)
	}
	ctx, cancel := contextWithTimeout(t, 10*time.Second)
	defer cancel()
	_, err = OpenAt(ctx, "postgres://u:secret@127.0.0.1:1/db?connect_timeout=2", &Options{ReadOnly: true})
	if want := "open store postgres://u:xxxxx@127.0.0.1:1/db?connect_timeout=2: connect: "; err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "secret") {
		t.Errorf("a PostgreSQL server not there: %v; want it to start %q, without the password", err, want)
	}
}

func contextWithTimeout(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), d)
}
