package serve

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
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

// BenchmarkServeTurns: N chats of one world each send a message and read
// its turn to its end, all at once, b.N times over (a turn: one model
// call streaming ten words, then its message, its model call and its
// end). Side by side, in one run:
//
//   - inprocess: the same turns through agent.Chat.Send in this process,
//     each timed from Send to its TurnEnd;
//   - http: through the server (SSE over loopback HTTP/1.1), its clients
//     in another process (this test binary, run as benchClient), each
//     turn timed by its client from sending the POST to reading turn_end;
//   - http-goroutine: the same, the server running each turn's stream in
//     a goroutine of its own that hands the events to the request's
//     handler (as it did before the handler pulled them, and as it does
//     on PostgreSQL).
//
// What the server adds is measured where it is added, beside what the
// client sees (see docs/BENCHMARKS.md "serve"):
//
//   - cpu-ms/turn: the CPU time of this process (the server, the world,
//     the fake model; not the clients) a turn, and cpu-ratio: over
//     in-process's;
//   - server-ms/turn: the time a turn's request spends in the server
//     outside the agent: from its handler's start to turn_end flushed to
//     the socket, less the time spent inside the turn's stream (pulling
//     its events; with http-goroutine, from its start to its TurnEnd);
//   - server-ms/event: from the turn's stream yielding an event to its
//     stream having written and flushed it to the socket; events/flush:
//     how many events a flush sent, on average (the events of a batch
//     that came together go out in one);
//   - client-added-ms/turn and client-added-ms/event: what the client
//     sees added (its turn's time less the agent's; an event's arrival
//     less its yield), the two processes' scheduling on a shared machine
//     included;
//   - p50/p99-ms/turn and p99-ratio: the turn's time as the client (or
//     the in-process caller) sees it.
func BenchmarkServeTurns(b *testing.B) {
	for _, chats := range []int{1, 20, benchChats} {
		b.Run(fmt.Sprintf("chats=%d", chats), func(b *testing.B) {
			b.Run("inprocess", func(b *testing.B) { benchInProcess(b, chats) })
			b.Run("http", func(b *testing.B) { benchHTTP(b, chats, false) })
			b.Run("http-goroutine", func(b *testing.B) { benchHTTP(b, chats, true) })
		})
	}
}

// inProcess is the last in-process run's figures at each chat count, for
// the HTTP runs' ratios.
var inProcess sync.Map // chats → inProcessFigures

type inProcessFigures struct{ cpu, p99 float64 }

func benchInProcess(b *testing.B, chats int) {
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
		for i := range chats {
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
	cpu := ms(cpuTime()-cpu0) / float64(b.N*chats)
	p99 := ms(pct(turns, .99))
	inProcess.Store(chats, inProcessFigures{cpu, p99})
	b.ReportMetric(cpu, "cpu-ms/turn")
	b.ReportMetric(ms(pct(turns, .5)), "p50-ms/turn")
	b.ReportMetric(p99, "p99-ms/turn")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N*chats), "ms/turn")
}

