package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/agent/session/otlp"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/store"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/world"
)

// followTrace prints world name of the store as trace does, then what is
// committed to it as it lands, until ctx is done (Ctrl-C), which ends it
// without an error. It reads through the process that writes the store,
// or the file when none does, and says on stderr when that changes (a
// writer killed, another started).
func followTrace(ctx context.Context, a *app, name string, asJSON, records bool, opts traceOptions) error {
	a.usedStore = true
	p := &followPrinter{w: a.out, asJSON: asJSON, records: records, world: name}
	if opts.OTLP != "" {
		p.otlp = &otlp.Options{World: name, Content: opts.Content}
		p.written = map[turnKey]bool{}
		if opts.OTLP != "-" {
			// The file is made when the first turn is written: a mistake
			// (no such store, a world without chats) leaves a file of that
			// name as it was.
			var f *os.File
			p.w = writerFunc(func(b []byte) (int, error) {
				if f == nil {
					var err error
					if f, err = os.Create(opts.OTLP); err != nil {
						return 0, err
					}
					fmt.Fprintf(a.err, "trace: writing a line of spans to %s as each turn ends (Ctrl-C to stop)\n", opts.OTLP)
				}
				return f.Write(b)
			})
			defer func() {
				if f != nil {
					if cerr := f.Close(); cerr != nil {
						fmt.Fprintf(a.err, "trace: %v\n", cerr)
					}
				}
			}()
		}
	}
	l, err := store.OpenLive(ctx, a.storeDir, &store.LiveOptions{OnSource: func(msg string) {
		fmt.Fprintf(a.err, "trace: %s\n", msg)
	}})
	if err != nil {
		if errors.Is(err, store.ErrNotExist) {
			return notWritten(err)
		}
		return err
	}
	defer l.Close()
	g := &batchGetter{l: l}
	p.sess = session.NewReader(g)
	p.tracer = replay.NewTracer(a.out, replay.TraceOptions{JSON: asJSON, CAS: g})
	head, err := l.Head(ctx, name)
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return err
	}
	if head.Seq == 0 {
		fmt.Fprintf(a.err, "trace: world %s has no records yet in store %s; waiting for them (Ctrl-C to stop)\n", name, l.Dir())
	}
	var last journal.Record // the last record read
	for {
		if _, err := l.Wait(ctx, name, last.Seq); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		// Records are printed a batch at a time, with the blobs their
		// State records name got in one request.
		var batch []journal.Record
		printBatch := func() error {
			g.prefetch(ctx, batch)
			for _, r := range batch {
				if err := p.record(r); err != nil {
					return err
				}
			}
			batch = batch[:0]
			return nil
		}
		err := l.Read(ctx, name, last.Seq+1, func(r journal.Record) error {
			if last.Seq != 0 && r.Prev != last.Hash {
				return fmt.Errorf("trace: %w: world %s: record %d does not link to record %d as it was read before (%s): the journal changed under the trace",
					journal.ErrCorrupt, name, r.Seq, last.Seq, last.Hash.Short())
			}
			last = r
			if batch = append(batch, r); len(batch) == followBatch {
				return printBatch()
			}
			return nil
		})
		if err == nil {
			err = printBatch()
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if err := p.flush(); err != nil {
			return err
		}
	}
}

// followBatch is how many records trace --follow reads before printing
// them.
const followBatch = 512

// batchGetter gets the blobs that the State records of a batch name in
// one request (through the writer, one round trip instead of one a
// record), and the others one at a time.
type batchGetter struct {
	l   *store.Live
	got map[cas.Ref][]byte
}

// prefetch gets the state blobs of recs. What it cannot get is left to
// Get, which says why.
func (g *batchGetter) prefetch(ctx context.Context, recs []journal.Record) {
	clear(g.got)
	var refs []cas.Ref
	for _, r := range recs {
		if r.Kind != world.KindState {
			continue
		}
		if sr, err := world.DecodeState(r); err == nil && sr.State.Valid() {
			refs = append(refs, sr.State)
		}
	}
	if len(refs) == 0 {
		return
	}
	blobs, err := g.l.GetMany(ctx, refs)
	if err != nil {
		return
	}
	if g.got == nil {
		g.got = make(map[cas.Ref][]byte, len(refs))
	}
	for i, b := range blobs {
		if b != nil {
			g.got[refs[i]] = b
		}
	}
}

// Get implements cas.Getter. A prefetched blob is handed out once (the
// caller may keep and change it).
func (g *batchGetter) Get(ctx context.Context, ref cas.Ref) ([]byte, error) {
	if b, ok := g.got[ref]; ok {
		delete(g.got, ref)
		return b, nil
	}
	return g.l.Get(ctx, ref)
}

