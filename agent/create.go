package agent

import (
	"context"
	"fmt"

	"github.com/demiurge-dev/demiurge/world"
)

// Create creates the chat in the world with its settings, if the world
// does not have it yet, and returns once that is committed: a program that
// hands out a chat before its first message (a server's "new chat") makes
// it exist, so that it is listed and read like any other. A chat that
// exists is left as it is (its settings change with its next message).
func (c *Chat) Create(ctx context.Context) error {
	if c.id == "" {
		return errNoChatID
	}
	c.w.mu.Lock()
	closed := c.w.closed
	c.w.mu.Unlock()
	if closed {
		return world.ErrClosed
	}
	if _, ok := c.State(); ok {
		return nil
	}
	if err := c.checkToolNames(nil); err != nil {
		return fmt.Errorf("chat %s: %w", c.id, err)
	}
	if _, _, err := c.start(ctx); err != nil {
		return fmt.Errorf("chat %s: %w", c.id, err)
	}
	return nil
}

// Sync brings what this process knows of a world that workers run
// (WithRemote) up to its journal's head: the chats' states that State,
// Pending and a new message read, which another process (a server beside
// this one, demiurge run) may have moved on. A world in this process
// knows every record as it commits: Sync does nothing.
func (w *World) Sync(ctx context.Context) error {
	if w.remote == nil {
		return nil
	}
	return w.remote.Sync(ctx)
}
