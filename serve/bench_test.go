package serve

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/adapters/llm/llmtest"
	"github.com/demiurge-dev/demiurge/agent"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/world"
)

// benchChats is how many chats stream at once in the benchmarks.
const benchChats = 200

// benchAnswer is the fake model's answer: ten words, streamed word by
// word (ten text deltas), then the message, the model call and the end.
const benchAnswer = "one two three four five six seven eight nine ten"

// benchWorld opens examples/demiurge on a bbolt store in a temporary
// directory, against a fake model that answers benchAnswer at once.
func benchWorld(b *testing.B) (world.Storage, []agent.Option, func()) {
	b.Helper()
	model := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: benchAnswer} })
	s, err := store.Open(filepath.Join(b.TempDir(), "store"), nil)
	if err != nil {
		b.Fatal(err)
	}
	st, err := world.NewBoltStorage(s.CAS(), s.Journal())
	if err != nil {
		b.Fatal(err)
	}
	opts := []agent.Option{envOf("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", model.URL), agent.WithModel(agent.Model{Name: "gpt-test"})}
	return st, opts, func() { s.Close(); model.Close() }
}

// pct is the q-th quantile of ds (sorted in place).
func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// BenchmarkServeTurns: 200 chats of one world each send a message and
// read its turn to its end, at once, b.N times over (a turn: one model
// call streaming ten words, then its message and end). Side by side, in
// one run:
//
//   - inprocess: the same 200 turns through agent.Chat.Send in this
//     process, each timed from Send to its TurnEnd;
//   - http: through the server (SSE over loopback HTTP/1.1), each timed by
//     its client from sending the POST to reading turn_end.
//
// For each HTTP turn the server's own added latency is measured on the
// turn itself: the client's time less the time of the Send the server
// ran for it (added-ms/turn), and for each event, from its Send yielding
// it to the client reading it (added-ms/event). p50 and p99 of each.
func BenchmarkServeTurns(b *testing.B) {
	for _, chats := range []int{1, 20, benchChats} {
		b.Run(fmt.Sprintf("chats=%d", chats), func(b *testing.B) { benchTurns(b, chats) })
	}
}

func benchTurns(b *testing.B, benchChats int) {
	b.Run("inprocess", func(b *testing.B) {
		st, opts, done := benchWorld(b)
		defer done()
		w, err := agent.Open(b.Context(), manifest, append(opts, agent.WithStorage(st))...)
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		var mu sync.Mutex
		var turns []time.Duration
		cpu0 := cpuTime()
		b.ResetTimer()
		for range b.N {
			var wg sync.WaitGroup
			for i := range benchChats {
				wg.Go(func() {
					c := w.Chat("c" + strconv.Itoa(i))
					start := time.Now()
					for e, err := range c.Send(b.Context(), "hello") {
						if err != nil {
							b.Error(err)
							return
						}
						if _, ok := e.(agent.TurnEnd); ok {
							d := time.Since(start)
							mu.Lock()
							turns = append(turns, d)
							mu.Unlock()
						}
					}
				})
			}
			wg.Wait()
		}
		b.StopTimer()
		b.ReportMetric(ms(cpuTime()-cpu0)/float64(b.N*benchChats), "cpu-ms/turn")
		b.ReportMetric(ms(pct(turns, .5)), "p50-ms/turn")
		b.ReportMetric(ms(pct(turns, .99)), "p99-ms/turn")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N*benchChats), "ms/turn")
	})
	b.Run("http", func(b *testing.B) {
		st, opts, done := benchWorld(b)
		defer done()
		srv, err := New(b.Context(), Options{Manifest: manifest, Agent: opts, Storage: st, Rate: -1})
		if err != nil {
			b.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		defer func() { hs.CloseClientConnections(); hs.Close(); srv.Close() }()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchChats * 2}}
		var mu sync.Mutex
		var turns, added, events, lag []time.Duration
		srv.testWritten = func(at time.Time) {
			d := time.Since(at)
			mu.Lock()
			lag = append(lag, d)
			mu.Unlock()
		}
		cpu0 := cpuTime()
		b.ResetTimer()
		for range b.N {
			var wg sync.WaitGroup
			for i := range benchChats {
				wg.Go(func() {
					chat := "c" + strconv.Itoa(i)
					start := time.Now()
					req, _ := http.NewRequestWithContext(b.Context(), "POST", hs.URL+"/v1/worlds/main/chats/"+chat+"/messages", strings.NewReader(`{"text": "hello"}`))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "text/event-stream")
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					defer resp.Body.Close()
					arrived := map[string]time.Time{}
					var end time.Time
					_ = readSSE(resp.Body, func(ev sseEvent) bool {
						now := time.Now()
						arrived[ev.ID] = now
						if ev.Event == "turn_end" {
							end = now
							return false
						}
						return true
					})
					if end.IsZero() {
						b.Errorf("chat %s: no turn_end", chat)
						return
					}
					n, _ := strconv.ParseUint(resp.Header.Get("Demiurge-Turn"), 10, 64)
					l := srv.turnLogOf(turnKey{"main", chat, n})
					if l == nil {
						b.Errorf("chat %s: no log of turn %d", chat, n)
						return
					}
					l.mu.Lock()
					var evs []time.Duration
					for _, e := range l.events {
						if t, ok := arrived[e.pos.String()]; ok {
							evs = append(evs, t.Sub(e.at))
						}
					}
					serverTurn := l.events[len(l.events)-1].at.Sub(l.began)
					l.mu.Unlock()
					client := end.Sub(start)
					mu.Lock()
					turns = append(turns, client)
					added = append(added, client-serverTurn)
					events = append(events, evs...)
					mu.Unlock()
				})
			}
			wg.Wait()
		}
		b.StopTimer()
		b.ReportMetric(ms(cpuTime()-cpu0)/float64(b.N*benchChats), "cpu-ms/turn")
		b.ReportMetric(ms(pct(turns, .5)), "p50-ms/turn")
		b.ReportMetric(ms(pct(turns, .99)), "p99-ms/turn")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N*benchChats), "ms/turn")
		b.ReportMetric(ms(pct(added, .5)), "p50-added-ms/turn")
		b.ReportMetric(ms(pct(added, .99)), "p99-added-ms/turn")
		b.ReportMetric(ms(pct(events, .5)), "p50-added-ms/event")
		b.ReportMetric(ms(pct(events, .99)), "p99-added-ms/event")
		b.ReportMetric(ms(pct(lag, .5)), "p50-server-ms/event")
		b.ReportMetric(ms(pct(lag, .99)), "p99-server-ms/event")
	})
}

