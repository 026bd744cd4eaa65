package ui

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/agent/session"
	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

//go:embed assets
var assets embed.FS

// pageNames are the pages, each a template of assets/ rendered inside
// assets/layout.html.
var pageNames = []string{"worlds.html", "timeline.html", "records.html", "record.html", "blob.html", "replay.html", "error.html", "evals.html", "evalrun.html"}

func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/parts.html", "assets/"+name)
		if err != nil {
			return nil, fmt.Errorf("ui: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	static, _ := fs.Sub(assets, "assets/static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.worlds)
	s.mux.HandleFunc("GET /w/{world}", s.timeline)
	s.mux.HandleFunc("GET /w/{world}/events", s.events)
	s.mux.HandleFunc("GET /w/{world}/records", s.records)
	s.mux.HandleFunc("GET /w/{world}/r/{seq}", s.record)
	s.mux.HandleFunc("GET /w/{world}/replay", s.replay)
	s.mux.HandleFunc("POST /w/{world}/replay", s.replay)
	s.mux.HandleFunc("POST /w/{world}/decide", s.decideCall)
	s.mux.HandleFunc("GET /blob/{ref}", s.blob)
	s.mux.HandleFunc("GET /evals", s.evals)
	s.mux.HandleFunc("GET /evals/{run}", s.evalRun)
	s.mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("no page at %s: start from the list of worlds", r.URL.Path))
	})
}

// page is what every page's layout reads.
type page struct {
	Title string
	Store string
	Evals bool   // the view shows eval runs: the header links them
	World string // the world the page is about, if one
	Tab   string // timeline, records, replay
	Form  string // the form token the page's forms carry
	Data  any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, name string, p page) {
	p.Store, p.Form = s.name, s.form
	p.Evals = s.evalRuns != nil
	var b bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&b, "layout", p); err != nil {
		s.log.Error("ui: render", "page", name, "err", err)
		http.Error(w, "the page failed to render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

// fail shows an error page: what failed, and what to do about it where
// the error says.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	if r.Context().Err() != nil {
		return // the browser left
	}
	s.log.Info("ui: page failed", "path", r.URL.Path, "status", code, "err", err)
	var b bytes.Buffer
	p := page{Title: http.StatusText(code), Store: s.name, World: r.PathValue("world"), Data: err.Error()}
	if terr := s.pages["error.html"].ExecuteTemplate(&b, "layout", p); terr != nil {
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// world returns the world a request names, checked to have records.
func (s *Server) world(w http.ResponseWriter, r *http.Request) (string, journal.Head, bool) {
	name := r.PathValue("world")
	if err := journal.ValidateWorld(name); err != nil {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("world %q: %w", name, err))
		return "", journal.Head{}, false
	}
	head, err := s.src.Head(r.Context(), name)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, fmt.Errorf("world %s: %w", name, err))
		return "", head, false
	}
	if head.Seq == 0 {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("world %s has no records in store %s: see the list of worlds", name, s.name))
		return "", head, false
	}
	return name, head, true
}

// worlds is the list of the store's worlds and their chats.
func (s *Server) worlds(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	names, err := s.src.Worlds(ctx)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, fmt.Errorf("list the worlds of store %s: %w", s.name, err))
		return
	}
	var rows []worldRow
	for _, name := range names {
		rows = append(rows, s.worldRow(ctx, name))
	}
	// The world last active first, as a list of chats is ordered; worlds
	// with no input yet last, by name.
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].LastActivityNS > rows[j].LastActivityNS })
	s.render(w, r, "worlds.html", page{Title: "worlds", Data: rows})
}

// worldRow is a world as the list of worlds shows it: its summary, and
// for an agent world where it stands and how many failures its turns had.
type worldRow struct {
	*session.WorldSummary
	Err string
	// Status is where the world's chats stand: "waiting for approval"
	// (a call waits), "running" (a turn is in progress), "failed" (the
	// last turn failed or a guard stopped it), "ok", or "" for a world
	// without turns.
	Status string
	// FailedTurns counts the turns where something failed (failed), and
	// FailedCalls the tool calls that failed (callFailed).
	FailedTurns, FailedCalls int
}

// StatusClass is Status as a CSS class.
func (w worldRow) StatusClass() string {
	switch w.Status {
	case "waiting for approval":
		return "waiting"
	}
	return w.Status
}

// Failures counts the failed turns and calls.
func (w worldRow) Failures() int { return w.FailedTurns + w.FailedCalls }

