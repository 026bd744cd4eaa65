package cas_test

// Benchmarks of the stores side by side with their baselines, in one run:
//
//	go test ./cas -run='^$' -bench=. -benchtime=1s -count=3 -cpu=2
//
// Put/<size>/blake3        blake3.Sum256 of the bytes: the floor of any put
// Put/<size>/memory        Memory.Put
// Put/<size>/bbolt-raw-*   one bbolt db.Update putting the bytes under a
//                          random 32-byte key (no hash)
// Put/<size>/bolt-*        Bolt.Put; -sync is the default (fsync per
//                          commit), -nosync is BoltOptions.NoSync for both
// Get/...                  the same for reads (raw = View + copy)
// NodePut/...              PutNode of a ~1 KiB node vs cas.Marshal +
//                          blake3 + raw bbolt Update of the same bytes
// Ratio/...                the two sides of a comparison interleaved in
//                          one loop, reporting x-raw = the median of
//                          subject/baseline time per iteration
//
// Every put writes new bytes (a counter in the first 8 bytes), so none is
// answered by deduplication; stores are replaced every 256 MiB (timer
// stopped) to bound memory and disk.

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/zeebo/blake3"
	"go.etcd.io/bbolt"
)

var benchSizes = []struct {
	name string
	n    int
}{
	{"1KiB", 1 << 10},
	{"64KiB", 64 << 10},
	{"1MiB", 1 << 20},
}

// storeBudget is how many bytes a benchmark puts into one store before it
// starts a fresh one.
const storeBudget = 256 << 20

func perStore(size int) int { return max(1, storeBudget/size) }

// unique stamps i into data so every iteration puts new bytes.
func unique(data []byte, i int) {
	binary.LittleEndian.PutUint64(data, uint64(i)+1)
}

// randKey is a hash-like 32-byte key for the raw bbolt baseline: spread
// over the key space like digests are (splitmix64 of i).
func randKey(key *[32]byte, i int) {
	x := uint64(i) * 0x9e3779b97f4a7c15
	for j := 0; j < 32; j += 8 {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		binary.LittleEndian.PutUint64(key[j:], z^(z>>31))
	}
}

// rawDB opens a bare bbolt file with the same settings OpenBolt uses.
func rawDB(b *testing.B, noSync bool) *bbolt.DB {
	b.Helper()
	db, err := bbolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, &bbolt.Options{Timeout: cas.DefaultBoltTimeout, NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte("raw"))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

func rawPut(db *bbolt.DB, key *[32]byte, data []byte) error {
	return db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("raw")).Put(key[:], data)
	})
}