// BenchmarkServeStreamMemory: the memory an open stream holds in the
// server: 200 turns wait on their model call (held), then 200 clients
// each open a stream of one of them (GET …/events) and read nothing
// more; the heap and stacks in use before and after, per stream. The
// clients are bare connections, a socket each, so nearly all of it is
// the server's.
func BenchmarkServeStreamMemory(b *testing.B) {
	for range b.N {
		hold := make(chan struct{})
		model := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: "late", Hold: hold} })
		s, err := store.Open(filepath.Join(b.TempDir(), "store"), nil)
		if err != nil {
			b.Fatal(err)
		}
		st, _ := world.NewBoltStorage(s.CAS(), s.Journal())
		srv, err := New(b.Context(), Options{Manifest: manifest, Storage: st, Rate: -1,
			Agent: []agent.Option{envOf("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", model.URL), agent.WithModel(agent.Model{Name: "gpt-test"})}})
		if err != nil {
			b.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		addr := hs.Listener.Addr().String()
		for i := range benchChats {
			resp, err := http.Post(hs.URL+"/v1/worlds/main/chats/c"+strconv.Itoa(i)+"/messages?stream=true", "application/json", strings.NewReader(`{"text": "hi"}`))
			if err != nil {
				b.Fatal(err)
			}
			br := bufio.NewReader(resp.Body)
			if _, err := br.ReadString('\n'); err != nil { // the turn has begun
				b.Fatal(err)
			}
			resp.Body.Close()
		}
		before := inUse()
		conns := make([]net.Conn, benchChats)
		for i := range conns {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(c, "GET /v1/worlds/main/chats/c%d/turns/1/events HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", i, addr)
			br := bufio.NewReader(c)
			if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "200") { // the stream is open
				b.Fatalf("stream %d: %q %v", i, line, err)
			}
			conns[i] = c
		}
		time.Sleep(100 * time.Millisecond)
		after := inUse()
		b.ReportMetric(float64(after-before)/benchChats, "bytes/stream")
		close(hold)
		for _, c := range conns {
			_, _ = io.Copy(io.Discard, readUntilEnd{c})
			c.Close()
		}
		hs.CloseClientConnections()
		hs.Close()
		srv.Close()
		s.Close()
		model.Close()
	}
}

// readUntilEnd reads a stream until its turn_end event.
type readUntilEnd struct{ c net.Conn }

func (r readUntilEnd) Read(p []byte) (int, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := r.c.Read(p)
	if strings.Contains(string(p[:n]), "event: turn_end") {
		return n, io.EOF
	}
	return n, err
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// inUse is the heap and the stacks in use, after a collection.
func inUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}
