package ui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// decideCall answers a call that waits for approval, from the Approve and
// Deny buttons of the timeline (a POST whose form token ServeHTTP
// checked): it hands the decision to Options.Decide, which journals it as
// demiurge approve does, and goes back to the timeline, which shows the
// call approved or denied as the record lands.
func (s *Server) decideCall(w http.ResponseWriter, r *http.Request) {
	name, _, ok := s.world(w, r)
	if !ok {
		return
	}
	d := Decision{World: name, Chat: r.PostForm.Get("chat"), Call: r.PostForm.Get("call"), Reason: strings.TrimSpace(r.PostForm.Get("reason"))}
	switch r.PostForm.Get("decision") {
	case "approve":
		d.Approve = true
	case "deny":
	default:
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("decision %q: want approve or deny", r.PostForm.Get("decision")))
		return
	}
	if d.Chat == "" || d.Call == "" {
		s.fail(w, r, http.StatusBadRequest, errors.New("the form names no chat or no call: send it from the call's buttons in the timeline"))
		return
	}
	if s.decide == nil {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("this view answers no calls: %s", s.approveCommand(d)))
		return
	}
	res, err := s.decide(r.Context(), d)
	if err != nil {
		s.log.Info("ui: decision not taken", "world", name, "chat", d.Chat, "call", d.Call, "approve", d.Approve, "err", err)
		s.fail(w, r, http.StatusConflict, fmt.Errorf("%s call %s of chat %s: %w", verb(d.Approve), d.Call, d.Chat, err))
		return
	}
	s.log.Info("ui: decision", "world", name, "chat", d.Chat, "call", d.Call, "approve", d.Approve, "seq", res.Seq, "writer", res.Writer)
	// Back to the page the buttons were on, with its filter.
	back, _ := url.ParseQuery(strings.TrimPrefix(r.PostForm.Get("back"), "?"))
	q := filterOf(back).values()
	q.Set("decided", d.Call)
	q.Set("as", map[bool]string{true: "approved", false: "denied"}[d.Approve])
	if res.Seq != 0 {
		q.Set("at", strconv.FormatUint(res.Seq, 10))
	}
	http.Redirect(w, r, "/w/"+url.PathEscape(name)+"?"+q.Encode()+"#call-"+url.PathEscape(d.Call), http.StatusSeeOther)
}

func verb(approve bool) string {
	if approve {
		return "approve"
	}
	return "deny"
}

// approveCommand is the command that answers d at a terminal.
func (s *Server) approveCommand(d Decision) string {
	return fmt.Sprintf("demiurge %s %s %s --world %s --chat %s answers it", verb(d.Approve), s.manifestOf(d.World), d.Call, d.World, d.Chat)
}

// manifestOf is the manifest world was last run with, as a command names
// it (quoted for a POSIX shell where it must be), or MANIFEST when the
// view does not know it.
func (s *Server) manifestOf(world string) string {
	if s.manifest == nil {
		return "MANIFEST"
	}
	m := s.manifest(world)
	switch {
	case m == "":
		return "MANIFEST"
	case strings.Trim(m, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+,:@") == "":
		return m
	}
	return "'" + strings.ReplaceAll(m, "'", `'\''`) + "'"
}
