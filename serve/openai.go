package serve

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// modelJSON is a model as OpenAI's API lists it: here, the agent.
type modelJSON struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// handleModels lists the served agents, as models.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, listOf([]modelJSON{s.modelJSON()}))
}

func (s *Server) modelJSON() modelJSON {
	return modelJSON{ID: s.name, Object: "model", OwnedBy: "demiurge"}
}

// handleModel answers one served agent.
func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	if err := s.checkModel(r.PathValue("model")); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.modelJSON())
}

// checkModel refuses a model that is no agent this server serves.
func (s *Server) checkModel(model string) error {
	if model == s.name {
		return nil
	}
	if model == "" {
		return invalid("model", "missing_model", fmt.Sprintf("name the model: this server's agent is %q (GET /v1/models)", s.name))
	}
	return &apiError{Status: http.StatusNotFound, Type: typeInvalid, Param: "model", Code: "model_not_found",
		Message: fmt.Sprintf("the model %q does not exist: this server serves the agent %q (GET /v1/models)", model, s.name)}
}

// openAIWorld is the world an OpenAI-compatible request without a
// previous response reaches: the Demiurge-World header's, else the
// server's default, else the one world the caller's token may reach.
// begins says the request begins a conversation: with NewWorlds, it then
// gets a world of its own (see newWorldFor).
func (s *Server) openAIWorld(r *http.Request, begins bool) (string, error) {
	if w := r.Header.Get("Demiurge-World"); w != "" {
		return w, s.allow(r, w)
	}
	w := s.opts.World
	if t := callerOf(r).token; t != nil && !t.Allows(w) && len(t.Worlds) == 1 {
		w = t.Worlds[0]
	}
	if err := s.allow(r, w); err != nil {
		return w, err
	}
	if s.opts.NewWorlds && begins {
		return s.newWorldFor(r, w)
	}
	return w, nil
}

// newWorldFor returns the world a conversation that begins gets under
// NewWorlds: base while it has no records, else the first of base-2,
// base-3, … that has none, is not open, and no request took, which the
// caller's token may reach (else base).
func (s *Server) newWorldFor(r *http.Request, base string) (string, error) {
	s.newWorld.Lock()
	defer s.newWorld.Unlock()
	for n := 1; ; n++ {
		w := base
		if n > 1 {
			w = fmt.Sprintf("%s-%d", base, n)
		}
		if s.allow(r, w) != nil {
			return base, nil
		}
		s.mu.Lock()
		_, open := s.worlds[w]
		s.mu.Unlock()
		if s.taken[w] || open {
			continue
		}
		head, err := s.journalStore().Head(r.Context(), w)
		if err != nil {
			return "", fmt.Errorf("world %s: %w", w, err)
		}
		if head.Seq > 0 {
			continue
		}
		s.taken[w] = true
		if w != base {
			s.log.Info("a conversation begins in a new world: the cassette replays its recording from a new world, and world "+base+" holds a session",
				"world", w)
		}
		return w, nil
	}
}

// maxFault bounds the error message an OpenAI client gets of a failed
// turn.
const maxFault = 400

// clientFault is what an OpenAI client is told of a failed turn (world,
// chat, turn): the error's first line, which says what failed, and where
// the whole of it is. A turn's error can run to many lines (a strict
// cassette's diff of the request against the recording, a provider's
// body), which a client shows its user as one message; the journal keeps
// it whole (the turn_error of the native API's events and trace). The
// server logs that line with the turn, not the rest: a diff quotes the
// conversation, which the logs never hold.
func (s *Server) clientFault(world, chat string, turn uint64, fault string) string {
	if fault == "" {
		return "the turn failed"
	}
	line, rest, _ := strings.Cut(strings.TrimSpace(fault), "\n")
	if len(line) > maxFault {
		cut := maxFault
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		line, rest = line[:cut]+"…", "…"
	}
	s.log.Warn("turn failed", "world", world, "chat", chat, "turn", turn, "err", line)
	if rest == "" {
		return line
	}
	return fmt.Sprintf("%s (the whole error: demiurge trace --world %s --chat %s, or GET /v1/worlds/%s/trace?chat=%s)", line, world, chat, url.PathEscape(world), url.QueryEscape(chat))
}

