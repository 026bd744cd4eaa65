package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
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
	"sync/atomic"
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
//     on PostgreSQL);
//   - responses and chatcompletions: the same turns through the
//     OpenAI-compatible streams (POST /v1/responses and POST
//     /v1/chat/completions with stream true), each chat continuing its
//     conversation as an OpenAI client does (previous_response_id; the
//     messages so far), timed to response.completed and to data: [DONE].
//
// What the server adds is measured where it is added, beside what the
// client sees (see docs/BENCHMARKS.md "serve"):
//
//   - cpu-ms/turn: the CPU time of this process (the server, the world,
//     the fake model; not the clients) a turn, and cpu-ratio: over
//     in-process's; client-cpu-ms/turn: the client process's;
//   - server-ms/turn: the time a turn's request spends in the server
//     outside the agent: from its handler's start to the turn's end
//     flushed to the socket, less the time spent inside the turn's stream
//     (pulling its events; with http-goroutine, from its start to its
//     TurnEnd);
//   - server-ms/event: from the turn's stream yielding an event to its
//     stream having written and flushed what it makes of it to the
//     socket; events/flush: how many events a flush sent, on average (the
//     events of a batch that came together go out in one);
//   - client-added-ms/turn and client-added-ms/event: what the client
//     sees added (its turn's time less the agent's; an event's arrival
//     less its yield, native API only), the two processes' scheduling on
//     a shared machine included;
//   - p50/p99-ms/turn, p99-ratio and p99-added-ms: the turn's time as the
//     client (or the in-process caller) sees it, and the p99's ratio to
//     in-process's and difference from it.
func BenchmarkServeTurns(b *testing.B) {
	for _, chats := range []int{1, 20, benchChats} {
		b.Run(fmt.Sprintf("chats=%d", chats), func(b *testing.B) {
			benchWays(b, chats, pacing{})
		})
	}
}

// BenchmarkServeTurnsPaced: what 200 users chatting look like, where
// BenchmarkServeTurns has them all send at the same instant. 200 chats
// open at once; each sends its next message a think time after its last
// turn ended (and its first after one), -serve.turns messages a round;
// the think times are drawn from an exponential distribution of mean
// -serve.think (capped at five times it), seeded per chat by -serve.seed:
// every way runs the same schedule. The offered load (200 chats over the
// think time and a turn's time) is meant to leave the machine far from
// saturated: cpu-util-% is the CPU used by the server's and the client's
// processes over the round's wall time and all cores. The same figures
// as BenchmarkServeTurns, the same ways (but http-goroutine).
func BenchmarkServeTurnsPaced(b *testing.B) {
	b.Run(fmt.Sprintf("chats=%d", benchChats), func(b *testing.B) {
		benchWays(b, benchChats, pacing{Turns: *pacedTurns, Think: *pacedThink, Seed: *pacedSeed})
	})
}

var (
	pacedThink = flag.Duration("serve.think", 3*time.Second, "BenchmarkServeTurnsPaced: a chat's mean think time before each message")
	pacedTurns = flag.Int("serve.turns", 5, "BenchmarkServeTurnsPaced: messages each chat sends a round")
	pacedSeed  = flag.Uint64("serve.seed", 1, "BenchmarkServeTurnsPaced: the seed of the think times")
)

// benchWays runs the ways side by side at chats chats paced by p.
func benchWays(b *testing.B, chats int, p pacing) {
	key := fmt.Sprintf("%d/%v", chats, p.paced())
	b.Run("inprocess", func(b *testing.B) { benchInProcess(b, chats, p, key) })
	b.Run("http", func(b *testing.B) { benchHTTP(b, chats, apiNative, false, p, key) })
	if !p.paced() {
		b.Run("http-goroutine", func(b *testing.B) { benchHTTP(b, chats, apiNative, true, p, key) })
	}
	b.Run("responses", func(b *testing.B) { benchHTTP(b, chats, apiResponses, false, p, key) })
	b.Run("chatcompletions", func(b *testing.B) { benchHTTP(b, chats, apiChat, false, p, key) })
}

// The APIs the benchmark's clients stream a turn through.
const (
	apiNative    = "native"          // POST /v1/worlds/main/chats/{chat}/messages
	apiResponses = "responses"       // POST /v1/responses
	apiChat      = "chatcompletions" // POST /v1/chat/completions
)