func benchHTTP(b *testing.B, chats int, noPull bool) {
	st, opts, done := benchWorld(b)
	defer done()
	srv, err := New(b.Context(), Options{Manifest: manifest, Agent: opts, Storage: st, Rate: -1})
	if err != nil {
		b.Fatal(err)
	}
	srv.testNoPull = noPull
	hs := httptest.NewServer(srv.Handler())
	defer func() { hs.CloseClientConnections(); hs.Close(); srv.Close() }()
	var mu sync.Mutex
	started := map[turnKey]time.Time{}
	ended := map[turnKey]time.Time{}
	var serverEvents []time.Duration
	srv.testStarted = func(key turnKey, start time.Time) {
		mu.Lock()
		started[key] = start
		mu.Unlock()
	}
	lastFlush := map[turnKey]time.Time{}
	var events, flushes int
	srv.testWritten = func(key turnKey, at, flushed time.Time, end bool) {
		mu.Lock()
		events++
		if !lastFlush[key].Equal(flushed) {
			lastFlush[key] = flushed
			flushes++
		}
		serverEvents = append(serverEvents, flushed.Sub(at))
		if end {
			ended[key] = flushed
		}
		mu.Unlock()
	}
	client := startBenchClient(b, hs.URL, chats)
	defer client.close(b)
	var turns, serverTurns, clientAdded, clientEvents []time.Duration
	var clientCPU time.Duration
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		round := client.round(b)
		b.StopTimer()
		clientCPU += time.Duration(round.CPUNS)
		// The server's hooks run once its flush has returned, which may
		// be after the client read turn_end: wait for them.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			mu.Lock()
			n := len(ended)
			mu.Unlock()
			if n == len(started) || time.Now().After(deadline) {
				break
			}
		}
		mu.Lock()
		for _, t := range round.Turns {
			key := turnKey{"main", t.Chat, t.Turn}
			l := srv.turnLogOf(key)
			if l == nil {
				mu.Unlock()
				b.Fatalf("chat %s: no log of turn %d", t.Chat, t.Turn)
			}
			l.mu.Lock()
			agentTime := l.inAgent
			if noPull {
				agentTime = l.events[len(l.events)-1].at.Sub(l.began)
			}
			for _, e := range l.events {
				if ns, ok := t.Arrived[e.pos.String()]; ok {
					clientEvents = append(clientEvents, time.Duration(ns-e.at.UnixNano()))
				}
			}
			l.mu.Unlock()
			start, end := started[key], ended[key]
			if start.IsZero() || end.IsZero() {
				mu.Unlock()
				b.Fatalf("chat %s turn %d: the server did not see it start and end", t.Chat, t.Turn)
			}
			serverTurns = append(serverTurns, end.Sub(start)-agentTime)
			turn := time.Duration(t.End - t.Start)
			turns = append(turns, turn)
			clientAdded = append(clientAdded, turn-agentTime)
		}
		mu.Unlock()
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(b.N * chats)
	cpu := ms(cpuTime()-cpu0) / n
	b.ReportMetric(cpu, "cpu-ms/turn")
	b.ReportMetric(ms(clientCPU)/n, "client-cpu-ms/turn")
	b.ReportMetric(ms(pct(turns, .5)), "p50-ms/turn")
	p99 := ms(pct(turns, .99))
	b.ReportMetric(p99, "p99-ms/turn")
	if ip, ok := inProcess.Load(chats); ok {
		ip := ip.(inProcessFigures)
		b.ReportMetric(cpu/ip.cpu, "cpu-ratio")
		b.ReportMetric(p99/ip.p99, "p99-ratio")
	}
	b.ReportMetric(ms(pct(serverTurns, .5)), "p50-server-ms/turn")
	b.ReportMetric(ms(pct(serverTurns, .99)), "p99-server-ms/turn")
	if flushes > 0 {
		b.ReportMetric(float64(events)/float64(flushes), "events/flush")
	}
	b.ReportMetric(ms(pct(serverEvents, .5)), "p50-server-ms/event")
	b.ReportMetric(ms(pct(serverEvents, .99)), "p99-server-ms/event")
	b.ReportMetric(ms(pct(clientAdded, .5)), "p50-client-added-ms/turn")
	b.ReportMetric(ms(pct(clientAdded, .99)), "p99-client-added-ms/turn")
	b.ReportMetric(ms(pct(clientEvents, .5)), "p50-client-added-ms/event")
	b.ReportMetric(ms(pct(clientEvents, .99)), "p99-client-added-ms/event")
}

// benchClientEnv, set to the server's URL in the environment of this
// test binary, makes it the benchmark's client process: TestMain runs
// benchClient instead of the tests.
const benchClientEnv = "DEMIURGE_SERVE_BENCH_CLIENT"

// benchRound is what the client process reports of a round: each turn
// it streamed, and the CPU time it used.
type benchRound struct {
	CPUNS int64       `json:"cpu_ns"`
	Turns []benchTurn `json:"turns"`
	Err   string      `json:"error,omitempty"`
}

// benchTurn is one turn as the client saw it: when it sent the message
// and read turn_end, and when each event arrived (by its id), in Unix
// nanoseconds (the server's clock: both processes read the same one).
type benchTurn struct {
	Chat    string           `json:"chat"`
	Turn    uint64           `json:"turn"`
	Start   int64            `json:"start"`
	End     int64            `json:"end"`
	Arrived map[string]int64 `json:"arrived"`
}

// benchClient is the client process: for each line "go N" on in, N chats
// (c0 to cN-1) each send a message to the server at its URL and read
// their turns' streams to turn_end, all at once; then it writes the
// round (benchRound) as a line of JSON on out. It returns at the end of
// in.
func benchClient(url string, in io.Reader, out io.Writer) int {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000, MaxConnsPerHost: 0}}
	sc := bufio.NewScanner(in)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var chats int
		if _, err := fmt.Sscanf(sc.Text(), "go %d", &chats); err != nil {
			fmt.Fprintf(os.Stderr, "bench client: %q: %v\n", sc.Text(), err)
			return 2
		}
		cpu0 := cpuTime()
		round := benchRound{Turns: make([]benchTurn, chats)}
		errs := make([]error, chats)
		var wg sync.WaitGroup
		for i := range chats {
			wg.Go(func() { round.Turns[i], errs[i] = benchClientTurn(hc, url, "c"+strconv.Itoa(i)) })
		}
		wg.Wait()
		round.CPUNS = int64(cpuTime() - cpu0)
		if err := errors.Join(errs...); err != nil {
			round.Err = err.Error()
		}
		if err := enc.Encode(round); err != nil {
			return 2
		}
	}
	return 0
}

