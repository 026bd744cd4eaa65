package world_test

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/demiurge-dev/demiurge/journal"
	"github.com/fxamacker/cbor/v2"
	"github.com/zeebo/blake3"
	"go.etcd.io/bbolt"
)

// rerunFloor is the storage path of replaying a world from genesis, and
// nothing else: the floor BenchmarkRerunBolt reads its figures against.
// It reads world's records out of the journal's log bucket in one read
// transaction, in key order, with one cursor (the journal's format v2,
// journal/layout.go: a step header under an 8-byte position, its records
// under the position and a 4-byte index), and for each record
//
//   - copies it out of the file (as a reader must: the mmap is valid only
//     in the transaction),
//   - decodes it with fxamacker/cbor into {seq, kind, payload, prev},
//   - checks its seq and that prev is the BLAKE3 of the record before
//     (the genesis hash for the first), hashing the record with BLAKE3,
//   - decodes its payload into a generic value (maps, strings, integers)
//     with fxamacker/cbor.
//
// It runs no reducer, builds no state, encodes and compares nothing: what
// Rerun adds to it is the world's own work (the machine's step, the
// derived records re-encoded and compared byte for byte).
func rerunFloor(db *bbolt.DB, world string) (uint64, error) {
	type record struct {
		Seq     uint64 `cbor:"seq"`
		Kind    string `cbor:"kind"`
		Payload []byte `cbor:"payload"`
		Prev    []byte `cbor:"prev"`
	}
	var n uint64
	err := db.View(func(tx *bbolt.Tx) error {
		log := tx.Bucket([]byte("journal.log"))
		if log == nil {
			return fmt.Errorf("no journal.log bucket")
		}
		prev := journal.Genesis(world).Digest()
		var buf []byte
		c := log.Cursor()
		for k, v := c.First(); k != nil && k[0] != 0xff; k, v = c.Next() {
			if len(k) == 8 { // a step header: version, prev position, its world's name, ...
				if l, m := binary.Uvarint(v[min(len(v), 9):]); m <= 0 || len(v) < 9+m+int(l) || string(v[9+m:9+m+int(l)]) != world {
					return fmt.Errorf("step %x is not of world %s", k, world)
				}
				continue
			}
			if len(k) != 12 {
				return fmt.Errorf("unexpected key %x", k)
			}
			buf = append(buf[:0], v...)
			var r record
			if err := cbor.Unmarshal(buf, &r); err != nil {
				return err
			}
			if r.Seq != n+1 || !bytes.Equal(r.Prev, prev[:]) {
				return fmt.Errorf("record %d: broken chain", n+1)
			}
			prev = blake3.Sum256(buf)
			var payload any
			if err := cbor.Unmarshal(r.Payload, &payload); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
