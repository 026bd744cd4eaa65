package pgstore_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/castest"
	"github.com/demiurge-dev/demiurge/internal/pgtest"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/journal/journaltest"
	"github.com/demiurge-dev/demiurge/pgstore"
	"github.com/demiurge-dev/demiurge/world"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A world runs on the store's Storage.
var _ world.Storage = (*pgstore.Storage)(nil)

// open opens a store in a new schema of the shared server, closed when t
// ends.
func open(t testing.TB) (*pgstore.Store, string) {
	t.Helper()
	u := pgtest.URL(t)
	s, err := pgstore.Open(context.Background(), u, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, u
}

func TestJournal(t *testing.T) {
	journaltest.Test(t, func(t *testing.T) journal.Store {
		s, _ := open(t)
		return s.Journal()
	})
}

func TestCAS(t *testing.T) {
	var mu sync.Mutex
	urls := map[*pgstore.Store]string{}
	castest.TestOpt(t, func(t *testing.T) cas.Store {
		s, u := open(t)
		mu.Lock()
		urls[s] = u
		mu.Unlock()
		return s.CAS()
	}, castest.Options{
		Corrupt: func(t *testing.T, s cas.Store, ref cas.Ref) {
			c := s.(*pgstore.CAS)
			d := ref.Digest()
			_, err := c.Store().Pool().Exec(t.Context(), `UPDATE cas_blobs SET data = CASE WHEN octet_length(data) = 0 THEN '\x00'::bytea
				ELSE set_byte(data, 0, get_byte(data, 0) # 1) END WHERE digest = $1`, d[:])
			if err != nil {
				t.Fatal(err)
			}
		},
		Reopen: func(t *testing.T, s cas.Store) cas.Store {
			st := s.(*pgstore.CAS).Store()
			mu.Lock()
			u := urls[st]
			mu.Unlock()
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			s2, err := pgstore.Open(t.Context(), u, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s2.Close() })
			return s2.CAS()
		},
	})
}