// benchClientTurn sends chat a message and reads its turn's stream.
func benchClientTurn(hc *http.Client, url, chat string) (benchTurn, error) {
	t := benchTurn{Chat: chat, Arrived: map[string]int64{}}
	start := time.Now()
	req, _ := http.NewRequest("POST", url+"/v1/worlds/main/chats/"+chat+"/messages", strings.NewReader(`{"text": "hello"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return t, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return t, fmt.Errorf("chat %s: %s", chat, resp.Status)
	}
	t.Turn, _ = strconv.ParseUint(resp.Header.Get("Demiurge-Turn"), 10, 64)
	_ = readSSE(resp.Body, func(ev sseEvent) bool {
		now := time.Now().UnixNano()
		t.Arrived[ev.ID] = now
		if ev.Event == "turn_end" {
			t.End = now
			return false
		}
		return true
	})
	if t.End == 0 {
		return t, fmt.Errorf("chat %s: no turn_end", chat)
	}
	t.Start = start.UnixNano()
	return t, nil
}

// benchClientProc is the client process, as the benchmark drives it.
type benchClientProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	chats int
}

// startBenchClient starts this test binary as the client process of the
// server at url.
func startBenchClient(b *testing.B, url string, chats int) *benchClientProc {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchClientEnv+"="+url)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	return &benchClientProc{cmd: cmd, in: in, out: sc, chats: chats}
}

// round has the client run a round and returns what it saw.
func (c *benchClientProc) round(b *testing.B) benchRound {
	b.Helper()
	if _, err := fmt.Fprintf(c.in, "go %d\n", c.chats); err != nil {
		b.Fatal(err)
	}
	if !c.out.Scan() {
		b.Fatalf("the client process ended: %v", c.out.Err())
	}
	var r benchRound
	if err := json.Unmarshal(c.out.Bytes(), &r); err != nil {
		b.Fatal(err)
	}
	if r.Err != "" {
		b.Fatal(r.Err)
	}
	return r
}

// close ends the client process.
func (c *benchClientProc) close(b *testing.B) {
	c.in.Close()
	if err := c.cmd.Wait(); err != nil {
		b.Errorf("the client process: %v", err)
	}
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

// BenchmarkServeManyWorlds: clients name many worlds, one after another
// (each made and opened by POST /v1/worlds, then unused): the memory the
// server holds after them (heap and stacks in use, over that before),
// with the defaults' eviction bound (MaxWorlds 16 here) and without one
// (every world stays open), side by side.
func BenchmarkServeManyWorlds(b *testing.B) {
	const worlds = 200
	for _, c := range []struct {
		name string
		max  int
	}{{"max=16", 16}, {"unbounded", 1 << 30}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				st, opts, done := benchWorld(b)
				srv, err := New(b.Context(), Options{Manifest: manifest, Agent: opts, Storage: st, Rate: -1,
					MaxWorlds: c.max, WorldIdle: time.Hour, Keep: 40 * time.Millisecond})
				if err != nil {
					b.Fatal(err)
				}
				hs := httptest.NewServer(srv.Handler())
				before := inUse()
				b.StartTimer()
				for i := range worlds {
					resp, err := http.Post(hs.URL+"/v1/worlds", "application/json", strings.NewReader(fmt.Sprintf(`{"world": "w%d"}`, i)))
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusCreated {
						b.Fatalf("world w%d: %s", i, resp.Status)
					}
				}
				b.StopTimer()
				for deadline := time.Now().Add(30 * time.Second); len(srv.openWorlds()) > c.max && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
				open := len(srv.openWorlds())
				after := inUse()
				b.ReportMetric(float64(open), "open-worlds")
				b.ReportMetric(float64(int64(after)-int64(before))/1024, "KB-held")
				b.ReportMetric(float64(int64(after)-int64(before))/1024/worlds, "KB-held/world-named")
				hs.CloseClientConnections()
				hs.Close()
				srv.Close()
				done()
				b.StartTimer()
			}
		})
	}
}
