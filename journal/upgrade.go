package journal

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
	"go.etcd.io/bbolt"
)

// Format v1 kept each world in a top-level bucket "journal/<world>": 8-byte
// big-endian seq -> record bytes, and the head under v1HeadKey (seq ++
// digest).
var (
	v1WorldPrefix = []byte("journal/")
	v1HeadKey     = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 'h'}
)

// v1StepRecords is how many records of a v1 world become one step.
const v1StepRecords = 64

// upgradeV1 rewrites a journal of format v1 into format v2 in one
// transaction: the records of each world, byte for byte (so every hash and
// link stays), become steps of up to v1StepRecords records in the log, and
// the v1 buckets are deleted. A world whose v1 bucket is inconsistent
// stops the upgrade with a *CorruptError, and nothing changes.
func upgradeV1(tx *bbolt.Tx) error {
	if err := createLogBuckets(tx); err != nil {
		return err
	}
	var names [][]byte
	c := tx.Cursor()
	for k, v := c.Seek(v1WorldPrefix); k != nil && bytes.HasPrefix(k, v1WorldPrefix); k, v = c.Next() {
		if v == nil {
			names = append(names, bytes.Clone(k))
		}
	}
	w := &logWriter{tx: tx}
	for _, name := range names {
		world := string(name[len(v1WorldPrefix):])
		if err := ValidateWorld(world); err != nil {
			return corruptf(world, 0, "upgrade from format v1: bucket %q: %v", name, err)
		}
		if err := upgradeV1World(w, world, tx.Bucket(name)); err != nil {
			return err
		}
		if err := tx.DeleteBucket(name); err != nil {
			return fmt.Errorf("upgrade from format v1: delete bucket %q: %w", name, err)
		}
	}
	return tx.Bucket(bucketJournal).Put(keyFormat, formatV2)
}

func upgradeV1World(w *logWriter, world string, b *bbolt.Bucket) error {
	hv := b.Get(v1HeadKey)
	if len(hv) != 8+cas.Size {
		return corruptf(world, 0, "upgrade from format v1: the head entry is %d bytes, want %d", len(hv), 8+cas.Size)
	}
	head := Head{Seq: binary.BigEndian.Uint64(hv), Hash: cas.RefFromDigest(cas.BLAKE3, [cas.Size]byte(hv[8:]))}
	ws := &worldState{}
	var batch [][]byte
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		first := ws.head.Seq + 1
		if err := w.putStep(world, ws, first, encodeStep(world, first, len(batch)), batch); err != nil {
			return err
		}
		ws.head.Seq += uint64(len(batch))
		batch = nil // bbolt keeps the slices until the commit
		return nil
	}
	cur := b.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		if bytes.Equal(k, v1HeadKey) {
			continue
		}
		want := ws.head.Seq + uint64(len(batch)) + 1
		if len(k) != 8 || v == nil || binary.BigEndian.Uint64(k) != want {
			return corruptf(world, want, "upgrade from format v1: record %d is missing (found key %x)", want, k)
		}
		batch = append(batch, bytes.Clone(v)) // v is in the mmap, which the commit may remap
		if len(batch) == v1StepRecords {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if ws.head.Seq != head.Seq {
		return corruptf(world, head.Seq, "upgrade from format v1: the head is seq %d, but the records end at %d", head.Seq, ws.head.Seq)
	}
	ws.head = head
	return w.putHead(world, ws)
}
