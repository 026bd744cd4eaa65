package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/pgstore"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// DefaultFollow is how often a Remote reads the world's journal for new
// records while it waits.
const DefaultFollow = 20 * time.Millisecond

// RemoteOptions configure Attach.
type RemoteOptions struct {
	// Store is the PostgreSQL store the world lives in. Required.
	Store *pgstore.Store
	// Name is the world's name. Required.
	Name string
	// Catalog is the manifest the world is to run; its nodes are stored
	// in the CAS so that the world's worker can load it. Required.
	Catalog *schema.Catalog
	// Reducers replay the world's journal to learn its state when
	// attaching. Required.
	Reducers *reducer.Registry
	// OnCommit, if set, is called with the world's new records as they
	// are read, in journal order, on the goroutine that reads them (a
	// call of SendJSON or WaitIdle).
	OnCommit func(recs []journal.Record)
	// Follow is how often the journal is read while waiting; 0 means
	// DefaultFollow.
	Follow time.Duration
	// Outage is how long the database may be unreachable (restarting,
	// say) before reads fail: until then a failed read is retried at the
	// next. 0 means DefaultOutage.
	Outage time.Duration
}

// DefaultOutage is how long a Remote rides out a database it cannot
// reach.
const DefaultOutage = 30 * time.Second

// Remote is a world run by a worker (wherever it runs), as a client sees
// it: messages go to its inbox, and what they caused is read from its
// journal. Its methods mirror World's, so a command can chat with a world
// in this process or on a worker alike. It is safe for concurrent use.
type Remote struct {
	opts RemoteOptions

	// reading is held by the one Sync that reads the journal: two at once
	// would hand the same records to OnCommit twice, and set the head
	// back.
	reading sync.Mutex

	mu      sync.Mutex
	base    *world.Machine // the world replayed when attaching
	head    journal.Head
	pending map[cas.Ref]bool      // intents journaled without a receipt
	states  map[string]stateEntry // cells changed since base, by reducer and key
	posted  map[int64]bool        // messages posted and not yet journaled
	taken   uint64                // the highest seq a posted message became
	down    time.Time             // when reads began to fail; zero if they do not
}

type stateEntry struct {
	ref cas.Ref
	val schema.Value
}

// Attach stores the catalog's nodes, registers the world with it (a worker
// will take it), and replays the world's journal to learn where it
// stands.
func Attach(ctx context.Context, opts RemoteOptions) (*Remote, error) {
	if opts.Store == nil || opts.Catalog == nil || opts.Reducers == nil {
		return nil, errors.New("cluster: RemoteOptions need a Store, a Catalog and Reducers")
	}
	if err := journal.ValidateWorld(opts.Name); err != nil {
		return nil, err
	}
	if opts.Follow <= 0 {
		opts.Follow = DefaultFollow
	}
	if opts.Outage <= 0 {
		opts.Outage = DefaultOutage
	}
	st := opts.Store
	var blobs [][]byte
	_ = opts.Catalog.Nodes(func(_ cas.Ref, node []byte) error {
		blobs = append(blobs, node)
		return nil
	})
	for _, b := range blobs {
		if _, err := st.CAS().Put(ctx, b); err != nil {
			return nil, fmt.Errorf("cluster: store the manifest of world %s: %w", opts.Name, err)
		}
	}
	if err := st.Register(ctx, opts.Name, opts.Catalog.ManifestRef()); err != nil {
		return nil, err
	}
	res, err := world.Rerun(ctx, world.RerunOptions{Name: opts.Name, Catalog: opts.Catalog, Reducers: opts.Reducers, Storage: st.Storage()})
	if err != nil {
		return nil, fmt.Errorf("cluster: world %s: %w", opts.Name, err)
	}
	r := &Remote{opts: opts, base: res.Machine, head: res.Head, pending: map[cas.Ref]bool{},
		states: map[string]stateEntry{}, posted: map[int64]bool{}}
	for _, in := range res.Machine.Pending() {
		r.pending[in.Hash] = true
	}
	return r, nil
}

// Name returns the world's name.
func (r *Remote) Name() string { return r.opts.Name }

// Catalog returns the manifest the world is to run.
func (r *Remote) Catalog() *schema.Catalog { return r.opts.Catalog }

// Head returns the newest head read from the journal.
func (r *Remote) Head() journal.Head {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.head
}

