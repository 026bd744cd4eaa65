package llm

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/cas"
)

// memStore is a map-backed Getter and Putter for tests.
type memStore struct {
	mu    sync.Mutex
	blobs map[cas.Ref][]byte
	// failPut, if set, makes Put fail.
	failPut error
}

func newStore() *memStore { return &memStore{blobs: map[cas.Ref][]byte{}} }

func (m *memStore) Get(_ context.Context, ref cas.Ref) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blobs[ref]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", ref, cas.ErrNotFound)
	}
	return append([]byte(nil), b...), nil
}

func (m *memStore) Put(_ context.Context, data []byte) (cas.Ref, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failPut != nil {
		return cas.Ref{}, m.failPut
	}
	ref := cas.Sum(data)
	m.blobs[ref] = append([]byte(nil), data...)
	return ref, nil
}

// Has reports whether ref is stored, as the world's stores do.
func (m *memStore) Has(_ context.Context, ref cas.Ref) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.blobs[ref]
	return ok, nil
}

// all returns every stored blob.
func (m *memStore) all() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out [][]byte
	for _, b := range m.blobs {
		out = append(out, b)
	}
	return out
}

// put stores s and returns its ref, failing the test on error.
func (m *memStore) put(t testing.TB, s string) cas.Ref {
	t.Helper()
	ref, err := m.Put(context.Background(), []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// get returns the blob under ref as a string.
func (m *memStore) get(t testing.TB, ref cas.Ref) string {
	t.Helper()
	b, err := m.Get(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// quietLogger discards log lines.
var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// newTestGenerator returns a Generator aimed at srv with no backoff.
func newTestGenerator(t testing.TB, srv *llmtest.Server, edit func(*Config)) *Generator {
	t.Helper()
	cfg := Config{
		BaseURL: srv.URL,
		Backoff: func(int) time.Duration { return 0 },
		Logger:  quietLogger,
	}
	if edit != nil {
		edit(&cfg)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// cas0 is a ref for blobs that need one in error messages.
var cas0 = cas.Sum(nil)
