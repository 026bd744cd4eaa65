package ui_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/examples"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/reducer/builtin"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/ui"
	"github.com/demiurge-dev/demiurge/world"
)

// sessionsDir holds the recorded sessions.
const sessionsDir = "../testdata/sessions"

// registry is the reducers of the binary, as the command line (package cli) has them.
func registry() *reducer.Registry {
	r := reducer.NewRegistry()
	examples.RegisterAll(r)
	builtin.Register(r)
	return r
}

// sessionNames are the recorded sessions, each a world of sessionsStore.
func sessionNames(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(sessionsDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) < 5 {
		t.Fatalf("%d recorded sessions in %s; want them all", len(names), sessionsDir)
	}
	return names
}

// sessionsStore is a store holding every recorded session, each as a
// world named after its directory (the bundles all name theirs main).
func sessionsStore(t *testing.T) *world.MemoryStorage {
	t.Helper()
	st := world.NewMemoryStorage()
	for _, name := range sessionNames(t) {
		importAs(t.Context(), t, st, filepath.Join(sessionsDir, name), name)
	}
	return st
}

// importAs writes a bundle's blobs and records into st as world name.
func importAs(ctx context.Context, t *testing.T, st world.Storage, dir, name string) {
	t.Helper()
	b, err := replay.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, blob := range b.Blobs {
		if _, err := st.CAS().Put(ctx, blob); err != nil {
			t.Fatal(err)
		}
	}
	entries := make([]journal.Entry, 0, len(b.Records))
	for _, r := range b.Records {
		entries = append(entries, journal.Entry{Kind: r.Kind, Payload: r.Payload})
	}
	if _, err := st.Journal().Append(ctx, name, journal.Head{}, entries); err != nil {
		t.Fatalf("import %s as world %s: %v", dir, name, err)
	}
}

// serve serves the view of src on a loopback port for the test.
func serve(t *testing.T, src ui.Source, reg *reducer.Registry) *ui.Server {
	t.Helper()
	ln, err := ui.Listen(ui.DefaultAddr)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ui.New(ln, ui.Options{Source: src, Name: "test store", Reducers: reg, Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// client is an HTTP client that keeps cookies and does not follow
// redirects, so a test sees each answer.
func client(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// parts is a store's journal and CAS as a Source.
func parts(st world.Storage) ui.Source { return ui.Parts{Journal: st.Journal(), CAS: st.CAS()} }