// followPrinter prints a world's records as they come: as turns for an
// agent world, one record a line otherwise (or with --records).
type followPrinter struct {
	w       io.Writer
	asJSON  bool
	records bool
	world   string
	// otlp, if set, writes each turn as a line of OTLP/JSON spans once it
	// has ended (trace --follow --otlp), in the order they end: a turn
	// still open (one waiting for approval, say) holds back no other.
	// written holds the turns written.
	otlp    *otlp.Options
	written map[turnKey]bool

	mode    int              // followUndecided, followTurns or followRecords
	pending []journal.Record // records read while undecided
	sess    *session.Reader
	tracer  *replay.Tracer

	turnsDone int // turns printed whole (a blank line goes between turns)
	printed   int // lines printed of the turn after those
	forksDone int // fork points printed
}

const (
	followUndecided = iota
	followTurns
	followRecords
)

// record reads one record. Until a record says what the world is (its
// manifest has the chat reducer, a chat event, or another input), the
// records are held.
func (p *followPrinter) record(r journal.Record) error {
	switch p.mode {
	case followRecords:
		return p.tracer.Record(r)
	case followTurns:
		return p.sess.Record(r)
	}
	if p.records {
		p.mode = followRecords
		return p.tracer.Record(r)
	}
	if p.otlp != nil && world.IsInput(r.Kind) && r.Kind != world.KindManifest && !p.sess.IsChat() && !p.sess.ChatManifest() {
		if err := p.sess.Record(r); err != nil {
			return err
		}
		if !p.sess.IsChat() {
			return fmt.Errorf("trace: world %s has no chats: it is not an agent world, and --otlp writes the turns of chats", p.world)
		}
		p.mode = followTurns
		return nil
	}
	if err := p.sess.Record(r); err != nil {
		return err
	}
	p.pending = append(p.pending, r)
	switch {
	case p.sess.IsChat() || p.sess.ChatManifest():
		p.mode, p.pending = followTurns, nil
	case world.IsInput(r.Kind) && r.Kind != world.KindManifest:
		p.mode = followRecords
		for _, r := range p.pending {
			if err := p.tracer.Record(r); err != nil {
				return err
			}
		}
		p.pending = nil
	}
	return nil
}

// flush prints what the records read so far add to the turns: the lines
// of a running turn that will not change, and the rest once it has ended
// (with --json, a turn once it has ended). Records are printed as they
// are read.
func (p *followPrinter) flush() error {
	if p.mode != followTurns {
		return nil
	}
	turns := p.sess.Turns()
	if p.otlp != nil {
		for _, t := range turns {
			k := turnKey{t.Chat, t.RequestID}
			if p.written[k] || !turnEnded(t) {
				continue
			}
			if err := otlp.Write(p.w, []*session.Turn{t}, *p.otlp); err != nil {
				return fmt.Errorf("trace: %w", err)
			}
			p.written[k] = true
		}
		return nil
	}
	for {
		if err := p.flushForks(); err != nil {
			return err
		}
		if p.turnsDone == len(turns) {
			return nil
		}
		t := turns[p.turnsDone]
		ended := turnEnded(t)
		if p.asJSON {
			if !ended {
				return nil
			}
			b, err := json.Marshal(t)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(p.w, "%s\n", b); err != nil {
				return err
			}
			p.turnsDone++
			continue
		}
		lines, stable := turnLines(t)
		if stable > p.printed {
			var out []byte
			if p.printed == 0 && p.turnsDone > 0 {
				out = append(out, '\n')
			}
			for _, l := range lines[p.printed:stable] {
				out = append(append(out, l...), '\n')
			}
			if _, err := p.w.Write(out); err != nil {
				return err
			}
			p.printed = stable
		}
		if !ended {
			return nil
		}
		p.turnsDone, p.printed = p.turnsDone+1, 0
	}
}

// flushForks prints the points where the world was forked from another
// that come before the next turn to print, as writeSession prints them
// (not with --json, whose lines are turns).
func (p *followPrinter) flushForks() error {
	forks := p.sess.Forks()
	for ; p.forksDone < len(forks) && forks[p.forksDone].Turns <= p.turnsDone && p.printed == 0; p.forksDone++ {
		if p.asJSON || p.otlp != nil {
			continue
		}
		sep := ""
		if p.turnsDone > 0 {
			sep = "\n"
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", sep, forkLine(forks[p.forksDone])); err != nil {
			return err
		}
	}
	return nil
}

// turnKey names a turn of a world: its chat and its request id.
type turnKey struct {
	chat    string
	request uint64
}

// writerFunc is an io.Writer of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
