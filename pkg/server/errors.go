package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hectormem/hector/internal/jsondepth"
	"github.com/hectormem/hector/pkg/erase"
	"github.com/hectormem/hector/pkg/errkind"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/sqldb"
)

// apiError is an error with its HTTP status and a stable code; it is
// written as {"error": {"code": …, "message": …}}.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.message }

func badRequest(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, "invalid_argument", fmt.Sprintf(format, args...)}
}

var (
	errUnauthenticated = &apiError{http.StatusUnauthorized, "unauthenticated", "missing or invalid credential: send Authorization: Bearer <API key or JWT>"}
	errForbidden       = &apiError{http.StatusForbidden, "forbidden", "this credential may not reach this resource"}
)

// toAPIError maps errors to statuses by their kind (errkind), whichever
// service returned them; anything else is a 500 whose details go to the
// log, not to the client.
func toAPIError(err error) *apiError {
	var ae *apiError
	var maxBytes *http.MaxBytesError
	var refused *facts.ValidationError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, erase.ErrInProgress):
		return &apiError{http.StatusConflict, "erasure_in_progress", err.Error() + " (GET …/erasure follows it)"}
	case errors.Is(err, facts.ErrDuplicate):
		return &apiError{http.StatusConflict, "duplicate", err.Error()}
	case errors.As(err, &refused):
		return &apiError{http.StatusBadRequest, refused.Code, refused.Message}
	case errors.As(err, &maxBytes):
		return &apiError{http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("request body over the limit of %d bytes", maxBytes.Limit)}
	case errors.Is(err, errkind.TooLarge):
		return &apiError{http.StatusRequestEntityTooLarge, "too_large", err.Error()}
	case errors.Is(err, errkind.NotFound):
		return &apiError{http.StatusNotFound, "not_found", err.Error()}
	case errors.Is(err, errkind.Conflict):
		return &apiError{http.StatusConflict, "conflict", err.Error()}
	case errors.Is(err, errkind.AlreadyExists):
		return &apiError{http.StatusConflict, "already_exists", err.Error()}
	case errors.Is(err, errkind.InvalidArgument):
		return &apiError{http.StatusBadRequest, "invalid_argument", err.Error()}
	case errors.Is(err, errkind.Upstream): // what failed is named, its secrets redacted
		return &apiError{http.StatusBadGateway, "bad_gateway", err.Error()}
	case errors.Is(err, index.ErrNeedsRebuild):
		return &apiError{http.StatusServiceUnavailable, "index_needs_rebuild", err.Error()}
	case errors.Is(err, index.ErrHealing): // says why and how far along, never where
		return &apiError{http.StatusServiceUnavailable, "index_rebuilding", err.Error()}
	// Which store is unavailable is said in general terms: the errors
	// themselves may hold addresses.
	case errors.Is(err, index.ErrStoreUnavailable):
		return errUnavailable("the index store")
	case errors.Is(err, session.ErrClosed):
		return errUnavailable("the server, which is shutting down,")
	case sqldb.DiskFull(err):
		return &apiError{http.StatusServiceUnavailable, "unavailable", "the database cannot write: no space left on device; free space on its disk, then retry"}
	case sqldb.Unavailable(err):
		return errUnavailable("the database")
	case errors.Is(err, errkind.Unavailable):
		return errUnavailable("a backing store")
	}
	return &apiError{http.StatusInternalServerError, "internal", "internal error: see the server log"}
}

// errUnavailable is a 503 for a backing store that cannot serve now; the
// details (addresses included) go to the log only.
func errUnavailable(what string) *apiError {
	return &apiError{http.StatusServiceUnavailable, "unavailable", what + " cannot serve now: retry later (GET /readyz says which store)"}
}

// retryAfterSeconds is what a 503 for an unavailable store asks clients to wait.
const retryAfterSeconds = "5"

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	switch e.code {
	case "unavailable", "erasure_in_progress", "index_rebuilding":
		w.Header().Set("Retry-After", retryAfterSeconds)
	case "rate_limited":
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.status, map[string]any{"error": map[string]string{"code": e.code, "message": e.message}})
}