// SendJSON checks a domain event against its schema (an event that does
// not fit is refused with an error wrapping world.ErrInvalidInput, and
// nothing is posted), posts it to the world's inbox, and waits until the
// world's worker has journaled it; it returns the head up to which the
// journal was read then (the event's record included). If the worker
// refuses it, the error says why. It is PostJSON, then Await.
func (r *Remote) SendJSON(ctx context.Context, schemaName string, js []byte) (journal.Head, error) {
	id, err := r.PostJSON(ctx, schemaName, js)
	if err != nil {
		return journal.Head{}, err
	}
	return r.Await(ctx, id)
}

// ErrNotJournaled is returned (wrapped, with the context's error) by Await
// when its context ends before any worker journaled the message: the
// message stays in the world's inbox, and the worker that takes the world
// journals it.
var ErrNotJournaled = errors.New("cluster: the message waits in the world's inbox: no worker has journaled it yet")

// PostJSON checks a domain event against its schema, as SendJSON does, and
// posts it to the world's inbox; it returns the message's id, for Await.
func (r *Remote) PostJSON(ctx context.Context, schemaName string, js []byte) (int64, error) {
	cat := r.opts.Catalog
	if _, ok := cat.SchemaType(schemaName); !ok {
		return 0, fmt.Errorf("%w: schema %s is not in the manifest", world.ErrInvalidInput, schemaName)
	}
	if _, err := schema.NormalizeJSON(cat, schema.RefType(schemaName), js); err != nil {
		return 0, fmt.Errorf("%w: %s: %v", world.ErrInvalidInput, schemaName, err)
	}
	id, err := r.opts.Store.Post(ctx, r.opts.Name, cat.ManifestRef(), schemaName, js)
	if err != nil {
		return 0, err
	}
	r.mu.Lock()
	r.posted[id] = true
	r.mu.Unlock()
	return id, nil
}

// Await waits until the world's worker has journaled the message id that
// PostJSON posted, and reads the journal up to it; it returns the head
// read then. If ctx ends before a worker journaled it, the error wraps
// ErrNotJournaled; if it ends after, only ctx's error.
func (r *Remote) Await(ctx context.Context, id int64) (journal.Head, error) {
	notYet := func(err error) error { return fmt.Errorf("%w (message %d): %w", ErrNotJournaled, id, err) }
	for {
		m, err := r.opts.Store.Message(ctx, id)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return journal.Head{}, notYet(cerr)
			}
			if err := r.outage(err); err != nil {
				return journal.Head{}, err
			}
			sleep(ctx, r.opts.Follow)
			if err := ctx.Err(); err != nil {
				return journal.Head{}, notYet(err)
			}
			continue
		}
		r.up()
		if m.Error != "" {
			r.mu.Lock()
			delete(r.posted, id)
			r.mu.Unlock()
			return journal.Head{}, fmt.Errorf("%w: world %s refused message %d: %s", world.ErrInvalidInput, r.opts.Name, id, m.Error)
		}
		if m.Seq > 0 {
			r.mu.Lock()
			delete(r.posted, id)
			r.taken = max(r.taken, m.Seq)
			r.mu.Unlock()
			if err := r.followTo(ctx, m.Seq); err != nil {
				return journal.Head{}, err
			}
			return r.Head(), nil
		}
		if err := r.Sync(ctx); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return journal.Head{}, notYet(cerr)
			}
			return journal.Head{}, err
		}
		sleep(ctx, r.opts.Follow)
		if err := ctx.Err(); err != nil {
			return journal.Head{}, notYet(err)
		}
	}
}