// pacing is how a benchmark's chats send their messages: all at once,
// one each a round (Think zero: a burst), or Turns each a round, each
// after a think time (paced).
type pacing struct {
	Turns int           `json:"turns"`
	Think time.Duration `json:"think"`
	Seed  uint64        `json:"seed"`
}

func (p pacing) paced() bool { return p.Think > 0 }

// thinks is chat i's think time before each of its messages a round: an
// exponential draw of mean Think, capped at five times it, from a source
// seeded by Seed and i (the same in every way and every round).
func (p pacing) thinks(i int) []time.Duration {
	if !p.paced() {
		return []time.Duration{0}
	}
	r := rand.New(rand.NewPCG(p.Seed, uint64(i)))
	out := make([]time.Duration, p.Turns)
	for k := range out {
		out[k] = time.Duration(min(r.ExpFloat64(), 5) * float64(p.Think))
	}
	return out
}

// inProcess is the last in-process run's figures for each benchWays key,
// for the HTTP runs' ratios.
var inProcess sync.Map // key → inProcessFigures

type inProcessFigures struct{ cpu, p99 float64 }

func benchInProcess(b *testing.B, chats int, p pacing, key string) {
	st, opts, done := benchWorld(b)
	defer done()
	w, err := agent.Open(b.Context(), manifest, append(opts, agent.WithStorage(st))...)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	var mu sync.Mutex
	var turns []time.Duration
	var wall time.Duration
	warm := !p.paced() // a burst's first round is not counted: the world's caches fill in it, as in http's
	cpu0 := cpuTime()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		if warm {
			b.StopTimer()
		}
		t0 := time.Now()
		var wg sync.WaitGroup
		for i := range chats {
			wg.Go(func() {
				c := w.Chat("c" + strconv.Itoa(i))
				for _, think := range p.thinks(i) {
					time.Sleep(think)
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
				}
			})
		}
		wg.Wait()
		if warm {
			warm, n, turns = false, n-1, turns[:0]
			cpu0 = cpuTime()
			b.StartTimer()
			continue
		}
		wall += time.Since(t0)
	}
	b.StopTimer()
	used := cpuTime() - cpu0
	cpu := ms(used) / float64(len(turns))
	p99 := ms(pct(turns, .99))
	inProcess.Store(key, inProcessFigures{cpu, p99})
	b.ReportMetric(cpu, "cpu-ms/turn")
	b.ReportMetric(100*float64(used)/float64(wall)/float64(runtime.NumCPU()), "cpu-util-%")
	b.ReportMetric(ms(pct(turns, .5)), "p50-ms/turn")
	b.ReportMetric(p99, "p99-ms/turn")
	b.ReportMetric(float64(len(turns))/wall.Seconds(), "turns/s")
}

func benchHTTP(b *testing.B, chats int, api string, noPull bool, p pacing, ipKey string) {
	st, opts, done := benchWorld(b)
	defer done()
	// The turns' logs stay for the figures read after a round (a paced
	// one lasts longer than DefaultKeep).
	srv, err := New(b.Context(), Options{Manifest: manifest, Agent: opts, Storage: st, Rate: -1, Keep: time.Hour})
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
	client := startBenchClient(b, hs.URL, benchOrder{Chats: chats, API: api, Model: srv.Name(), Pacing: p})
	defer client.close(b)
	if !p.paced() {
		// A burst's first round is not counted: the world's caches fill
		// in it, as in-process.
		warm := client.round(b)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			mu.Lock()
			n := len(ended)
			mu.Unlock()
			if n >= len(warm.Turns) {
				break
			}
		}
		mu.Lock()
		serverEvents, events, flushes = nil, 0, 0
		mu.Unlock()
	}
	var turns, serverTurns, clientAdded, clientEvents []time.Duration
	var clientCPU, wall time.Duration
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		round := client.round(b)
		wall += time.Since(t0)
		b.StopTimer()
		clientCPU += time.Duration(round.CPUNS)
		// The server's hooks run once its flush has returned, which may
		// be after the client read the turn's end: wait for them.
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
	n := float64(len(turns))
	used := cpuTime() - cpu0
	cpu := ms(used) / n
	b.ReportMetric(cpu, "cpu-ms/turn")
	b.ReportMetric(ms(clientCPU)/n, "client-cpu-ms/turn")
	b.ReportMetric(100*float64(used+clientCPU)/float64(wall)/float64(runtime.NumCPU()), "cpu-util-%")
	b.ReportMetric(n/wall.Seconds(), "turns/s")
	b.ReportMetric(ms(pct(turns, .5)), "p50-ms/turn")
	p99 := ms(pct(turns, .99))
	b.ReportMetric(p99, "p99-ms/turn")
	if ip, ok := inProcess.Load(ipKey); ok {
		ip := ip.(inProcessFigures)
		b.ReportMetric(cpu/ip.cpu, "cpu-ratio")
		b.ReportMetric(p99/ip.p99, "p99-ratio")
		b.ReportMetric(p99-ip.p99, "p99-added-ms")
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
	if len(clientEvents) > 0 {
		b.ReportMetric(ms(pct(clientEvents, .5)), "p50-client-added-ms/event")
		b.ReportMetric(ms(pct(clientEvents, .99)), "p99-client-added-ms/event")
	}
}

