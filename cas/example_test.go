package cas_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/demiurge-dev/demiurge/cas"
)

func ExampleMemory_Put() {
	ctx := context.Background()
	store := cas.NewMemory()
	defer store.Close()

	ref, err := store.Put(ctx, []byte("hello, world\n"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ref)

	b, err := store.Get(ctx, ref)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", b)

	_, err = store.Get(ctx, cas.Sum([]byte("never stored")))
	fmt.Println(errors.Is(err, cas.ErrNotFound))
	// Output:
	// blake3:623a5460d841b6d1c13d080e85500e0043fd4ba4a8ba9c1aa9b4f6e0d212276c
	// "hello, world\n"
	// true
}

func ExamplePutNode() {
	ctx := context.Background()
	store := cas.NewMemory()
	defer store.Close()

	type point struct {
		X int64 `cbor:"x"`
		Y int64 `cbor:"y"`
	}
	ref, err := cas.PutNode(ctx, store, point{X: 1, Y: 2})
	if err != nil {
		log.Fatal(err)
	}
	raw, _ := store.Get(ctx, ref)
	fmt.Printf("%x\n", raw) // 55799 prefix, then the canonical map {"x": 1, "y": 2}

	var p point
	if err := cas.GetNode(ctx, store, ref, &p); err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.X, p.Y)
	// Output:
	// d9d9f7a2617801617902
	// 1 2
}

func ExampleVerify() {
	ctx := context.Background()
	store := cas.NewMemory()
	defer store.Close()
	for _, s := range []string{"a", "b", "c"} {
		if _, err := store.Put(ctx, []byte(s)); err != nil {
			log.Fatal(err)
		}
	}
	checked, bad, err := cas.Verify(ctx, store, func(ref cas.Ref, err error) {
		fmt.Println("bad:", err) // each corrupt blob, as it is found
	})
	fmt.Println(checked, bad, err)
	// Output:
	// 3 0 <nil>
}
