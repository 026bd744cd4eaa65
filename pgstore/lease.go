package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
)

// Lease is a worker's hold on a world: while it lasts, only Owner commits
// to the world, with Token (see Fence).
type Lease struct {
	World string
	Owner string
	// Token is the world's fencing token: it grows by one at every
	// Acquire, so a commit made under an older lease is refused.
	Token int64
	// Manifest is the manifest clients last asked the world to run (see
	// Register); the zero Ref if none did.
	Manifest cas.Ref
}

// Fence returns the fence of commits made under l.
func (l Lease) Fence() *Fence { return &Fence{Owner: l.Owner, Token: l.Token} }

// WorldInfo is a world as the worlds table knows it.
type WorldInfo struct {
	Lease
	// Expires is when the lease ends unless renewed; the zero time if no
	// one holds the world.
	Expires time.Time
}

// Register makes world known to workers, to run manifest (whose nodes the
// caller has stored in the CAS): a worker will take it (Acquire) and open
// it with that manifest. Registering a world again with another manifest
// changes what it runs from its next message on.
func (s *Store) Register(ctx context.Context, world string, manifest cas.Ref) error {
	if err := journal.ValidateWorld(world); err != nil {
		return err
	}
	if !s.enter() {
		return journal.ErrClosed
	}
	defer s.users.Done()
	d := manifest.Digest()
	_, err := s.pool.Exec(ctx, `INSERT INTO worlds (world, manifest) VALUES ($1, $2)
		ON CONFLICT (world) DO UPDATE SET manifest = EXCLUDED.manifest
		WHERE worlds.manifest IS DISTINCT FROM EXCLUDED.manifest`, world, d[:])
	if err != nil {
		return s.wrap(fmt.Errorf("pgstore: register world %s: %w", world, err))
	}
	return nil
}