// benchClientEnv, set to the server's URL in the environment of this
// test binary, makes it the benchmark's client process: TestMain runs
// benchClient instead of the tests.
const benchClientEnv = "DEMIURGE_SERVE_BENCH_CLIENT"

// benchOrder is what the client process is asked to run, each round:
// Chats chats (c0 to cN-1 on the native API; conversations the server
// names on OpenAI's) stream their turns through API, paced by Pacing;
// Model is the model OpenAI requests name.
type benchOrder struct {
	Chats  int    `json:"chats"`
	API    string `json:"api"`
	Model  string `json:"model"`
	Pacing pacing `json:"pacing"`
}

// benchRound is what the client process reports of a round: each turn
// it streamed, and the CPU time it used.
type benchRound struct {
	CPUNS int64       `json:"cpu_ns"`
	Turns []benchTurn `json:"turns"`
	Err   string      `json:"error,omitempty"`
}

// benchTurn is one turn as the client saw it: when it sent the message
// and read the turn's end, and when each event arrived (by its id; the
// native API's only), in Unix nanoseconds (the server's clock: both
// processes read the same one).
type benchTurn struct {
	Chat    string           `json:"chat"`
	Turn    uint64           `json:"turn"`
	Start   int64            `json:"start"`
	End     int64            `json:"end"`
	Arrived map[string]int64 `json:"arrived,omitempty"`
}

// benchConversation is what an OpenAI client keeps of its conversation
// from one turn to the next: the last response's id (Responses), the
// messages so far (Chat Completions).
type benchConversation struct {
	previous string
	messages []map[string]string
}

