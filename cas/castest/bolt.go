package castest

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/internal/boltlayout"
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

// BoltBlobBucketMin is the size from which a Bolt store keeps a blob in a
// nested bucket of its own: tests that damage stores make blobs on both
// sides of it.
const BoltBlobBucketMin = boltlayout.BlobBucketMin

// CorruptBoltBlob changes the stored bytes of ref in db, a Bolt store's
// database (the last byte is flipped, or a byte added to an empty blob), so
// they no longer hash to ref. It writes through bbolt, keeping the file
// sound: what is damaged is the blob, as a bad disk sector would leave it.
func CorruptBoltBlob(db *bbolt.DB, ref cas.Ref) error {
	return db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(boltlayout.Bucket))
		if b == nil {
			return fmt.Errorf("no bucket %q", boltlayout.Bucket)
		}
		d := ref.Digest()
		key := d[:]
		if nested := b.Bucket(key); nested != nil { // a big blob has a bucket of its own
			b, key = nested, []byte(boltlayout.BlobKey)
		}
		v := b.Get(key)
		if v == nil {
			return fmt.Errorf("blob %s is not stored", ref)
		}
		bad := append([]byte(nil), v...)
		if len(bad) == 0 {
			bad = []byte{0}
		} else {
			bad[len(bad)-1] ^= 0xff
		}
		return b.Put(key, bad)
	})
}
