package ui

import (
	"errors"
	"fmt"
	"html/template"

	"github.com/demiurge-dev/demiurge/cas"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/replay"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// replayView is what the replay page shows.
type replayView struct {
	Form        string // the form token
	Offered     bool   // the server has reducers to replay with
	Ran         bool
	FromGenesis bool
	Elapsed     string
	// On success:
	Result *world.RerunResult
	// When it fails:
	Err        string
	Divergence *divergenceView
}

// divergenceView is a divergence, both sides.
type divergenceView struct {
	*world.DivergenceError
	JournalKind, DerivedKind string
	Records                  []sideRow // the journal's record and the derived one, side by side
	States                   []sideRow // the states they name, side by side
	Changes                  []string  // where the states differ, by path
	MoreChanges              int
	Report                   string // what demiurge replay prints
}

// sideRow is a row of a side-by-side view: a line of each side (Op "="),
// a changed line ("~"), a line only on the left ("-") or the right ("+"),
// or unchanged lines left out ("…", with their count in Skip).
type sideRow struct {
	Op          string
	LN, RN      int
	Left, Right string
	Skip        int
	// LeftHTML and RightHTML are the lines with their refs linked.
	LeftHTML, RightHTML template.HTML
}

// replay runs a replay of a world on the page: every derived record is
// re-derived and compared, and a divergence is shown side by side.
func (s *Server) replay(w http.ResponseWriter, r *http.Request) {
	name, _, ok := s.world(w, r)
	if !ok {
		return
	}
	// A replay runs on a POST from the page's form (ServeHTTP checked its
	// form token): a GET only shows the form, so that no other page can
	// start one by naming the address.
	v := replayView{Offered: s.reducers != nil, Ran: r.Method == http.MethodPost, FromGenesis: r.FormValue("genesis") == "1", Form: s.form}
	if v.Ran && v.Offered {
		s.log.Info("ui: replay", "world", name, "from_genesis", v.FromGenesis)
		select {
		case s.replays <- struct{}{}:
			defer func() { <-s.replays }()
		case <-r.Context().Done():
			return
		}
		start := time.Now()
		v.Result, v.Err, v.Divergence = s.rerun(r, name, v.FromGenesis)
		v.Elapsed = duration(float64(time.Since(start)) / float64(time.Millisecond))
	}
	s.render(w, r, "replay.html", page{Title: name + " replay", World: name, Tab: "replay", Data: v})
}

func (s *Server) rerun(r *http.Request, name string, fromGenesis bool) (*world.RerunResult, string, *divergenceView) {
	ctx := r.Context()
	ref, err := manifestOf(ctx, s.src, name)
	if err != nil {
		return nil, fmt.Sprintf("world %s: read its manifest: %v", name, err), nil
	}
	if !ref.Valid() {
		return nil, fmt.Sprintf("world %s has no manifest record: nothing to replay it under", name), nil
	}
	cat, err := schema.LoadFromCAS(ctx, s.src, ref, s.reducers.LoadOptions())
	if err != nil {
		return nil, fmt.Sprintf("world %s: its manifest %s does not load with this binary's reducers: %v", name, ref.Short(), err), nil
	}
	res, err := world.Rerun(ctx, world.RerunOptions{Name: name, Catalog: cat, Reducers: s.reducers,
		Storage: readStorage{s.src}, FromGenesis: fromGenesis})
	if d, ok := errors.AsType[*world.DivergenceError](err); ok {
		s.keep(d.Blobs)
		v := divergence(d, err)
		for _, rows := range [][]sideRow{v.Records, v.States} {
			for i := range rows {
				rows[i].LeftHTML, rows[i].RightHTML = s.linkRefs(ctx, rows[i].Left), s.linkRefs(ctx, rows[i].Right)
			}
		}
		return nil, err.Error(), v
	}
	if err != nil {
		return nil, err.Error(), nil
	}
	return res, "", nil
}

// keep keeps the blobs the diverging step derived (the replayed state
// among them), which exist nowhere else, so that the page's links to them
// work until the next divergence.
func (s *Server) keep(blobs [][]byte) {
	kept := make(map[cas.Ref][]byte, len(blobs))
	for _, b := range blobs {
		kept[cas.Sum(b)] = b
	}
	s.keptMu.Lock()
	s.kept = kept
	s.keptMu.Unlock()
}

// keptBlob returns a blob the last divergence kept.
func (s *Server) keptBlob(ref cas.Ref) ([]byte, bool) {
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	b, ok := s.kept[ref]
	return b, ok
}

// divergence lays a divergence out side by side.
func divergence(d *world.DivergenceError, err error) *divergenceView {
	v := &divergenceView{DivergenceError: d, Report: replay.Describe(err)}
	var left, right string
	if d.Journal != nil {
		v.JournalKind, left = d.Journal.Kind, replay.PayloadJSON(d.Journal.Payload)
	}
	if d.Derived != nil {
		v.DerivedKind, right = d.Derived.Kind, replay.PayloadJSON(d.Derived.Payload)
	}
	v.Records = sideBySide(left, right)
	js, ds := d.JournalState, d.DerivedState
	if js != nil || ds != nil {
		var l, r string
		if js != nil && js.Err == nil {
			l = replay.IndentJSON(js.Value)
		}
		if ds != nil && ds.Err == nil {
			r = replay.IndentJSON(ds.Value)
		}
		v.States = sideBySide(l, r)
		if js != nil && ds != nil && js.Err == nil && ds.Err == nil {
			var total int
			v.Changes, total = replay.ValueChanges(js.Value, ds.Value, 40)
			v.MoreChanges = total - len(v.Changes)
		}
	}
	return v
}

// contextLines is how many unchanged lines around a change the side-by-side
// view keeps.
const contextLines = 4

// sideBySide lays two texts out in rows: unchanged lines beside each
// other, changed ones marked, long unchanged runs left out. It reads the
// line diff replay.Diff makes.
func sideBySide(left, right string) []sideRow {
	if left != "" && !strings.HasSuffix(left, "\n") {
		left += "\n"
	}
	if right != "" && !strings.HasSuffix(right, "\n") {
		right += "\n"
	}
	ls, rs := splitLines(left), splitLines(right)
	var rows []sideRow
	li, ri := 0, 0 // lines laid out so far
	same := func(to int) {
		// the unchanged lines up to left line to (0-based, exclusive)
		n := to - li
		for k := 0; k < n; k++ {
			if n > 2*contextLines+1 && k == contextLines {
				skip := n - 2*contextLines
				rows = append(rows, sideRow{Op: "…", Skip: skip})
				k += skip - 1
				continue
			}
			rows = append(rows, sideRow{Op: "=", LN: li + k + 1, RN: ri + k + 1, Left: ls[li+k], Right: rs[ri+k]})
		}
		li, ri = li+n, ri+n
	}
	var dels, adds []string
	flush := func() {
		for k := 0; k < max(len(dels), len(adds)); k++ {
			row := sideRow{Op: "~"}
			if k < len(dels) {
				li++
				row.LN, row.Left = li, dels[k]
			} else {
				row.Op = "+"
			}
			if k < len(adds) {
				ri++
				row.RN, row.Right = ri, adds[k]
			} else {
				row.Op = "-"
			}
			rows = append(rows, row)
		}
		dels, adds = nil, nil
	}
	pending := 0 // unchanged lines of the diff's context not laid out yet
	diff := replay.Diff("journal", left, "replay", right)
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "@@"):
			flush()
			// @@ -a,b +c,d @@: the hunk starts at left line a.
			f := strings.Fields(l)
			if len(f) < 3 {
				continue
			}
			a, _, _ := strings.Cut(strings.TrimPrefix(f[1], "-"), ",")
			n, err := strconv.Atoi(a)
			if err != nil {
				continue
			}
			if n > 0 && !strings.HasSuffix(f[1], ",0") {
				n-- // 1-based; ",0" names the line before an insertion
			}
			pending = max(min(n, len(ls))-li, 0)
		case strings.HasPrefix(l, "---"), strings.HasPrefix(l, "+++"), strings.HasPrefix(l, `\`):
		case strings.HasPrefix(l, "-"):
			if len(adds) > 0 {
				flush()
			}
			same(li + pending)
			pending = 0
			dels = append(dels, l[1:])
		case strings.HasPrefix(l, "+"):
			same(li + pending)
			pending = 0
			adds = append(adds, l[1:])
		case strings.HasPrefix(l, " "):
			flush()
			pending++
		}
	}
	flush()
	same(len(ls))
	return rows
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
