package serve

import (
	"encoding/json"
	"errors"
	"net/http"
)

// apiError is an error the API answers with: an HTTP status and the body
// OpenAI's API answers errors with, {"error": {"message", "type",
// "param", "code"}}, on every route, native or OpenAI-compatible, so a
// client reads one shape.
type apiError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"` // a string, or null
	Code    any    `json:"code"`  // a string, or null
	err     error  // what it is, for errors.Is
}

func (e *apiError) Error() string { return e.Message }

// Unwrap returns what the error is, if it says.
func (e *apiError) Unwrap() error { return e.err }

// The error types, as OpenAI names them.
const (
	typeInvalid   = "invalid_request_error"
	typeAuth      = "authentication_error"
	typePerm      = "permission_error"
	typeNotFound  = "not_found_error"
	typeConflict  = "conflict_error"
	typeRateLimit = "rate_limit_error"
	typeServer    = "server_error"
	typeBusy      = "service_unavailable_error"
)

// invalid is a 400 about param (code may be "").
func invalid(param, code, msg string) *apiError {
	e := &apiError{Status: http.StatusBadRequest, Type: typeInvalid, Message: msg}
	if param != "" {
		e.Param = param
	}
	if code != "" {
		e.Code = code
	}
	return e
}

// notFound is a 404.
func notFound(code, msg string) *apiError {
	return &apiError{Status: http.StatusNotFound, Type: typeNotFound, Code: code, Message: msg}
}

// conflict is a 409.
func conflict(code, msg string) *apiError {
	return &apiError{Status: http.StatusConflict, Type: typeConflict, Code: code, Message: msg}
}

// serverError is a 500 saying what failed. Its message is the error's:
// errors of the store and the world name no secret (the store's URL is
// redacted where it is named).
func serverError(err error) *apiError {
	return &apiError{Status: http.StatusInternalServerError, Type: typeServer, Code: "server_error", Message: err.Error()}
}

// writeError answers err: an *apiError as it is, anything else as a 500.
func writeError(w http.ResponseWriter, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = serverError(err)
	}
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="demiurge"`)
	}
	writeJSON(w, e.Status, map[string]*apiError{"error": e})
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(map[string]*apiError{"error": serverError(err)})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// jsonMarshal is json.Marshal.
func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
