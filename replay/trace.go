package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// TraceOptions tune Trace.
type TraceOptions struct {
	// JSON writes one JSON object per record instead of text.
	JSON bool
	// CAS, if set, lets the trace show cell states instead of their refs.
	CAS cas.Getter
	// Width bounds the JSON of a value in text mode (default 160 bytes).
	Width int
}

// Tracer writes records as a timeline.
type Tracer struct {
	w    io.Writer
	opts TraceOptions
	err  error
}

// NewTracer returns a tracer writing to w.
func NewTracer(w io.Writer, opts TraceOptions) *Tracer {
	if opts.Width <= 0 {
		opts.Width = 160
	}
	return &Tracer{w: w, opts: opts}
}

// Trace writes every record of a world.
func Trace(ctx context.Context, w io.Writer, j journal.Reader, world string, opts TraceOptions) error {
	t := NewTracer(w, opts)
	if err := j.Read(ctx, world, 1, t.Record); err != nil {
		return err
	}
	return t.err
}

func (t *Tracer) printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

// clip renders a value compactly, cut on a UTF-8 boundary at the width.
func (t *Tracer) clip(v schema.Value) string {
	s := string(schema.ValueJSON(v))
	if len(s) <= t.opts.Width {
		return s
	}
	cut := t.opts.Width
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}

// Record writes one record.
func (t *Tracer) Record(r journal.Record) error {
	v, err := schema.Decode(r.Payload)
	if err != nil {
		t.printf("%6d %-12s <payload does not decode: %v>\n", r.Seq, r.Kind, err)
		return t.err
	}
	if t.opts.JSON {
		line, _ := json.Marshal(struct {
			Seq     uint64          `json:"seq"`
			Kind    string          `json:"kind"`
			Hash    string          `json:"hash,omitempty"`
			Payload json.RawMessage `json:"payload"`
		}{r.Seq, r.Kind, hashText(r.Hash), schema.ValueJSON(v)})
		t.printf("%s\n", line)
		return t.err
	}
	m, _ := v.(*schema.Map)
	get := func(k string) schema.Value { x, _ := m.Get(k); return x }
	str := func(k string) string { s, _ := get(k).(string); return s }
	short := func(k string) string { return shortRef(str(k)) }
	key := ""
	if k := get("key"); k != nil {
		key = "[" + schema.String(k) + "]"
	}
	switch r.Kind {
	case world.KindManifest:
		t.printf("%6d manifest %s\n", r.Seq, short("manifest"))
	case world.KindEvent:
		t.printf("%6d %s event %s%s %s\n", r.Seq, stampTime(get("stamp")), str("schema"), key, t.clip(get("value")))
	case world.KindReceipt:
		line := fmt.Sprintf("%6d %s receipt %s %s from %s", r.Seq, stampTime(get("stamp")), short("intent"), str("status"), str("adapter"))
		if e := str("error"); e != "" {
			line += ": " + e
		} else if p := get("payload"); p != nil {
			line += " " + t.clip(p)
		}
		t.printf("%s\n", line)
	case world.KindRaised:
		t.printf("%6d   → event %s%s %s (%s)\n", r.Seq, str("schema"), key, t.clip(get("value")), origin(get("origin")))
	case world.KindState:
		state := "deleted"
		if s := str("state"); s != "" {
			state = short("state")
			if t.opts.CAS != nil {
				if ref, err := cas.ParseRef(s); err == nil {
					if b, err := t.opts.CAS.Get(context.Background(), ref); err == nil {
						if sv, err := schema.Decode(b); err == nil {
							state = t.clip(sv)
						}
					}
				}
			}
		}
		t.printf("%6d   → state %s%s = %s\n", r.Seq, str("reducer"), key, state)
	case world.KindReducerError:
		t.printf("%6d   ✗ reducer %s%s failed on %s: %s\n", r.Seq, str("reducer"), key, str("event"), str("error"))
	case world.KindPlanStarted:
		t.printf("%6d   → plan %s #%s started\n", r.Seq, str("plan"), schema.String(get("plan_id")))
	case world.KindPlanEnded:
		line := fmt.Sprintf("%6d   → plan %s #%s ended %s", r.Seq, str("plan"), schema.String(get("plan_id")), str("status"))
		if e, ok := get("error").(*schema.Map); ok {
			step, _ := e.Get("step")
			msg, _ := e.Get("message")
			line += fmt.Sprintf(" at step %v: %v", step, msg)
		}
		if res := get("result"); res != nil {
			line += " result " + t.clip(res)
		}
		t.printf("%s\n", line)
	case world.KindIntent:
		t.printf("%6d   → effect %s %s %s (grant %s, %s)\n", r.Seq, str("kind"), short("intent"), t.clip(get("params")), str("grant"), origin(get("origin")))
	case world.KindDenied:
		t.printf("%6d   ✗ denied %s (%s, %s): %s\n", r.Seq, str("kind"), str("stage"), origin(get("origin")), str("reason"))
	case world.KindRejected:
		t.printf("%6d   ✗ receipt %s rejected: %s\n", r.Seq, short("intent"), str("reason"))
	case world.KindSnapshot:
		t.printf("%6d   · snapshot %s\n", r.Seq, short("snapshot"))
	case world.KindFork:
		t.printf("%6d fork: forked from world %s at seq %s (%s): the records before are that world's, this one and those after this world's own\n", r.Seq, str("world"), schema.String(get("seq")), short("hash"))
	default:
		t.printf("%6d %s %s\n", r.Seq, r.Kind, t.clip(v))
	}
	return t.err
}

func hashText(r cas.Ref) string {
	if !r.Valid() {
		return ""
	}
	return r.String()
}

func stampTime(v schema.Value) string {
	m, ok := v.(*schema.Map)
	if !ok {
		return "-"
	}
	n, _ := m.Get("now")
	ns, _ := n.(uint64)
	return time.Unix(0, int64(ns)).UTC().Format("15:04:05.000")
}

func origin(v schema.Value) string {
	m, ok := v.(*schema.Map)
	if !ok {
		return "?"
	}
	get := func(k string) string {
		x, ok := m.Get(k)
		if !ok {
			return ""
		}
		if s, ok := x.(string); ok {
			return s
		}
		return schema.String(x)
	}
	switch {
	case get("reducer") != "":
		return "from reducer " + get("reducer")
	case get("receipt") != "":
		return "receipt of " + shortRef(get("receipt"))
	case get("plan") != "":
		return "from plan " + get("plan") + " #" + get("plan_id")
	case get("kind") == "plan":
		return "plan " + get("name") + " #" + get("plan_id") + " step " + get("step")
	case get("kind") == "reducer":
		k := get("key")
		if k != "" && k != "null" {
			return "reducer " + get("name") + "[" + k + "]"
		}
		return "reducer " + get("name")
	}
	return strings.TrimSpace(string(schema.ValueJSON(v)))
}

func shortRef(s string) string {
	if r, err := cas.ParseRef(s); err == nil {
		return r.Short()
	}
	return s
}
