package journal_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/demiurge-dev/demiurge/journal"
	"go.etcd.io/bbolt"
)

func ExampleStore() {
	ctx := context.Background()
	var s journal.Store = journal.NewMemory()
	defer s.Close()

	// A world's stepper knows its head and names it on every append.
	head, err := s.Append(ctx, "demo", journal.Head{}, []journal.Entry{
		{Kind: "DomainEvent", Payload: []byte("hello")},
		{Kind: "StateHash", Payload: []byte("h1")},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("head seq", head.Seq)

	// A stale head is a conflict; nothing is written.
	_, err = s.Append(ctx, "demo", journal.Head{}, []journal.Entry{{Kind: "DomainEvent"}})
	fmt.Println(errors.Is(err, journal.ErrConflict))

	err = s.Read(ctx, "demo", 1, func(r journal.Record) error {
		fmt.Printf("%d %s %q\n", r.Seq, r.Kind, r.Payload)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	verified, err := journal.Verify(ctx, s, "demo")
	fmt.Println(verified == head, err)
	// Output:
	// head seq 2
	// true
	// 1 DomainEvent "hello"
	// 2 StateHash "h1"
	// true <nil>
}

func ExampleBolt_AppendWith() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "journal-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// One bbolt file holds the journal and the caller's own data.
	db, err := bbolt.Open(filepath.Join(dir, "world.db"), 0o600, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close() // after the journal's Close, which leaves db open
	j, err := journal.NewBolt(db, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer j.Close()

	// The step's records and the blob they name commit in one transaction.
	head, err := j.AppendWith(ctx, "demo", journal.Head{}, []journal.Entry{{Kind: "Step", Payload: []byte("blob-1")}},
		func(tx *bbolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("blobs"))
			if err != nil {
				return err
			}
			return b.Put([]byte("blob-1"), []byte("the data"))
		})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("head seq", head.Seq)

	// If the callback fails, neither the records nor its writes are kept.
	_, err = j.AppendWith(ctx, "demo", head, []journal.Entry{{Kind: "Step"}}, func(tx *bbolt.Tx) error {
		return errors.New("blob store full")
	})
	fmt.Println(err)
	h, _ := j.Head(ctx, "demo")
	fmt.Println("head seq", h.Seq)
	// Output:
	// head seq 1
	// blob store full
	// head seq 1
}