// followTo reads the journal until its head is at least seq.
func (r *Remote) followTo(ctx context.Context, seq uint64) error {
	for {
		if err := r.Sync(ctx); err != nil {
			return err
		}
		if r.Head().Seq >= seq {
			return nil
		}
		sleep(ctx, r.opts.Follow)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// WaitIdle waits until every message posted through r is journaled and
// no effect of the world is in flight (every intent journaled has its
// receipt), or until ctx is done. A world whose worker died is idle only
// once another worker took it over and finished its effects.
func (r *Remote) WaitIdle(ctx context.Context) error {
	for {
		if err := r.Sync(ctx); err != nil {
			return err
		}
		r.mu.Lock()
		idle := len(r.pending) == 0 && len(r.posted) == 0 && r.head.Seq >= r.taken
		r.mu.Unlock()
		if idle {
			return nil
		}
		sleep(ctx, r.opts.Follow)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// Sync reads the records journaled since the last read, notes what they
// change (intents, receipts, states) and hands them to OnCommit.
func (r *Remote) Sync(ctx context.Context) error {
	r.reading.Lock()
	defer r.reading.Unlock()
	r.mu.Lock()
	from := r.head.Seq + 1
	r.mu.Unlock()
	var recs []journal.Record
	err := r.opts.Store.Journal().Read(ctx, r.opts.Name, from, func(rec journal.Record) error {
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		return r.outage(fmt.Errorf("cluster: follow world %s: %w", r.opts.Name, err))
	}
	r.up()
	if len(recs) == 0 {
		return nil
	}
	r.mu.Lock()
	for _, rec := range recs {
		if err := r.note(ctx, rec); err != nil {
			r.mu.Unlock()
			return err
		}
		r.head = journal.Head{Seq: rec.Seq, Hash: rec.Hash}
	}
	r.mu.Unlock()
	if r.opts.OnCommit != nil {
		r.opts.OnCommit(recs)
	}
	return nil
}

// note records what rec changes. r.mu is held.
func (r *Remote) note(ctx context.Context, rec journal.Record) error {
	switch rec.Kind {
	case world.KindIntent:
		v, err := schema.Decode(rec.Payload)
		if err != nil {
			return fmt.Errorf("cluster: world %s: record %d: %w", r.opts.Name, rec.Seq, err)
		}
		m, _ := v.(*schema.Map)
		var s string
		if m != nil {
			iv, _ := m.Get("intent")
			s, _ = iv.(string)
		}
		ref, err := cas.ParseRef(s)
		if err != nil {
			return fmt.Errorf("cluster: world %s: intent record %d: %w", r.opts.Name, rec.Seq, err)
		}
		r.pending[ref] = true
	case world.KindReceipt:
		in, err := world.DecodeInput(rec)
		if err != nil {
			return err
		}
		delete(r.pending, in.Intent)
	case world.KindState:
		sr, err := world.DecodeState(rec)
		if err != nil {
			return err
		}
		k, err := cellKey(sr.Reducer, sr.Key)
		if err != nil {
			return err
		}
		e := stateEntry{ref: sr.State}
		if sr.State.Valid() {
			b, err := r.opts.Store.CAS().Get(ctx, sr.State)
			if err != nil {
				return fmt.Errorf("cluster: world %s: state of %s: %w", r.opts.Name, sr.Reducer, err)
			}
			if e.val, err = schema.Decode(b); err != nil {
				return fmt.Errorf("cluster: world %s: state of %s: %w", r.opts.Name, sr.Reducer, err)
			}
		}
		r.states[k] = e
	}
	return nil
}

func cellKey(module string, key schema.Value) (string, error) {
	if key == nil {
		return module + "\x00", nil
	}
	b, err := schema.Encode(key)
	if err != nil {
		return "", err
	}
	return module + "\x00" + string(b), nil
}

// State returns a cell's state and its ref as the journal read so far
// says (key nil for a reducer that is not keyed).
func (r *Remote) State(module string, key schema.Value) (schema.Value, cas.Ref, bool) {
	k, err := cellKey(module, key)
	if err != nil {
		return nil, cas.Ref{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.states[k]; ok {
		return e.val, e.ref, e.ref.Valid()
	}
	return r.base.State(module, key)
}

// outage returns nil for a failed read that is worth retrying (the
// database is unreachable) while the outage is younger than
// RemoteOptions.Outage, and err otherwise.
func (r *Remote) outage(err error) error {
	if !unreachable(err) {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down.IsZero() {
		r.down = time.Now()
	}
	if since := time.Since(r.down); since >= r.opts.Outage {
		return fmt.Errorf("%w (the database has been unreachable for %s)", err, since.Round(time.Second))
	}
	return nil
}

// up notes a read that succeeded: the outage, if any, is over.
func (r *Remote) up() {
	r.mu.Lock()
	r.down = time.Time{}
	r.mu.Unlock()
}

// unreachable reports whether err says that the database could not be
// reached or went away (a connection refused or lost, a server shutting
// down or starting), rather than that it refused the query.
func unreachable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01-57P03: admin or crash
		// shutdown, cannot connect now.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P")
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || pgconn.SafeToRetry(err)
}
