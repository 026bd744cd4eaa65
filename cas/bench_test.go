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
// Put/<size>/disk-*        the disk's floor: the same bytes appended to a
//                          plain file with one write (and one fsync for
//                          -sync), no database at all
// Get/...                  the same for reads (raw = View + copy)
// NodePut/...              PutNode of a ~1 KiB node vs cas.Marshal +
//                          blake3 + raw bbolt Update of the same bytes
// Ratio/...                the two sides of a comparison interleaved in
//                          one loop, reporting x-raw = the median of
//                          subject/baseline time per iteration
// BboltOptions/...         raw bbolt puts (in Bolt's layout) with default
//                          options vs each candidate bbolt.Options tuning,
//                          interleaved, x-<option> = median time ratio
// BoltOpen/...             bbolt.Open + Close of a ~200 MiB store, with
//                          the freelist synced (the default) or not
//
// Every put writes new bytes (a counter in the first 8 bytes), so none is
// answered by deduplication; stores are replaced every 256 MiB (timer
// stopped) to bound memory and disk.

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zeebo/blake3"
	"go.etcd.io/bbolt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/internal/boltlayout"
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

// rawDB opens a bare bbolt file with bbolt's default options (NoSync
// aside): the baseline a plain bbolt user starts from. OpenBolt tunes its
// own (TuneBolt); BenchmarkBboltOptions measures what each option does.
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

// rawPut is the raw bbolt baseline: one Update putting data under key in
// a flat bucket, the layout every bbolt user starts with.
func rawPut(db *bbolt.DB, key *[32]byte, data []byte) error {
	return db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("raw")).Put(key[:], data)
	})
}

// rawPutOwnBucket is rawPut in Bolt's layout: data of at least
// boltlayout.BlobBucketMin bytes goes in a nested bucket of its own.
func rawPutOwnBucket(db *bbolt.DB, key *[32]byte, data []byte) error {
	if len(data) < boltlayout.BlobBucketMin {
		return rawPut(db, key, data)
	}
	return rawPutNested(db, key, data)
}

// rawPutNested puts data in a nested bucket of its own whatever its size.
func rawPutNested(db *bbolt.DB, key *[32]byte, data []byte) error {
	return db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.Bucket([]byte("raw")).CreateBucket(key[:])
		if err != nil {
			return err
		}
		return b.Put([]byte(boltlayout.BlobKey), data)
	})
}

// diskFile appends blobs to a plain file: the floor any store on this
// disk pays for the same bytes.
type diskFile struct {
	b    *testing.B
	sync bool
	f    *os.File
	off  int64
}

func newDiskFile(b *testing.B, sync bool) *diskFile {
	b.Helper()
	d := &diskFile{b: b, sync: sync}
	d.reset()
	b.Cleanup(func() { d.f.Close() })
	return d
}

// reset starts a new, empty file.
func (d *diskFile) reset() {
	if d.f != nil {
		d.f.Close()
		os.Remove(d.f.Name())
	}
	f, err := os.Create(filepath.Join(d.b.TempDir(), "disk.bin"))
	if err != nil {
		d.b.Fatal(err)
	}
	d.f, d.off = f, 0
}