func boltStore(b *testing.B, noSync bool) *cas.Bolt {
	b.Helper()
	s, err := cas.OpenBolt(filepath.Join(b.TempDir(), "cas.db"), &cas.BoltOptions{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

var syncModes = []struct {
	name   string
	noSync bool
}{{"sync", false}, {"nosync", true}}

func BenchmarkPut(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			data := make([]byte, sz.n)
			b.Run("blake3", func(b *testing.B) {
				b.SetBytes(int64(sz.n))
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					unique(data, i)
					blake3.Sum256(data)
				}
			})
			b.Run("memory", func(b *testing.B) {
				b.SetBytes(int64(sz.n))
				b.ReportAllocs()
				s := cas.NewMemory()
				for i := 0; b.Loop(); i++ {
					if i > 0 && i%perStore(sz.n) == 0 {
						b.StopTimer()
						s.Close()
						s = cas.NewMemory()
						b.StartTimer()
					}
					unique(data, i)
					if _, err := s.Put(b.Context(), data); err != nil {
						b.Fatal(err)
					}
				}
			})
			for _, m := range syncModes {
				b.Run("bbolt-raw-"+m.name, func(b *testing.B) {
					b.SetBytes(int64(sz.n))
					b.ReportAllocs()
					db := rawDB(b, m.noSync)
					var key [32]byte
					for i := 0; b.Loop(); i++ {
						if i > 0 && i%perStore(sz.n) == 0 {
							b.StopTimer()
							db = rawDB(b, m.noSync)
							b.StartTimer()
						}
						unique(data, i)
						randKey(&key, i)
						if err := rawPut(db, &key, data); err != nil {
							b.Fatal(err)
						}
					}
				})
				b.Run("bolt-"+m.name, func(b *testing.B) {
					b.SetBytes(int64(sz.n))
					b.ReportAllocs()
					s := boltStore(b, m.noSync)
					for i := 0; b.Loop(); i++ {
						if i > 0 && i%perStore(sz.n) == 0 {
							b.StopTimer()
							s = boltStore(b, m.noSync)
							b.StartTimer()
						}
						unique(data, i)
						if _, err := s.Put(b.Context(), data); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			count := min(1024, perStore(sz.n)/4)
			blobs := make([][]byte, count)
			refs := make([]cas.Ref, count)
			for i := range blobs {
				blobs[i] = make([]byte, sz.n)
				unique(blobs[i], i)
				refs[i] = cas.Sum(blobs[i])
			}
			b.Run("blake3", func(b *testing.B) {
				b.SetBytes(int64(sz.n))
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					blake3.Sum256(blobs[i%count])
				}
			})
			b.Run("memory", func(b *testing.B) {
				s := cas.NewMemory()
				defer s.Close()
				for _, d := range blobs {
					if _, err := s.Put(b.Context(), d); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(int64(sz.n))
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if _, err := s.Get(b.Context(), refs[i%count]); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("bbolt-raw", func(b *testing.B) {
				db := rawDB(b, true)
				keys := make([][32]byte, count)
				for i, d := range blobs {
					keys[i] = refs[i].Digest()
					if err := rawPut(db, &keys[i], d); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(int64(sz.n))
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					var out []byte
					err := db.View(func(tx *bbolt.Tx) error {
						out = append([]byte(nil), tx.Bucket([]byte("raw")).Get(keys[i%count][:])...)
						return nil
					})
					if err != nil || len(out) != sz.n {
						b.Fatal(err)
					}
				}
			})
			b.Run("bolt", func(b *testing.B) {
				s := boltStore(b, true)
				for _, d := range blobs {
					if _, err := s.Put(b.Context(), d); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(int64(sz.n))
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if _, err := s.Get(b.Context(), refs[i%count]); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// benchNode is a ~1 KiB node shaped like a journal record or a tool call.
type benchNode struct {
	Kind string            `cbor:"$kind"`
	Seq  uint64            `cbor:"seq"`
	Name string            `cbor:"name"`
	Args string            `cbor:"arguments_json"`
	Refs []cas.Ref         `cbor:"refs"`
	Meta map[string]string `cbor:"meta"`
}

func newBenchNode() *benchNode {
	return &benchNode{
		Kind: "sys/LlmToolCall@1",
		Name: "workspace_write",
		Args: `{"path":"src/main.go","content":"` + strings.Repeat("fmt.Println(\"hello\")\\n", 26) + `"}`,
		Refs: []cas.Ref{cas.Sum([]byte("a")), cas.Sum([]byte("b")), cas.Sum([]byte("c"))},
		Meta: map[string]string{"call_id": "call_8f3a", "model": "gpt-5", "origin": "plan:tool_plan", "status": "ok"},
	}
}

func BenchmarkNodePut(b *testing.B) {
	node := newBenchNode()
	nb, err := cas.Marshal(node)
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range syncModes {
		b.Run("encode+hash+bbolt-raw-"+m.name, func(b *testing.B) {
			db := rawDB(b, m.noSync)
			b.ReportAllocs()
			b.ReportMetric(float64(len(nb)), "node-bytes")
			for i := 0; b.Loop(); i++ {
				node.Seq = uint64(i)
				enc, err := cas.Marshal(node)
				if err != nil {
					b.Fatal(err)
				}
				key := blake3.Sum256(enc)
				if err := rawPut(db, &key, enc); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("bolt-"+m.name, func(b *testing.B) {
			s := boltStore(b, m.noSync)
			b.ReportAllocs()
			b.ReportMetric(float64(len(nb)), "node-bytes")
			for i := 0; b.Loop(); i++ {
				node.Seq = uint64(i)
				if _, err := cas.PutNode(b.Context(), s, node); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			node.Seq = uint64(i)
			if _, err := cas.Marshal(node); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// interleave runs baseline and subject alternately in one loop (swapping
// which goes first each iteration) so both see the same machine load. It
// reports their mean times (ns/raw, ns/subject), x-raw-mean = the ratio of
// the means, and x-raw = the median of the per-iteration ratios, which a
// burst of load on the shared machine moves much less.
// If reset is not nil it runs before each iteration, outside the timings.
// If size > 0, each side's throughput is reported too (MB/s-raw,
// MB/s-subject).
func interleave(b *testing.B, size int, reset, baseline, subject func(i int)) {
	var tBase, tSubj time.Duration
	var ratios []float64
	for i := 0; b.Loop(); i++ {
		if reset != nil {
			reset(i)
		}
		var base, subj time.Duration
		if i%2 == 0 {
			t0 := time.Now()
			baseline(i)
			t1 := time.Now()
			subject(i)
			base, subj = t1.Sub(t0), time.Since(t1)
		} else {
			t0 := time.Now()
			subject(i)
			t1 := time.Now()
			baseline(i)
			subj, base = t1.Sub(t0), time.Since(t1)
		}
		tBase += base
		tSubj += subj
		ratios = append(ratios, float64(subj)/float64(max(base, 1)))
	}
	n := float64(b.N)
	slices.Sort(ratios)
	b.ReportMetric(float64(tBase.Nanoseconds())/n, "ns/raw")
	b.ReportMetric(float64(tSubj.Nanoseconds())/n, "ns/subject")
	b.ReportMetric(float64(tSubj)/float64(tBase), "x-raw-mean")
	b.ReportMetric(ratios[len(ratios)/2], "x-raw")
	if size > 0 {
		b.ReportMetric(float64(size)*n/float64(tBase.Nanoseconds())*1e3, "MB/s-raw")
		b.ReportMetric(float64(size)*n/float64(tSubj.Nanoseconds())*1e3, "MB/s-subject")
	}
}

// BenchmarkRatio measures within one loop: Memory.Put of 1 MiB vs BLAKE3
// of the same bytes (target: ≥ 1 GB/s), a 1 KiB node put vs encode + hash
// + raw bbolt put of the same bytes (target ≤ 1.3), and blob puts vs a raw
// bbolt put of the same bytes (the difference is hashing plus the dedupe
// read transaction).
func BenchmarkRatio(b *testing.B) {
	b.Run("memory-put-1MiB-vs-blake3", func(b *testing.B) {
		const size = 1 << 20
		s := cas.NewMemory()
		d1, d2 := make([]byte, size), make([]byte, size)
		b.ReportAllocs()
		interleave(b, size, func(i int) {
			if i > 0 && i%perStore(size) == 0 {
				b.StopTimer()
				s.Close()
				s = cas.NewMemory()
				b.StartTimer()
			}
		}, func(i int) {
			unique(d1, i)
			blake3.Sum256(d1)
		}, func(i int) {
			unique(d2, i)
			if _, err := s.Put(b.Context(), d2); err != nil {
				b.Fatal(err)
			}
		})
	})
	for _, m := range syncModes {
		b.Run("node-1KiB-"+m.name, func(b *testing.B) {
			db := rawDB(b, m.noSync)
			s := boltStore(b, m.noSync)
			base, subj := newBenchNode(), newBenchNode()
			b.ReportAllocs()
			interleave(b, 0, nil, func(i int) {
				base.Seq = uint64(i)
				enc, err := cas.Marshal(base)
				if err != nil {
					b.Fatal(err)
				}
				key := blake3.Sum256(enc)
				if err := rawPut(db, &key, enc); err != nil {
					b.Fatal(err)
				}
			}, func(i int) {
				subj.Seq = uint64(i)
				if _, err := cas.PutNode(b.Context(), s, subj); err != nil {
					b.Fatal(err)
				}
			})
		})
		for _, sz := range benchSizes {
			b.Run(fmt.Sprintf("put-%s-%s", sz.name, m.name), func(b *testing.B) {
				db := rawDB(b, m.noSync)
				s := boltStore(b, m.noSync)
				d1, d2 := make([]byte, sz.n), make([]byte, sz.n)
				var key [32]byte
				b.ReportAllocs()
				interleave(b, sz.n, func(i int) {
					if i > 0 && i%perStore(sz.n) == 0 {
						b.StopTimer()
						db, s = rawDB(b, m.noSync), boltStore(b, m.noSync)
						b.StartTimer()
					}
				}, func(i int) {
					unique(d1, i)
					randKey(&key, i)
					if err := rawPut(db, &key, d1); err != nil {
						b.Fatal(err)
					}
				}, func(i int) {
					unique(d2, i)
					if _, err := s.Put(b.Context(), d2); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}