// benchClient is the client process. Its first line on in is the
// benchOrder (JSON); then, for each line "go", it runs a round: every
// chat sends its messages (one, all at once, or paced) and reads each
// turn's stream to its end; then it writes the round (benchRound) as a
// line of JSON on out. It returns at the end of in.
func benchClient(url string, in io.Reader, out io.Writer) int {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000, MaxConnsPerHost: 0}}
	sc := bufio.NewScanner(in)
	enc := json.NewEncoder(out)
	var order benchOrder
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &order) != nil {
		fmt.Fprintf(os.Stderr, "bench client: want the order first, got %q\n", sc.Text())
		return 2
	}
	convs := make([]benchConversation, order.Chats)
	for sc.Scan() {
		cpu0 := cpuTime()
		var mu sync.Mutex
		var round benchRound
		errs := make([]error, order.Chats)
		var wg sync.WaitGroup
		for i := range order.Chats {
			wg.Go(func() {
				for _, think := range order.Pacing.thinks(i) {
					time.Sleep(think)
					var t benchTurn
					var err error
					switch order.API {
					case apiResponses:
						t, err = benchResponsesTurn(hc, url, order.Model, &convs[i])
					case apiChat:
						t, err = benchChatTurn(hc, url, order.Model, i, &convs[i])
					default:
						t, err = benchClientTurn(hc, url, "c"+strconv.Itoa(i))
					}
					if err != nil {
						errs[i] = err
						return
					}
					mu.Lock()
					round.Turns = append(round.Turns, t)
					mu.Unlock()
				}
			})
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

// benchPost posts body (JSON) to url and returns the response, an event
// stream.
func benchPost(hc *http.Client, url string, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("POST %s: %s: %s", url, resp.Status, msg)
	}
	return resp, nil
}

// benchResponsesTurn sends the conversation's next message through POST
// /v1/responses (stream), continuing from its previous response, and
// reads the stream to response.completed.
func benchResponsesTurn(hc *http.Client, url, model string, conv *benchConversation) (benchTurn, error) {
	var t benchTurn
	body := map[string]any{"model": model, "input": "hello", "stream": true}
	if conv.previous != "" {
		body["previous_response_id"] = conv.previous
	}
	start := time.Now()
	resp, err := benchPost(hc, url+"/v1/responses", body)
	if err != nil {
		return t, err
	}
	defer resp.Body.Close()
	var id, last string
	_ = readSSE(resp.Body, func(ev sseEvent) bool {
		last = ev.Event
		switch ev.Event {
		case "response.created":
			var d struct {
				Response struct {
					ID string `json:"id"`
				} `json:"response"`
			}
			_ = json.Unmarshal([]byte(ev.Data), &d)
			id = d.Response.ID
		case "response.completed", "response.failed", "response.incomplete":
			t.End = time.Now().UnixNano()
			return false
		}
		return true
	})
	if last != "response.completed" {
		return t, fmt.Errorf("responses: the stream ended with %q", last)
	}
	ref, err := decodeID("resp_", id)
	if err != nil {
		return t, err
	}
	conv.previous = id
	t.Chat, t.Turn, t.Start = ref.Chat, ref.Turn, start.UnixNano()
	return t, nil
}

// benchChatTurn sends the conversation's messages and the next one
// through POST /v1/chat/completions (stream) and reads the stream to
// data: [DONE], keeping the answer for the next. The server finds a
// conversation's chat by its messages, so the first of each names the
// conversation (i): the fake model answers every message alike.
func benchChatTurn(hc *http.Client, url, model string, i int, conv *benchConversation) (benchTurn, error) {
	var t benchTurn
	text := "hello"
	if len(conv.messages) == 0 {
		text = "hello from conversation " + strconv.Itoa(i)
	}
	msgs := append(conv.messages, map[string]string{"role": "user", "content": text})
	start := time.Now()
	resp, err := benchPost(hc, url+"/v1/chat/completions", map[string]any{"model": model, "messages": msgs, "stream": true})
	if err != nil {
		return t, err
	}
	defer resp.Body.Close()
	var id string
	var answer strings.Builder
	_ = readSSE(resp.Body, func(ev sseEvent) bool {
		if ev.Data == "[DONE]" {
			t.End = time.Now().UnixNano()
			return false
		}
		var c struct {
			ID      string `json:"id"`
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		_ = json.Unmarshal([]byte(ev.Data), &c)
		id = c.ID
		for _, ch := range c.Choices {
			answer.WriteString(ch.Delta.Content)
		}
		return true
	})
	if t.End == 0 {
		return t, errors.New("chat completions: no data: [DONE]")
	}
	ref, err := decodeID("chatcmpl-", id)
	if err != nil {
		return t, err
	}
	conv.messages = append(msgs, map[string]string{"role": "assistant", "content": answer.String()})
	t.Chat, t.Turn, t.Start = ref.Chat, ref.Turn, start.UnixNano()
	return t, nil
}

// benchClientProc is the client process, as the benchmark drives it.
type benchClientProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// startBenchClient starts this test binary as the client process of the
// server at url, to run order.
func startBenchClient(b *testing.B, url string, order benchOrder) *benchClientProc {
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
	if err := json.NewEncoder(in).Encode(order); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	return &benchClientProc{cmd: cmd, in: in, out: sc}
}

// round has the client run a round and returns what it saw.
func (c *benchClientProc) round(b *testing.B) benchRound {
	b.Helper()
	if _, err := fmt.Fprintln(c.in, "go"); err != nil {
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
			_, _ = io.Copy(io.Discard, readUntilEnd{c, "event: turn_end"})
			c.Close()
		}
		hs.CloseClientConnections()
		hs.Close()
		srv.Close()
		s.Close()
		model.Close()
	}
}

// readUntilEnd reads a stream until end (its turn's end: the event, or
// the line, that says so).
type readUntilEnd struct {
	c   net.Conn
	end string
}

func (r readUntilEnd) Read(p []byte) (int, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := r.c.Read(p)
	if strings.Contains(string(p[:n]), r.end) {
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

// BenchmarkServeStreamMemoryAPIs: the memory a turn under way holds with
// its stream open, through each API, beside the same turn in-process:
// 200 turns wait on their model call (held), each begun by a client (a
// bare socket each: nearly all of it is the server's) that sent its
// message and reads nothing more of the stream; the heap and stacks in
// use after, over before, per turn (bytes/turn), and that less the
// in-process turn's (bytes/stream: what serving it adds). In-process,
// a goroutine ranges over each turn's Send.
func BenchmarkServeStreamMemoryAPIs(b *testing.B) {
	for _, way := range []string{"inprocess", apiNative, apiResponses, apiChat} {
		b.Run(way, func(b *testing.B) {
			var per float64
			for range b.N {
				per = heldTurnBytes(b, way)
			}
			b.ReportMetric(per, "bytes/turn")
			if way == "inprocess" {
				heldInProcess = per
			} else if heldInProcess > 0 {
				b.ReportMetric(per-heldInProcess, "bytes/stream")
			}
		})
	}
}

// heldInProcess is the in-process run's bytes a held turn.
var heldInProcess float64

// heldTurnBytes begins benchChats turns through way, holds them on their
// model call, and returns the memory in use they added, per turn. A first
// turn runs to its end before: the world, its caches, the server's and
// the model's connections are there in every way.
func heldTurnBytes(b *testing.B, way string) float64 {
	b.StopTimer()
	defer b.StartTimer()
	hold := make(chan struct{})
	var calls atomic.Int64
	model := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn {
		if calls.Add(1) == 1 { // the first turn's
			return llmtest.Turn{Text: "first"}
		}
		return llmtest.Turn{Text: "late", Hold: hold}
	})
	defer model.Close()
	s, err := store.Open(filepath.Join(b.TempDir(), "store"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	st, _ := world.NewBoltStorage(s.CAS(), s.Journal())
	opts := []agent.Option{envOf("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", model.URL), agent.WithModel(agent.Model{Name: "gpt-test"})}
	var send func(i int) // begins turn i; the first (i = benchChats) to its end
	var wait func()      // waits for the turns' ends, once let go
	if way == "inprocess" {
		w, err := agent.Open(b.Context(), manifest, append(opts, agent.WithStorage(st))...)
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		var wg sync.WaitGroup
		turn := func(i int, begun chan<- struct{}) {
			for _, err := range w.Chat("c"+strconv.Itoa(i)).Send(b.Context(), "hi") {
				if err != nil {
					b.Error(err)
					break
				}
				if begun != nil {
					close(begun)
					begun = nil
				}
			}
		}
		send = func(i int) {
			if i == benchChats {
				turn(i, nil)
				return
			}
			begun := make(chan struct{})
			wg.Go(func() { turn(i, begun) })
			<-begun // the turn has begun, as a client's does when its stream opens
		}
		wait = wg.Wait
	} else {
		srv, err := New(b.Context(), Options{Manifest: manifest, Storage: st, Rate: -1, Agent: opts})
		if err != nil {
			b.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		defer func() { hs.CloseClientConnections(); hs.Close(); srv.Close() }()
		addr := hs.Listener.Addr().String()
		var conns []net.Conn
		end := map[string]string{apiNative: "event: turn_end", apiResponses: "event: response.completed", apiChat: "data: [DONE]"}[way]
		send = func(i int) {
			var path, body string
			switch way {
			case apiNative:
				path, body = "/v1/worlds/main/chats/c"+strconv.Itoa(i)+"/messages", `{"text": "hi"}`
			case apiResponses:
				path, body = "/v1/responses", `{"model": "`+srv.Name()+`", "input": "hi", "stream": true}`
			default:
				path, body = "/v1/chat/completions", `{"model": "`+srv.Name()+`", "messages": [{"role": "user", "content": "hi `+strconv.Itoa(i)+`"}], "stream": true}`
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", path, addr, len(body), body)
			if i == benchChats {
				_, _ = io.Copy(io.Discard, readUntilEnd{c, end})
				c.Close()
				return
			}
			conns = append(conns, c)
			if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || !strings.Contains(line, "200") { // the stream is open
				b.Errorf("%s %d: %q %v", way, i, line, err)
			}
		}
		wait = func() {
			for _, c := range conns {
				_, _ = io.Copy(io.Discard, readUntilEnd{c, end})
				c.Close()
			}
		}
	}
	send(benchChats)
	before := inUse()
	for i := range benchChats {
		send(i)
	}
	// Every turn has begun: some wait on their model call, the others for
	// a connection to the model (the adapter's client bounds them), alike
	// in every way.
	time.Sleep(200 * time.Millisecond)
	after := inUse()
	close(hold)
	wait()
	return float64(int64(after)-int64(before)) / benchChats
}
