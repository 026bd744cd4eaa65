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

// ErrNoMessage is returned (wrapped) by Message for an id the inbox does
// not hold.
var ErrNoMessage = errors.New("pgstore: no such inbox message")

// Message is a domain event sent to a world through its inbox.
type Message struct {
	ID    int64
	World string
	// Manifest is the manifest the sender validated the value against;
	// the world runs it from this message on.
	Manifest cas.Ref
	Schema   string
	// Value is the event's value as JSON (either AIR form).
	Value  []byte
	Posted time.Time
	// Seq is the seq of the record the message became, once the world's
	// owner journaled it; 0 while it waits.
	Seq uint64
	// Error says why the world's owner refused the message; nothing of it
	// was journaled.
	Error string
}

// Post puts a message to world in its inbox, registers the world with
// manifest (see Register) and wakes the workers listening (NOTIFY), in one
// transaction, and returns the message's id. The world's owner journals
// messages one at a time, in id order.
func (s *Store) Post(ctx context.Context, world string, manifest cas.Ref, schemaName string, value []byte) (int64, error) {
	if err := journal.ValidateWorld(world); err != nil {
		return 0, err
	}
	if !s.enter() {
		return 0, journal.ErrClosed
	}
	defer s.users.Done()
	if s.readOnly {
		return 0, journal.ErrReadOnly
	}
	d := manifest.Digest()
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO worlds (world, manifest) VALUES ($1, $2)
		ON CONFLICT (world) DO UPDATE SET manifest = EXCLUDED.manifest
		WHERE worlds.manifest IS DISTINCT FROM EXCLUDED.manifest`, world, d[:])
	var id int64
	b.Queue(`INSERT INTO inbox (world, manifest, schema, value) VALUES ($1, $2, $3, $4) RETURNING id`,
		world, d[:], schemaName, value).QueryRow(func(row pgx.Row) error { return row.Scan(&id) })
	b.Queue(`SELECT pg_notify($1, $2)`, s.channel, world)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return 0, s.wrap(fmt.Errorf("pgstore: post to world %s: %w", world, err))
	}
	return id, nil
}

const messageColumns = `id, world, manifest, schema, value, posted, coalesce(seq, 0), coalesce(error, '')`

func scanMessage(row pgx.Row) (Message, error) {
	var m Message
	var manifest []byte
	var seq int64
	if err := row.Scan(&m.ID, &m.World, &manifest, &m.Schema, &m.Value, &m.Posted, &seq, &m.Error); err != nil {
		return Message{}, err
	}
	m.Manifest, _ = refOf(manifest)
	m.Seq = uint64(seq)
	return m, nil
}

// Waiting returns up to limit messages to world that wait to be journaled
// (neither taken nor refused), in id order.
func (s *Store) Waiting(ctx context.Context, world string, limit int) ([]Message, error) {
	if !s.enter() {
		return nil, journal.ErrClosed
	}
	defer s.users.Done()
	rows, err := s.pool.Query(ctx, `SELECT `+messageColumns+` FROM inbox
		WHERE world = $1 AND seq IS NULL AND error IS NULL ORDER BY id LIMIT $2`, world, limit)
	if err != nil {
		return nil, s.wrap(fmt.Errorf("pgstore: inbox of world %s: %w", world, err))
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, s.wrap(fmt.Errorf("pgstore: inbox of world %s: %w", world, err))
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(fmt.Errorf("pgstore: inbox of world %s: %w", world, err))
	}
	return out, nil
}

// Message returns the message id, to learn what became of it.
func (s *Store) Message(ctx context.Context, id int64) (Message, error) {
	if !s.enter() {
		return Message{}, journal.ErrClosed
	}
	defer s.users.Done()
	m, err := scanMessage(s.pool.QueryRow(ctx, `SELECT `+messageColumns+` FROM inbox WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Message{}, fmt.Errorf("%w: %d", ErrNoMessage, id)
	}
	if err != nil {
		return Message{}, s.wrap(fmt.Errorf("pgstore: inbox message %d: %w", id, err))
	}
	return m, nil
}

// Refuse marks a waiting message refused with reason, if fence is still
// the lease of its world; it reports whether it did.
func (s *Store) Refuse(ctx context.Context, id int64, reason string, fence Fence) (bool, error) {
	if !s.enter() {
		return false, journal.ErrClosed
	}
	defer s.users.Done()
	tag, err := s.pool.Exec(ctx, `UPDATE inbox SET error = $2 WHERE id = $1 AND seq IS NULL AND error IS NULL
		AND EXISTS (SELECT 1 FROM worlds w WHERE w.world = inbox.world AND w.owner = $3 AND w.token = $4)`,
		id, reason, fence.Owner, fence.Token)
	if err != nil {
		return false, s.wrap(fmt.Errorf("pgstore: refuse inbox message %d: %w", id, err))
	}
	return tag.RowsAffected() == 1, nil
}

// Listener receives the names of the worlds that got inbox messages, on a
// connection of its own (LISTEN).
type Listener struct {
	s    *Store
	conn *pgx.Conn
}

// Listen starts listening to the inbox. The caller must Close the
// listener. If its connection breaks (the server restarted), Wait returns
// the error; Listen again, and look at the inbox for what came meanwhile.
func (s *Store) Listen(ctx context.Context) (*Listener, error) {
	if !s.enter() {
		return nil, journal.ErrClosed
	}
	defer s.users.Done()
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, s.wrap(fmt.Errorf("pgstore: listen to the inbox: %w", err))
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, s.wrap(fmt.Errorf("pgstore: listen to the inbox: %w", err))
	}
	return &Listener{s: s, conn: conn}, nil
}

// Wait waits for a message to be posted and returns its world's name.
func (l *Listener) Wait(ctx context.Context) (string, error) {
	n, err := l.conn.WaitForNotification(ctx)
	if err != nil {
		return "", l.s.wrap(fmt.Errorf("pgstore: inbox notifications: %w", err))
	}
	return n.Payload, nil
}

// Close closes the listener's connection.
func (l *Listener) Close() error {
	return l.conn.Close(context.Background())
}