// ms is a duration in whole milliseconds, at least 1.
func ms(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

// Acquire takes for owner, for ttl, up to max registered worlds that no
// one holds or whose lease has expired, incrementing each one's token. It
// returns the leases taken (none when every world is held). Concurrent
// Acquires never take the same world.
//
// It never takes the worlds named in holding, expired or not: the caller
// holds them, and renews their leases in place (Renew keeps the token of
// a lease that expired while no one took it). Taking its own world again
// would fence off the caller's running world and dispatch its effects in
// flight a second time.
func (s *Store) Acquire(ctx context.Context, owner string, max int, ttl time.Duration, holding []string) ([]Lease, error) {
	return s.acquire(ctx, owner, max, ttl, holding, false)
}

// AcquireExpired is Acquire of worlds whose lease expired only (their
// owner died or lost touch), not of free ones.
func (s *Store) AcquireExpired(ctx context.Context, owner string, max int, ttl time.Duration, holding []string) ([]Lease, error) {
	return s.acquire(ctx, owner, max, ttl, holding, true)
}

func (s *Store) acquire(ctx context.Context, owner string, max int, ttl time.Duration, holding []string, expiredOnly bool) ([]Lease, error) {
	if owner == "" || max <= 0 || ttl <= 0 {
		return nil, fmt.Errorf("pgstore: Acquire(%q, %d, %v): want an owner, max > 0 and ttl > 0", owner, max, ttl)
	}
	if !s.enter() {
		return nil, journal.ErrClosed
	}
	defer s.users.Done()
	rows, err := s.pool.Query(ctx, `
		UPDATE worlds w SET owner = $1, token = w.token + 1, expires = now() + $3 * interval '1 millisecond'
		FROM (SELECT world FROM worlds WHERE ((owner IS NULL AND NOT $4) OR expires < now())
				AND NOT world = ANY(coalesce($5::text[], '{}'))
			ORDER BY random() LIMIT $2 FOR UPDATE SKIP LOCKED) f
		WHERE w.world = f.world
		RETURNING w.world, w.token, w.manifest`, owner, max, ms(ttl), expiredOnly, holding)
	if err != nil {
		return nil, s.wrap(fmt.Errorf("pgstore: acquire worlds: %w", err))
	}
	return s.collectLeases(rows, owner)
}

// Census is what a worker sees of the others when it reports itself
// alive (Heartbeat).
type Census struct {
	Workers int // workers seen alive within the ttl, the caller included
	Worlds  int // registered worlds
}

// Heartbeat records that worker id is alive now, forgets workers not seen
// for ten times ttl, and counts the workers seen within ttl and the
// worlds: a worker takes about Worlds/Workers of them.
func (s *Store) Heartbeat(ctx context.Context, id string, ttl time.Duration) (Census, error) {
	if !s.enter() {
		return Census{}, journal.ErrClosed
	}
	defer s.users.Done()
	var c Census
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO workers (id, seen) VALUES ($1, now()) ON CONFLICT (id) DO UPDATE SET seen = now()`, id)
	// SKIP LOCKED: a row another heartbeat holds is that worker's, alive
	// (it is recording itself); waiting for it would deadlock two
	// workers back from an outage, each forgetting the other.
	b.Queue(`DELETE FROM workers WHERE id IN (SELECT id FROM workers
		WHERE seen < now() - 10 * $1 * interval '1 millisecond' FOR UPDATE SKIP LOCKED)`, ms(ttl))
	b.Queue(`SELECT (SELECT count(*) FROM workers WHERE seen >= now() - $1 * interval '1 millisecond'), (SELECT count(*) FROM worlds)`,
		ms(ttl)).QueryRow(func(row pgx.Row) error { return row.Scan(&c.Workers, &c.Worlds) })
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return Census{}, s.wrap(fmt.Errorf("pgstore: heartbeat: %w", err))
	}
	return c, nil
}

// WorkerSeen returns how long ago, by the server's clock, worker id last
// reported itself alive (Heartbeat); false if no worker id is known (it
// never ran, retired, or was forgotten).
func (s *Store) WorkerSeen(ctx context.Context, id string) (time.Duration, bool, error) {
	if !s.enter() {
		return 0, false, journal.ErrClosed
	}
	defer s.users.Done()
	var ms float64
	err := s.pool.QueryRow(ctx, `SELECT extract(epoch FROM now() - seen) * 1000 FROM workers WHERE id = $1`, id).Scan(&ms)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, s.wrap(fmt.Errorf("pgstore: worker %s: %w", id, err))
	}
	return time.Duration(ms * float64(time.Millisecond)), true, nil
}

// Retire forgets worker id (it stops), so that the others count it out at
// once.
func (s *Store) Retire(ctx context.Context, id string) error {
	if !s.enter() {
		return journal.ErrClosed
	}
	defer s.users.Done()
	if _, err := s.pool.Exec(ctx, `DELETE FROM workers WHERE id = $1`, id); err != nil {
		return s.wrap(fmt.Errorf("pgstore: retire worker %s: %w", id, err))
	}
	return nil
}

func (s *Store) collectLeases(rows pgx.Rows, owner string) ([]Lease, error) {
	var out []Lease
	for rows.Next() {
		l := Lease{Owner: owner}
		var manifest []byte
		if err := rows.Scan(&l.World, &l.Token, &manifest); err != nil {
			rows.Close()
			return nil, s.wrap(fmt.Errorf("pgstore: leases: %w", err))
		}
		l.Manifest, _ = refOf(manifest)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(fmt.Errorf("pgstore: leases: %w", err))
	}
	return out, nil
}

// Renew extends by ttl the leases of held that are still owner's with the
// same token, even if they expired meanwhile (no one took the world, so
// no one wrote to it), and returns those, with the manifests their worlds
// are registered with now. A lease of held missing from the result is
// lost: another worker took the world.
func (s *Store) Renew(ctx context.Context, owner string, held []Lease, ttl time.Duration) ([]Lease, error) {
	if len(held) == 0 {
		return nil, nil
	}
	if !s.enter() {
		return nil, journal.ErrClosed
	}
	defer s.users.Done()
	worlds := make([]string, len(held))
	tokens := make([]int64, len(held))
	for i, l := range held {
		worlds[i], tokens[i] = l.World, l.Token
	}
	rows, err := s.pool.Query(ctx, `
		UPDATE worlds w SET expires = now() + $4 * interval '1 millisecond'
		FROM unnest($2::text[], $3::bigint[]) AS h(world, token)
		WHERE w.world = h.world AND w.token = h.token AND w.owner = $1
		RETURNING w.world, w.token, w.manifest`, owner, worlds, tokens, ms(ttl))
	if err != nil {
		return nil, s.wrap(fmt.Errorf("pgstore: renew leases: %w", err))
	}
	return s.collectLeases(rows, owner)
}

// Release gives up l, if it is still held, so another worker can take the
// world at once. Its token stays: the next Acquire increments it.
func (s *Store) Release(ctx context.Context, l Lease) error {
	if !s.enter() {
		return journal.ErrClosed
	}
	defer s.users.Done()
	_, err := s.pool.Exec(ctx, `UPDATE worlds SET owner = NULL, expires = NULL WHERE world = $1 AND owner = $2 AND token = $3`,
		l.World, l.Owner, l.Token)
	if err != nil {
		return s.wrap(fmt.Errorf("pgstore: release world %s: %w", l.World, err))
	}
	return nil
}

// Worlds returns the registered worlds and their leases, by name.
func (s *Store) Worlds(ctx context.Context) ([]WorldInfo, error) {
	if !s.enter() {
		return nil, journal.ErrClosed
	}
	defer s.users.Done()
	rows, err := s.pool.Query(ctx, `SELECT world, coalesce(owner, ''), token, manifest, expires FROM worlds ORDER BY world`)
	if err != nil {
		return nil, s.wrap(fmt.Errorf("pgstore: list worlds: %w", err))
	}
	defer rows.Close()
	var out []WorldInfo
	for rows.Next() {
		var wi WorldInfo
		var manifest []byte
		var expires *time.Time
		if err := rows.Scan(&wi.World, &wi.Owner, &wi.Token, &manifest, &expires); err != nil {
			return nil, s.wrap(fmt.Errorf("pgstore: list worlds: %w", err))
		}
		wi.Manifest, _ = refOf(manifest)
		if expires != nil {
			wi.Expires = *expires
		}
		out = append(out, wi)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(fmt.Errorf("pgstore: list worlds: %w", err))
	}
	return out, nil
}

// Now returns the database server's clock, which leases expire by.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if !s.enter() {
		return time.Time{}, journal.ErrClosed
	}
	defer s.users.Done()
	var t time.Time
	if err := s.pool.QueryRow(ctx, `SELECT now()`).Scan(&t); err != nil {
		return time.Time{}, s.wrap(fmt.Errorf("pgstore: %w", err))
	}
	return t, nil
}
