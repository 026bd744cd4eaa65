package castest

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/demiurge-dev/demiurge/cas"
)

// PutsWhileReading checks that puts through p, a store in db opened with
// cas.TuneBolt's mapping, grow the file without waiting for a read
// transaction another goroutine holds open (without the mapping bbolt
// must remap, and waits for every reader). It is skipped where TuneBolt
// maps no more than the file (Windows, 32-bit systems).
func PutsWhileReading(t *testing.T, db *bbolt.DB, p cas.Putter) {
	t.Helper()
	if runtime.GOOS == "windows" || strconv.IntSize < 64 {
		t.Skip("cas.TuneBolt maps no more than the file here")
	}
	tx, err := db.Begin(false)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var err error
		for i := range 8 { // 32 MiB: far past the file's first mappings
			if _, err = p.Put(t.Context(), bytes.Repeat([]byte{byte(i)}, 4<<20)); err != nil {
				break
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		tx.Rollback()
		if err != nil {
			t.Error(err)
		}
	case <-time.After(time.Minute):
		t.Error("Put blocked on the open read transaction: the file was remapped")
		tx.Rollback()
		<-done
	}
}