// decode reads a JSON object body into v, refusing another content type
// (a browser sends text/plain, form and multipart bodies to another site
// without asking it first), invalid UTF-8 (which would be stored as
// U+FFFD), nesting deeper than maxJSONDepth, unknown fields, trailing data
// and bodies over the limit, with errors that name the field.
func decode(r *http.Request, v any) error {
	if err := requireJSON(r); err != nil {
		return err
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return err // over the limit
	}
	if err := checkJSONText(raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &typeErr):
			return badRequest("field %q must be %s, not a JSON %s", jsonPath(typeErr.Field), jsonKind(typeErr.Type), typeErr.Value)
		case errors.As(err, &syntaxErr):
			return badRequest("the body is not valid JSON (at byte %d)", syntaxErr.Offset)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return badRequest("the body is not valid JSON: it ends too early")
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return badRequest("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return badRequest("the body is not valid JSON: %v", err)
	}
	if dec.More() {
		return badRequest("the body holds more than one JSON value")
	}
	return nil
}

// jsonKind says in JSON's words what a field of Go type t takes: a
// client never sees Go's names for it.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case reflect.TypeFor[session.Message]():
		return `an object such as {"role": "user", "parts": [{"type": "text", "text": "Hello"}]}`
	case reflect.TypeFor[time.Time]():
		return "a string holding an RFC 3339 time"
	}
	if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		return "an array of " + jsonKinds(t.Elem())
	}
	return map[string]string{"string": "a string", "boolean": "true or false", "whole number": "a whole number", "number": "a number",
		"object": "an object"}[jsonName(t)]
}

// jsonKinds is jsonKind in the plural, for an array's elements.
func jsonKinds(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		return "arrays"
	}
	return map[string]string{"string": "strings", "boolean": "booleans", "whole number": "whole numbers", "number": "numbers",
		"object": "objects"}[jsonName(t)]
}

// jsonName is the JSON type of a Go type that is not an array.
func jsonName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "whole number"
	case reflect.Float32, reflect.Float64:
		return "number"
	}
	return "object" // a map or a struct: what a JSON value cannot be decoded into otherwise
}

// requireJSON refuses a body sent as anything but JSON.
func requireJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	media, _, err := mime.ParseMediaType(ct)
	if err == nil && (media == "application/json" || strings.HasSuffix(media, "+json")) {
		return nil
	}
	if ct == "" {
		ct = "none"
	}
	return &apiError{http.StatusUnsupportedMediaType, "unsupported_media_type",
		fmt.Sprintf("the body must be JSON sent with Content-Type: application/json (this request's is %s); with curl, --json '{…}' sets it", ct)}
}

// maxJSONDepth bounds how deeply a body's objects and arrays nest: no
// request needs more, and a deep one costs every later reader of it.
const maxJSONDepth = 64

// checkJSONText refuses a body that is not one JSON object of valid UTF-8
// nested at most maxJSONDepth deep. (A null body would otherwise be taken
// for an empty request, and act on it.)
func checkJSONText(raw []byte) error {
	trimmed := bytes.TrimSpace(raw)
	switch {
	case len(trimmed) == 0:
		return badRequest("the request body is empty: send a JSON object")
	case !utf8.Valid(raw):
		return badRequest("the body is not valid UTF-8 (at byte %d): send text as UTF-8", invalidUTF8At(raw))
	case trimmed[0] != '{' && json.Valid(trimmed):
		return badRequest("the body must be a JSON object ({…}), not %.20s", trimmed)
	}
	if jsondepth.Exceeds(raw, maxJSONDepth) {
		return badRequest("the body nests objects and arrays more than %d deep", maxJSONDepth)
	}
	return nil
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// jsonPath drops the Go names of embedded structs ("Event.author") from a
// decoding error's field path: clients know only the JSON names, all lowercase.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	kept := parts[:0]
	for _, p := range parts {
		if p != "" && !unicode.IsUpper(rune(p[0])) {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ".")
}
