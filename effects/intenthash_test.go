package effects

import (
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/schema"
)

// TestIntentHashEncoding: intentHash, which encodes the intent's record
// straight from its fields, gives the ref of the record built as a map
// (intentValue), for every shape of origin, key and params.
func TestIntentHashEncoding(t *testing.T) {
	long := strings.Repeat("x", 300)
	origins := []Origin{
		{Kind: "plan", Name: "demiurge/tool_plan@2", PlanID: 7, Step: "emit"},
		{Kind: "plan", Name: long, PlanID: 1 << 40, Step: ""},
		{Kind: "reducer", Name: "demiurge/Chat@2"},
		{Kind: "reducer", Name: "r", Key: "chat-1"},
		{Kind: "reducer", Name: "r", Key: schema.Record("a", uint64(1), "b", "x")},
	}
	params := []schema.Value{
		nil, "", uint64(0), uint64(1 << 33), schema.Int(-5), []byte("raw"),
		schema.Record("url", "https://example.com", "method", "GET", "body", []byte(long)),
		[]schema.Value{"a", uint64(2), schema.Record()},
	}
	keys := [][]byte{nil, {}, []byte("k"), []byte(long)}
	n := 0
	for _, o := range origins {
		for _, p := range params {
			for _, k := range keys {
				for _, g := range [][2]string{{"g", "sys/http@1"}, {"", ""}, {long, "c"}} {
					got, err := intentHash("http.request", p, g[0], g[1], k, o)
					if err != nil {
						t.Fatal(err)
					}
					want, err := schema.Ref(intentValue("http.request", p, g[0], g[1], k, o))
					if err != nil {
						t.Fatal(err)
					}
					if got != want {
						t.Fatalf("origin %+v, params %#v, key %q, grant %q: %s; the record's ref is %s", o, p, k, g, got, want)
					}
					n++
				}
			}
		}
	}
	t.Logf("%d intents", n)
	// Text that is not UTF-8 is refused, as the record's encoding refuses it.
	bad := Origin{Kind: "plan", Name: "p", Step: "s\xff"}
	if _, err := intentHash("k", nil, "g", "c", nil, bad); err == nil {
		t.Error("intentHash took a step name that is not UTF-8")
	}
	if _, err := schema.Ref(intentValue("k", nil, "g", "c", nil, bad)); err == nil {
		t.Error("schema.Ref took a step name that is not UTF-8")
	}
}

func BenchmarkIntentHash(b *testing.B) {
	o := Origin{Kind: "plan", Name: "bench/sequential@1", PlanID: 3, Step: "e1"}
	p := schema.Record("n", uint64(1), "label", "step one")
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := intentHash("bench.op", p, "g", "bench/cap@1", []byte("k"), o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("record", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := schema.Ref(intentValue("bench.op", p, "g", "bench/cap@1", []byte("k"), o)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