func (s *Server) worldRow(ctx context.Context, name string) worldRow {
	sum, err := session.Summarize(ctx, s.src, s.src, name)
	if err != nil {
		return worldRow{WorldSummary: &session.WorldSummary{World: name}, Err: err.Error()}
	}
	row := worldRow{WorldSummary: sum}
	if len(sum.Chats) == 0 {
		return row
	}
	rd := session.NewReader(s.src)
	if err := s.src.Read(ctx, name, 1, rd.Record); err != nil {
		row.Err = fmt.Sprintf("read world %s: %v", name, err)
		return row
	}
	turns := rd.Turns()
	for _, t := range turns {
		if failed(t) {
			row.FailedTurns++
		}
		for _, r := range t.Rounds {
			for _, c := range r.Calls {
				if callFailed(c) {
					row.FailedCalls++
				}
				if c.Approval == "waiting" && t.Outcome == "" {
					row.Status = "waiting for approval"
				}
			}
		}
		if t.Outcome == "" && row.Status == "" {
			row.Status = "running"
		}
	}
	if row.Status == "" && len(turns) > 0 {
		row.Status = "ok"
		if last := turns[len(turns)-1]; last.Outcome == "failed" || last.Outcome == "stopped" {
			row.Status = "failed"
		}
	}
	return row
}

// timeline is a world's session: its turns for an agent world, its newest
// records otherwise; the page follows it live.
func (s *Server) timeline(w http.ResponseWriter, r *http.Request) {
	name, _, ok := s.world(w, r)
	if !ok {
		return
	}
	f := newFollower(s.src, name)
	if err := f.advance(r.Context()); err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	q := r.URL.Query()
	data := struct {
		timelineView
		TL              timelineView // the same, for the template that renders it alone
		Decided, As, At string       // a decision the page's buttons just sent
	}{TL: s.timelineView(r.Context(), f, filterOf(q)), Decided: q.Get("decided"), As: q.Get("as"), At: q.Get("at")}
	data.timelineView = data.TL
	s.render(w, r, "timeline.html", page{Title: name, World: name, Tab: "timeline", Data: data})
}

// recordsPage is how many records a page of the records list holds.
const recordsPage = 200

// records lists a world's records, a page at a time.
func (s *Server) records(w http.ResponseWriter, r *http.Request) {
	name, head, ok := s.world(w, r)
	if !ok {
		return
	}
	from := uint64(1)
	if v := r.URL.Query().Get("from"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			s.fail(w, r, http.StatusBadRequest, fmt.Errorf("from=%q: want a seq, 1 or more", v))
			return
		}
		from = n
	}
	if from > head.Seq {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("world %s has no records from seq %d: its records are 1 to %d", name, from, head.Seq))
		return
	}
	var lines []recordLine
	var buf bytes.Buffer
	tr := replay.NewTracer(&buf, replay.TraceOptions{CAS: s.src, Width: 200})
	err := s.src.Read(r.Context(), name, from, func(rec journal.Record) error {
		if len(lines) == recordsPage {
			return errStop
		}
		lines = append(lines, traceLine(tr, &buf, rec))
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		s.fail(w, r, http.StatusInternalServerError, fmt.Errorf("world %s from seq %d: %w", name, from, err))
		return
	}
	data := struct {
		Lines      []recordLine
		Head       uint64
		Prev, Next uint64
	}{Lines: lines, Head: head.Seq}
	if from > 1 {
		data.Prev = max(from, recordsPage+1) - recordsPage
	}
	if n := uint64(len(lines)); n > 0 && from+n <= head.Seq {
		data.Next = from + n
	}
	s.render(w, r, "records.html", page{Title: name + " records", World: name, Tab: "records", Data: data})
}

// errStop ends a journal read early.
var errStop = errors.New("ui: stop reading")

// recordLine is a record as the records list shows it.
type recordLine struct {
	Seq  uint64
	Kind string
	Text string
}

// traceLine is the line replay's tracer writes for rec, without its seq.
func traceLine(tr *replay.Tracer, buf *bytes.Buffer, rec journal.Record) recordLine {
	buf.Reset()
	_ = tr.Record(rec)
	text := strings.TrimSpace(strings.TrimRight(buf.String(), "\n"))
	text = strings.TrimSpace(strings.TrimPrefix(text, strconv.FormatUint(rec.Seq, 10)))
	return recordLine{Seq: rec.Seq, Kind: rec.Kind, Text: text}
}

