package pgstore

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/zeebo/blake3"

	"github.com/demiurge-dev/demiurge/journal"
)

// MaxStreamPayload bounds one payload of PublishStream: NOTIFY takes less
// than 8000 bytes.
const MaxStreamPayload = 7900

// streamChannel is the NOTIFY channel of a world's stream: a name of its
// own per schema and world, short enough for an identifier (63 bytes)
// whatever the world's name.
func (s *Store) streamChannel(world string) string {
	h := blake3.Sum256([]byte(s.channel + "\x00" + world))
	return "demiurge-stream:" + hex.EncodeToString(h[:16])
}

// PublishStream sends payload to the clients that listen to world's stream
// now (ListenStream): what a world's effects in flight show as they run,
// such as a model's answer as it streams, from the worker that runs the
// world to the clients that follow it. Nothing of it is kept: a client
// that does not listen at that moment never gets it, and the journal has
// what came of the effect once it ends. Payloads from one publisher reach
// each listener in order. payload is at most MaxStreamPayload bytes.
func (s *Store) PublishStream(ctx context.Context, world, payload string) error {
	if len(payload) > MaxStreamPayload {
		return fmt.Errorf("pgstore: stream payload of %d bytes: at most %d", len(payload), MaxStreamPayload)
	}
	if !s.enter() {
		return journal.ErrClosed
	}
	defer s.users.Done()
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, s.streamChannel(world), payload); err != nil {
		return s.wrap(fmt.Errorf("pgstore: stream of world %s: %w", world, err))
	}
	return nil
}

// StreamListener receives the payloads published to a world's stream, on
// a connection of its own (LISTEN).
type StreamListener struct {
	s    *Store
	conn *pgx.Conn
}

// ListenStream starts listening to world's stream (see PublishStream). The
// caller must Close the listener. If its connection breaks, Wait returns
// the error, and what is published until it listens again is missed.
func (s *Store) ListenStream(ctx context.Context, world string) (*StreamListener, error) {
	if !s.enter() {
		return nil, journal.ErrClosed
	}
	defer s.users.Done()
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, s.wrap(fmt.Errorf("pgstore: listen to the stream of world %s: %w", world, err))
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.streamChannel(world)}.Sanitize()); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, s.wrap(fmt.Errorf("pgstore: listen to the stream of world %s: %w", world, err))
	}
	return &StreamListener{s: s, conn: conn}, nil
}

// Wait waits for the next payload.
func (l *StreamListener) Wait(ctx context.Context) (string, error) {
	n, err := l.conn.WaitForNotification(ctx)
	if err != nil {
		return "", l.s.wrap(fmt.Errorf("pgstore: stream notifications: %w", err))
	}
	return n.Payload, nil
}

// Close closes the listener's connection.
func (l *StreamListener) Close() error {
	return l.conn.Close(context.Background())
}