// write appends data with one write, and one fsync if d.sync.
func (d *diskFile) write(data []byte) {
	if _, err := d.f.WriteAt(data, d.off); err != nil {
		d.b.Fatal(err)
	}
	d.off += int64(len(data))
	if d.sync {
		if err := d.f.Sync(); err != nil {
			d.b.Fatal(err)
		}
	}
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
				b.Run("disk-"+m.name, func(b *testing.B) {
					b.SetBytes(int64(sz.n))
					b.ReportAllocs()
					d := newDiskFile(b, !m.noSync)
					for i := 0; b.Loop(); i++ {
						if i > 0 && i%perStore(sz.n) == 0 {
							b.StopTimer()
							d.reset()
							b.StartTimer()
						}
						unique(data, i)
						d.write(data)
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
		putVsBlake3(b, func() cas.Store { return cas.NewMemory() })
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

// putVsBlake3 runs Put of 1 MiB into the store open makes against BLAKE3
// of the same bytes, alternately in one loop (see interleave), on a fresh
// store every perStore puts.
func putVsBlake3(b *testing.B, open func() cas.Store) {
	const size = 1 << 20
	s := open()
	defer func() { s.Close() }()
	d1, d2 := make([]byte, size), make([]byte, size)
	b.ReportAllocs()
	interleave(b, size, func(i int) {
		if i > 0 && i%perStore(size) == 0 {
			b.StopTimer()
			s.Close()
			s = open()
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
}

// BenchmarkRatio2 compares, each within one loop: Bolt.Put of 1 MiB vs
// BLAKE3 of the same bytes (the target: >= 1 GB/s), Bolt.Put vs the
// disk's floor (the same bytes appended to a plain file, fsynced for
// -sync), and the raw bbolt put in a flat bucket vs in a bucket of its own
// (Bolt's layout from boltlayout.BlobBucketMin on), at sizes around that
// threshold.
func BenchmarkRatio2(b *testing.B) {
	for _, m := range syncModes {
		b.Run("bolt-put-1MiB-"+m.name+"-vs-blake3", func(b *testing.B) {
			putVsBlake3(b, func() cas.Store { return boltStore(b, m.noSync) })
		})
		for _, sz := range benchSizes {
			b.Run(fmt.Sprintf("put-%s-%s-vs-disk", sz.name, m.name), func(b *testing.B) {
				d := newDiskFile(b, !m.noSync)
				s := boltStore(b, m.noSync)
				d1, d2 := make([]byte, sz.n), make([]byte, sz.n)
				b.ReportAllocs()
				interleave(b, sz.n, func(i int) {
					if i > 0 && i%perStore(sz.n) == 0 {
						b.StopTimer()
						d.reset()
						s = boltStore(b, m.noSync)
						b.StartTimer()
					}
				}, func(i int) {
					unique(d1, i)
					d.write(d1)
				}, func(i int) {
					unique(d2, i)
					if _, err := s.Put(b.Context(), d2); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
		for _, n := range []int{1 << 10, 4 << 10, 8 << 10, 16 << 10, 64 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("own-bucket-%dKiB-%s", n>>10, m.name), func(b *testing.B) {
				flat, nested := rawDB(b, m.noSync), rawDB(b, m.noSync)
				d1, d2 := make([]byte, n), make([]byte, n)
				var k1, k2 [32]byte
				b.ReportAllocs()
				interleave(b, n, func(i int) {
					if i > 0 && i%perStore(n) == 0 {
						b.StopTimer()
						reportFileRatio(b, flat, nested)
						flat, nested = rawDB(b, m.noSync), rawDB(b, m.noSync)
						b.StartTimer()
					}
				}, func(i int) {
					unique(d1, i)
					randKey(&k1, i)
					if err := rawPut(flat, &k1, d1); err != nil {
						b.Fatal(err)
					}
				}, func(i int) {
					unique(d2, i)
					randKey(&k2, i)
					if err := rawPutNested(nested, &k2, d2); err != nil {
						b.Fatal(err)
					}
				})
				reportFileRatio(b, flat, nested)
			})
		}
	}
}

// reportFileRatio reports how much more of the file the subject's data
// takes than the baseline's (bbolt's high water mark, pages in use).
func reportFileRatio(b *testing.B, base, subj *bbolt.DB) {
	size := func(db *bbolt.DB) (n int64) {
		if err := db.View(func(tx *bbolt.Tx) error { n = tx.Size(); return nil }); err != nil {
			b.Fatal(err)
		}
		return n
	}
	b.ReportMetric(float64(size(subj))/float64(size(base)), "x-file")
}

// boltTuning is a candidate bbolt setting for the store's file.
type boltTuning struct {
	name string
	opts func(*bbolt.Options)
	db   func(*bbolt.DB)
}

var boltTunings = []boltTuning{
	{name: "default"},
	{name: "InitialMmapSize-1GiB", opts: func(o *bbolt.Options) { o.InitialMmapSize = 1 << 30 }},
	{name: "NoFreelistSync", opts: func(o *bbolt.Options) { o.NoFreelistSync = true }},
	{name: "FreelistMapType", opts: func(o *bbolt.Options) { o.FreelistType = bbolt.FreelistMapType }},
	{name: "AllocSize-64MiB", db: func(db *bbolt.DB) { db.AllocSize = 64 << 20 }},
	{name: "PageSize-16KiB", opts: func(o *bbolt.Options) { o.PageSize = 16 << 10 }},
}

func tunedDB(b *testing.B, noSync bool, t boltTuning) *bbolt.DB {
	b.Helper()
	o := &bbolt.Options{Timeout: cas.DefaultBoltTimeout, NoSync: noSync}
	if t.opts != nil {
		t.opts(o)
	}
	db, err := bbolt.Open(filepath.Join(b.TempDir(), "tuned.db"), 0o600, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if t.db != nil {
		t.db(db)
	}
	if err := db.Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte("raw"))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkBboltOptions puts the same bytes into one bbolt file per
// candidate setting (boltTunings), in Bolt's layout, all in one loop (the
// order rotating each iteration), and reports each candidate's mean time
// (us-<name>) and the median of its per-iteration time ratio to the
// default options (x-<name>).
func BenchmarkBboltOptions(b *testing.B) {
	for _, m := range syncModes {
		for _, sz := range benchSizes {
			b.Run(sz.name+"-"+m.name, func(b *testing.B) {
				dbs := make([]*bbolt.DB, len(boltTunings))
				open := func() {
					for j, t := range boltTunings {
						dbs[j] = tunedDB(b, m.noSync, t)
					}
				}
				open()
				data := make([]byte, sz.n)
				var key [32]byte
				total := make([]time.Duration, len(dbs))
				took := make([]time.Duration, len(dbs))
				ratios := make([][]float64, len(dbs))
				for i := 0; b.Loop(); i++ {
					if i > 0 && i%perStore(sz.n) == 0 {
						b.StopTimer()
						for _, db := range dbs {
							db.Close()
						}
						open()
						b.StartTimer()
					}
					unique(data, i)
					randKey(&key, i)
					for k := range dbs {
						j := (k + i) % len(dbs)
						t0 := time.Now()
						if err := rawPutOwnBucket(dbs[j], &key, data); err != nil {
							b.Fatal(err)
						}
						took[j] = time.Since(t0)
						total[j] += took[j]
					}
					for j := range dbs {
						ratios[j] = append(ratios[j], float64(took[j])/float64(max(took[0], 1)))
					}
				}
				for j, t := range boltTunings {
					b.ReportMetric(float64(total[j].Microseconds())/float64(b.N), "us-"+t.name)
					if j > 0 {
						slices.Sort(ratios[j])
						b.ReportMetric(ratios[j][len(ratios[j])/2], "x-"+t.name)
					}
				}
			})
		}
	}
}

// BenchmarkBoltOpen measures what bbolt.Options.NoFreelistSync costs on
// open: bbolt then rebuilds the freelist by walking every page of the
// file. The file holds ~200 MiB of 1 KiB or 1 MiB blobs, written through
// Bolt (so in its layout) with the freelist synced or not; each iteration
// opens it read-write and closes it (page cache warm).
func BenchmarkBoltOpen(b *testing.B) {
	for _, sz := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"1MiB", 1 << 20}} {
		for _, noFreelistSync := range []bool{false, true} {
			name := sz.name + "-freelist-synced"
			if noFreelistSync {
				name = sz.name + "-NoFreelistSync"
			}
			b.Run(name, func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "open.db")
				opts := &bbolt.Options{Timeout: cas.DefaultBoltTimeout, NoSync: true, NoFreelistSync: noFreelistSync}
				db, err := bbolt.Open(path, 0o600, opts)
				if err != nil {
					b.Fatal(err)
				}
				s, err := cas.NewBolt(db)
				if err != nil {
					b.Fatal(err)
				}
				data := make([]byte, sz.n)
				perTx := max(1, (4<<20)/sz.n)
				for i := 0; i*sz.n < 200<<20; {
					err := db.Update(func(tx *bbolt.Tx) error {
						for range perTx {
							unique(data, i)
							i++
							if _, err := s.PutTx(tx, data); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					db, err := bbolt.Open(path, 0o600, opts)
					if err != nil {
						b.Fatal(err)
					}
					if err := db.Close(); err != nil {
						b.Fatal(err)
					}
				}
				st, err := os.Stat(path)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(st.Size())/(1<<20), "file-MiB")
			})
		}
	}
}

// BenchmarkDiskDurable is the disk alone: appending n MiB with one write
// and one fsync, for growing n. It bounds any durable store on this disk,
// batching or not: a put of many blobs in one commit cannot be made
// durable faster than this, whatever its layout.
func BenchmarkDiskDurable(b *testing.B) {
	for _, mib := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			data := make([]byte, mib<<20)
			b.SetBytes(int64(len(data)))
			d := newDiskFile(b, true)
			for i := 0; b.Loop(); i++ {
				if d.off >= 256<<20 {
					b.StopTimer()
					d.reset()
					b.StartTimer()
				}
				unique(data, i)
				d.write(data)
			}
		})
	}
}

// BenchmarkBoltBatchPut makes n 1 MiB blobs durable in one bbolt
// transaction (PutTx, as a world commits a step's blobs): what batching
// buys a durable put over one commit per blob.
func BenchmarkBoltBatchPut(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("%dx1MiB", n), func(b *testing.B) {
			o := &bbolt.Options{}
			cas.TuneBolt(o)
			db, err := bbolt.Open(filepath.Join(b.TempDir(), "cas.db"), 0o600, o)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			s, err := cas.NewBolt(db)
			if err != nil {
				b.Fatal(err)
			}
			data := make([][]byte, n)
			for i := range data {
				data[i] = make([]byte, 1<<20)
			}
			b.SetBytes(int64(n << 20))
			for i := 0; b.Loop(); i++ {
				for j, d := range data {
					unique(d, i*n+j)
				}
				err := db.Update(func(tx *bbolt.Tx) error {
					for _, d := range data {
						if _, err := s.PutTx(tx, d); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
