package ui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/replay"
)

// follower reads a world's records as they land, into its session and
// its newest record lines.
type follower struct {
	src   Source
	world string
	last  uint64 // the seq of the last record read
	sess  *session.Reader
	tr    *replay.Tracer
	buf   bytes.Buffer
	lines []recordLine // the newest records, oldest first
}

// liveLines is how many of its newest records the timeline of a world
// without chats shows.
const liveLines = 200

func newFollower(src Source, world string) *follower {
	f := &follower{src: src, world: world, sess: session.NewReader(src)}
	f.tr = replay.NewTracer(&f.buf, replay.TraceOptions{CAS: src, Width: 200})
	return f
}

// advance reads the records that landed since the last it read.
func (f *follower) advance(ctx context.Context) error {
	err := f.src.Read(ctx, f.world, f.last+1, func(r journal.Record) error {
		if err := f.sess.Record(r); err != nil {
			return err
		}
		f.lines = append(f.lines, traceLine(f.tr, &f.buf, r))
		if len(f.lines) > 2*liveLines {
			f.lines = append(f.lines[:0], f.lines[len(f.lines)-liveLines:]...)
		}
		f.last = r.Seq
		return nil
	})
	if err != nil {
		return fmt.Errorf("world %s from seq %d: %w", f.world, f.last+1, err)
	}
	return nil
}

// heartbeat is how often an idle event stream sends a comment, so that a
// closed page is noticed and proxies keep the stream open.
const heartbeat = 15 * time.Second

// events streams a world's timeline as server-sent events: an event
// "timeline" holding the timeline's HTML each time records land after the
// seq the page shows (?after=, or the Last-Event-ID of a reconnection).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	name, _, ok := s.world(w, r)
	if !ok {
		return
	}
	after, err := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		after, err = strconv.ParseUint(id, 10, 64)
	}
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("events of world %s: after=%q: want the seq the page shows", name, r.URL.Query().Get("after")))
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.fail(w, r, http.StatusInternalServerError, errors.New("the server cannot stream events"))
		return
	}
	ctx := r.Context()
	filt := filterOf(r.URL.Query())
	f := newFollower(s.src, name)
	if err := f.advance(ctx); err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	if after > f.last {
		after = 0 // a page of records this world does not have: show it what it has
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "retry: 1000\n\n")
	flusher.Flush()
	for {
		if f.last > after {
			if err := s.send(w, f, filt); err != nil {
				return
			}
			flusher.Flush()
			after = f.last
		}
		wctx, cancel := context.WithTimeout(ctx, heartbeat)
		_, err := wait(wctx, s.src, s.poll, name, after)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, context.DeadlineExceeded):
			if _, err := fmt.Fprint(w, ": still here\n\n"); err != nil {
				return
			}
			flusher.Flush()
			continue
		case err != nil:
			s.sendError(w, fmt.Errorf("wait for records of world %s: %w", name, err))
			flusher.Flush()
			return
		}
		if err := f.advance(ctx); err != nil {
			s.sendError(w, err)
			flusher.Flush()
			return
		}
	}
}

// send writes the timeline the filter picks as an event.
func (s *Server) send(w http.ResponseWriter, f *follower, filt Filter) error {
	var b bytes.Buffer
	if err := s.pages["timeline.html"].ExecuteTemplate(&b, "timeline", s.timelineView(context.Background(), f, filt)); err != nil {
		return err
	}
	var ev strings.Builder
	fmt.Fprintf(&ev, "event: timeline\nid: %d\n", f.last)
	for line := range strings.SplitSeq(b.String(), "\n") {
		ev.WriteString("data: " + strings.TrimSuffix(line, "\r") + "\n")
	}
	ev.WriteString("\n")
	_, err := fmt.Fprint(w, ev.String())
	return err
}

// sendError tells the page why its stream ended.
func (s *Server) sendError(w http.ResponseWriter, err error) {
	s.log.Info("ui: event stream ended", "err", err)
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	_, _ = fmt.Fprintf(w, "event: failure\ndata: %s\n\n", msg)
}

// timelineView is the timeline of what f read, the turns filt picks, with
// what the page's forms and its event stream need.
func (s *Server) timelineView(ctx context.Context, f *follower, filt Filter) timelineView {
	v := f.view(ctx, filt)
	v.Form, v.Decides = s.form, s.decide != nil
	q := filt.values()
	q.Set("after", strconv.FormatUint(v.Head, 10))
	v.Events = "/w/" + url.PathEscape(f.world) + "/events?" + q.Encode()
	for i := range v.Turns {
		for j := range v.Turns[i].Rounds {
			for k := range v.Turns[i].Rounds[j].Calls {
				c := &v.Turns[i].Rounds[j].Calls[k]
				c.Form, c.Decides, c.Back, c.Manifest = v.Form, v.Decides, filt.Query(), s.manifestOf(f.world)
			}
		}
	}
	return v
}