// record shows one record, decoded, its refs linked to their blobs.
func (s *Server) record(w http.ResponseWriter, r *http.Request) {
	name, head, ok := s.world(w, r)
	if !ok {
		return
	}
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil || seq == 0 || seq > head.Seq {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("world %s has no record %q: its records are 1 to %d", name, r.PathValue("seq"), head.Seq))
		return
	}
	var rec *journal.Record
	err = s.src.Read(r.Context(), name, seq, func(x journal.Record) error {
		rec = &x
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) || rec == nil {
		s.fail(w, r, http.StatusInternalServerError, fmt.Errorf("world %s record %d: %v", name, seq, err))
		return
	}
	data := struct {
		Rec        journal.Record
		JSON       template.HTML
		Head       uint64
		Prev, Next uint64
	}{Rec: *rec, JSON: s.linkRefs(r.Context(), replay.PayloadJSON(rec.Payload)), Head: head.Seq, Prev: seq - 1}
	if seq < head.Seq {
		data.Next = seq + 1
	}
	s.render(w, r, "record.html", page{Title: fmt.Sprintf("%s #%d", name, seq), World: name, Tab: "records", Data: data})
}

// maxBlobView is how many bytes of a blob the blob page shows.
const maxBlobView = 1 << 20

// blob shows a blob: a CBOR node as JSON with its refs linked, text as
// text, anything else as hex; with ?raw=1, its bytes as a download.
func (s *Server) blob(w http.ResponseWriter, r *http.Request) {
	ref, err := cas.ParseRef(r.PathValue("ref"))
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("blob %q: %w", r.PathValue("ref"), err))
		return
	}
	b, err := s.src.Get(r.Context(), ref)
	kept := false
	if errors.Is(err, cas.ErrNotFound) {
		if b, kept = s.keptBlob(ref); kept {
			err = nil
		}
	}
	switch {
	case errors.Is(err, cas.ErrNotFound):
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("blob %s is not in store %s (a trimmed bundle leaves some out)", ref, s.name))
		return
	case err != nil:
		s.fail(w, r, http.StatusInternalServerError, fmt.Errorf("blob %s: %w", ref, err))
		return
	}
	if r.URL.Query().Get("raw") == "1" {
		// Never shown in the page's origin: the bytes are the store's.
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="`+strings.ReplaceAll(ref.String(), ":", "-")+`"`)
		_, _ = w.Write(b)
		return
	}
	data := struct {
		Ref  string
		Size int
		As   string // node, text or bytes
		Body template.HTML
		Cut  bool
		Kept bool // derived by the last replay, not in the store
	}{Ref: ref.String(), Size: len(b), Kept: kept}
	if v, err := schema.Decode(b); err == nil {
		data.As, data.Body = "node", s.linkRefs(r.Context(), replay.IndentJSON(v))
	} else {
		if len(b) > maxBlobView {
			b, data.Cut = b[:maxBlobView], true
			for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.Valid(b); i++ {
				b = b[:len(b)-1] // a character cut in two
			}
		}
		if utf8.Valid(b) {
			data.As, data.Body = "text", template.HTML(template.HTMLEscapeString(string(b)))
		} else {
			data.As, data.Body = "bytes", template.HTML(template.HTMLEscapeString(hexDump(b)))
		}
	}
	s.render(w, r, "blob.html", page{Title: "blob " + ref.Short(), Data: data})
}

// hexDump is b in rows of 16 bytes: offset, hex, printable ASCII.
func hexDump(b []byte) string {
	var out strings.Builder
	for i := 0; i < len(b); i += 16 {
		row := b[i:min(i+16, len(b))]
		fmt.Fprintf(&out, "%08x  %-48x  ", i, row)
		for _, c := range row {
			if c < 32 || c > 126 {
				c = '.'
			}
			out.WriteByte(c)
		}
		out.WriteByte('\n')
	}
	return out.String()
}

// manifestOf returns the manifest world last recorded.
func manifestOf(ctx context.Context, src Source, name string) (cas.Ref, error) {
	var ref cas.Ref
	err := src.Read(ctx, name, 1, func(r journal.Record) error {
		if r.Kind == world.KindManifest {
			in, err := world.DecodeInput(r)
			if err != nil {
				return err
			}
			ref = in.Manifest
		}
		return nil
	})
	return ref, err
}
