package pgstore_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.etcd.io/bbolt"

	"github.com/demiurge-dev/demiurge/journal"
)

// BenchmarkStep5 measures one durable append of a 5-record step (~1 KiB
// payloads) to the PostgreSQL journal against a raw pgx transaction
// (Begin, one INSERT of the same 5 rows into a table of the same shape,
// the head row's UPDATE, Commit) on the same server, and the bbolt
// journal against a raw bbolt Update of the same 5 encoded records on
// the local disk. The four alternate in every iteration, so that noise
// hits them alike. The server runs with fsync on (synchronous_commit on,
// the default). Metrics: the median time of each, and the medians of the
// per-iteration ratios pg/raw-pgx (target <= 1.3) and bolt/raw-bolt.
func BenchmarkStep5(b *testing.B) {
	ctx := context.Background()
	s, _ := open(b)
	pool := s.Pool()
	if _, err := pool.Exec(ctx, `CREATE TABLE raw_records (world text COLLATE "C" NOT NULL, seq bigint NOT NULL, kind text NOT NULL,
		payload bytea NOT NULL, prev bytea NOT NULL, hash bytea NOT NULL, PRIMARY KEY (world, seq));
		CREATE TABLE raw_heads (world text COLLATE "C" PRIMARY KEY, seq bigint NOT NULL, hash bytea NOT NULL);
		INSERT INTO raw_heads VALUES ('bench', 0, '\x')`); err != nil {
		b.Fatal(err)
	}
	db, err := bbolt.Open(filepath.Join(b.TempDir(), "bench.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	bj, err := journal.NewBolt(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bj.Close()
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("raw")); return err }); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	step := func() []journal.Entry {
		es := make([]journal.Entry, 5)
		for i := range es {
			p := make([]byte, 1<<10)
			for k := 0; k < len(p); k += 8 {
				binary.LittleEndian.PutUint64(p[k:], rng.Uint64())
			}
			es[i] = journal.Entry{Kind: "DomainEvent", Payload: p}
		}
		return es
	}
	var pgHead, boltHead, rawHead journal.Head
	var rawKey uint64
	var tPG, tRaw, tBolt, tRawBolt, rPG, rBolt []time.Duration
	for b.Loop() {
		es := step()
		t0 := time.Now()
		if pgHead, err = s.Journal().Append(ctx, "bench", pgHead, es); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		recs, next, err := journal.EncodeEntries("bench", rawHead, es)
		if err != nil {
			b.Fatal(err)
		}
		if err := rawTx(ctx, pool, recs, next); err != nil {
			b.Fatal(err)
		}
		rawHead = next
		t2 := time.Now()
		if boltHead, err = bj.Append(ctx, "bench", boltHead, es); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		err = db.Update(func(tx *bbolt.Tx) error {
			bk := tx.Bucket([]byte("raw"))
			for _, r := range recs {
				enc, err := r.Encode()
				if err != nil {
					return err
				}
				rawKey++
				var k [8]byte
				binary.BigEndian.PutUint64(k[:], rawKey)
				if err := bk.Put(k[:], enc); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		t4 := time.Now()
		tPG, tRaw, tBolt, tRawBolt = append(tPG, t1.Sub(t0)), append(tRaw, t2.Sub(t1)), append(tBolt, t3.Sub(t2)), append(tRawBolt, t4.Sub(t3))
		rPG = append(rPG, time.Duration(float64(t1.Sub(t0))/float64(t2.Sub(t1))*1000))
		rBolt = append(rBolt, time.Duration(float64(t3.Sub(t2))/float64(t4.Sub(t3))*1000))
	}
	b.StopTimer()
	b.ReportMetric(us(median(tPG)), "pg-µs/step")
	b.ReportMetric(us(median(tRaw)), "raw-pgx-µs/tx")
	b.ReportMetric(us(median(tBolt)), "bolt-µs/step")
	b.ReportMetric(us(median(tRawBolt)), "raw-bolt-µs/tx")
	b.ReportMetric(float64(median(rPG))/1000, "pg/raw-pgx")
	b.ReportMetric(float64(median(rBolt))/1000, "bolt/raw-bolt")
}

// rawTx is the baseline: a plain pgx transaction writing the same rows.
func rawTx(ctx context.Context, pool interface {
	Begin(context.Context) (pgx.Tx, error)
}, recs []journal.Record, next journal.Head) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	seqs := make([]int64, len(recs))
	kinds := make([]string, len(recs))
	payloads, prevs, hashes := make([][]byte, len(recs)), make([][]byte, len(recs)), make([][]byte, len(recs))
	for i, r := range recs {
		p, h := r.Prev.Digest(), r.Hash.Digest()
		seqs[i], kinds[i], payloads[i], prevs[i], hashes[i] = int64(r.Seq), r.Kind, r.Payload, p[:], h[:]
	}
	if _, err := tx.Exec(ctx, `INSERT INTO raw_records SELECT 'bench', * FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::bytea[], $5::bytea[])`,
		seqs, kinds, payloads, prevs, hashes); err != nil {
		return err
	}
	h := next.Hash.Digest()
	if _, err := tx.Exec(ctx, `UPDATE raw_heads SET seq = $1, hash = $2 WHERE world = 'bench'`, int64(next.Seq), h[:]); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// BenchmarkCASPut measures storing a new blob of random bytes (1 KiB,
// 1 MiB: one row; 8 MiB: eight chunks) and reading it back (re-hashed), on
// PostgreSQL with fsync on.
func BenchmarkCASPut(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20, 8 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			ctx := context.Background()
			s, _ := open(b)
			data := randomBytes(uint64(size), size)
			var n uint64
			b.SetBytes(int64(size))
			for b.Loop() {
				n++
				binary.LittleEndian.PutUint64(data, n)
				ref, err := s.CAS().Put(ctx, data)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.CAS().Get(ctx, ref); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
