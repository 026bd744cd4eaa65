package journal

import (
	"context"
	"slices"
	"sync"
)

// Memory is a Store that keeps records in memory, for tests and replay.
// It stores each record's encoded bytes and verifies them on Read like any
// other backend. It is safe for concurrent use.
type Memory struct {
	mu     sync.RWMutex
	worlds map[string]*memWorld
	closed bool
}

type memWorld struct {
	records [][]byte // records[i] holds seq i+1; never modified once stored
	head    Head
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory journal.
func NewMemory() *Memory {
	return &Memory{worlds: make(map[string]*memWorld)}
}

// Append implements Appender. An append is atomic and visible to readers
// once Append returns; nothing survives the process.
func (m *Memory) Append(ctx context.Context, world string, expect Head, entries []Entry) (Head, error) {
	if err := ValidateWorld(world); err != nil {
		return Head{}, err
	}
	if err := validateEntries(entries); err != nil {
		return Head{}, err
	}
	if err := ctx.Err(); err != nil {
		return Head{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Head{}, ErrClosed
	}
	w := m.worlds[world]
	var head Head
	if w != nil {
		head = w.head
	}
	if head != expect {
		return Head{}, &ConflictError{World: world, Expect: expect, Actual: head}
	}
	if len(entries) == 0 {
		return head, nil
	}
	recs, head, err := encodeEntries(world, head, entries)
	if err != nil {
		return Head{}, err
	}
	if w == nil {
		w = &memWorld{}
		m.worlds[world] = w
	}
	w.records = append(w.records, recs...)
	w.head = head
	return head, nil
}

// Read implements Reader.
func (m *Memory) Read(ctx context.Context, world string, from uint64, fn func(Record) error) error {
	if err := ValidateWorld(world); err != nil {
		return err
	}
	if from == 0 {
		from = 1
	}
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return ErrClosed
	}
	var records [][]byte
	var head Head
	if w := m.worlds[world]; w != nil {
		records, head = w.records, w.head // stored records are never modified
	}
	m.mu.RUnlock()

	if from > head.Seq+1 || len(records) == 0 {
		return ctx.Err()
	}
	prev := Genesis(world)
	if from > 1 {
		rec, err := DecodeRecord(records[from-2])
		if err != nil {
			return corruptf(world, from-1, "record %d does not decode: %v", from-1, err)
		}
		if rec.Seq != from-1 {
			return corruptf(world, from-1, "record stored as seq %d holds seq %d", from-1, rec.Seq)
		}
		prev = rec.Hash
	}
	c := newChain(world, from, prev)
	for i := from - 1; i < uint64(len(records)); i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, err := c.check(i+1, records[i])
		if err != nil {
			return err
		}
		rec.Payload = slices.Clone(rec.Payload)
		if rec.Payload == nil {
			rec.Payload = []byte{}
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return c.finish(head)
}

// Head implements Reader.
func (m *Memory) Head(ctx context.Context, world string) (Head, error) {
	if err := ValidateWorld(world); err != nil {
		return Head{}, err
	}
	if err := ctx.Err(); err != nil {
		return Head{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return Head{}, ErrClosed
	}
	if w := m.worlds[world]; w != nil {
		return w.head, nil
	}
	return Head{}, nil
}

// Worlds implements Lister.
func (m *Memory) Worlds(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	names := make([]string, 0, len(m.worlds))
	for name := range m.worlds {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// Close implements Store: it drops the records. A second Close returns nil.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.worlds = nil
	return nil
}