// readFields reads an OpenAI request's JSON body into its fields, and
// refuses one that is not a JSON object.
func readFields(r *http.Request) (map[string]json.RawMessage, error) {
	if err := jsonBody(r); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Type: typeInvalid, Code: "body_too_large",
				Message: fmt.Sprintf("the request's body is over %d bytes", mbe.Limit)}
		}
		return nil, invalid("", "bad_body", "read the request's body: "+err.Error())
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		return nil, invalid("", "bad_json", "the request's body is not a JSON object")
	}
	return fields, nil
}

// fieldPolicy says what a request field of OpenAI's API becomes here:
// taken (read by the handler), ignored (it changes nothing a server of
// agents can honor, and nothing a client relies on), or refused, with
// why.
type fieldPolicy struct {
	ignored map[string]bool
	refused map[string]string // field: why it cannot map
	taken   []string
}

// check refuses fields a request cannot have: those refused, and those
// OpenAI's API does not have either. A field set to null is as absent.
func (p fieldPolicy) check(fields map[string]json.RawMessage) error {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if string(fields[k]) == "null" {
			delete(fields, k)
			continue
		}
		if why, ok := p.refused[k]; ok {
			return invalid(k, "unsupported_parameter", fmt.Sprintf("%s cannot map onto an agent: %s", k, why))
		}
		if !p.ignored[k] && !slices.Contains(p.taken, k) {
			return invalid(k, "unknown_parameter", fmt.Sprintf("unrecognized request argument supplied: %s", k))
		}
	}
	return nil
}

// field decodes fields[name] into v, if it is there.
func field(fields map[string]json.RawMessage, name string, v any) error {
	raw, ok := fields[name]
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return invalid(name, "invalid_type", fmt.Sprintf("%s: %s", name, strings.TrimPrefix(err.Error(), "json: ")))
	}
	return nil
}

// refusedCommon are the request fields of both APIs that cannot map.
var refusedCommon = map[string]string{
	"tools":              "the agent's tools are its own and run on the server (they appear in the output as it calls them); client-side function tools are not supported: leave tools out",
	"functions":          "the agent's tools are its own and run on the server; client-side function tools are not supported",
	"temperature":        "the agent's model settings are the server's (demiurge serve --temperature)",
	"top_p":              "the agent's model settings are the server's",
	"top_logprobs":       "log probabilities are not kept",
	"logprobs":           "log probabilities are not kept",
	"reasoning":          "the agent's model settings are the server's (--model-option reasoning=…)",
	"reasoning_effort":   "the agent's model settings are the server's (--model-option reasoning=…)",
	"seed":               "the agent's model settings are the server's",
	"frequency_penalty":  "the agent's model settings are the server's",
	"presence_penalty":   "the agent's model settings are the server's",
	"logit_bias":         "the agent's model settings are the server's",
	"stop":               "the agent's model settings are the server's",
	"audio":              "the agent answers in text",
	"modalities":         "the agent answers in text",
	"prediction":         "predicted outputs are not supported",
	"web_search_options": "the agent's tools are its own (see GET /v1/models and the server's manifest)",
}

// idCodec encodes what a response id names: the world, the chat, the
// turn, where in the turn the response begins (the seq after which its
// events come; 0: the turn's start), and when it was made. The id is
// opaque to clients; the server checks the world against the caller's
// token like any other.
type responseRef struct {
	World   string `json:"w"`
	Chat    string `json:"c"`
	Turn    uint64 `json:"t"`
	After   uint64 `json:"a,omitempty"`
	Created int64  `json:"at"`
}

// encodeID is the id of ref with prefix ("resp_", "chatcmpl-").
func encodeID(prefix string, ref responseRef) string {
	b, _ := json.Marshal(ref)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// decodeID reads an id encodeID made.
func decodeID(prefix, id string) (responseRef, error) {
	var ref responseRef
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return ref, fmt.Errorf("%q is not an id of this server (they begin %s)", id, prefix)
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err == nil {
		err = json.Unmarshal(b, &ref)
	}
	if err != nil || ref.World == "" || ref.Chat == "" || ref.Turn == 0 {
		return ref, fmt.Errorf("%q is not an id of this server", id)
	}
	return ref, nil
}

// answerText is what an OpenAI client reads as a turn's answer: the
// model's texts of the turn's rounds, in order, a blank line between two.
func answerText(texts []string) string {
	var parts []string
	for _, t := range texts {
		if strings.TrimSpace(t) != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n")
}
