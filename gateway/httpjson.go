package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
)

// MaxBodyBytes bounds every JSON request body the gateway accepts.
const MaxBodyBytes = 256 << 10

// errorBody is the one error shape of every REST endpoint.
type errorBody struct {
	Error string `json:"error"`
}

// writeJSON writes v with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// writeError writes {"error": msg} with the given status.
func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, errorBody{Error: fmt.Sprintf(format, args...)})
}

// decodeJSON reads exactly one JSON object from r's body into dst. It rejects
// bodies over MaxBodyBytes, unknown fields, trailing data and a wrong content
// type, returning an error whose text is fit for the client.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("content type must be application/json, got %q", ct)
	}
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var tooBig *http.MaxBytesError
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &tooBig):
			return &bodyTooLargeError{limit: tooBig.Limit}
		case errors.Is(err, io.EOF):
			return errors.New("request body is empty; a JSON object is required")
		case errors.As(err, &syntax):
			return fmt.Errorf("malformed JSON at byte %d: %s", syntax.Offset, syntax.Error())
		case errors.As(err, &typ):
			if typ.Field != "" {
				return fmt.Errorf("field %q must be %s, got a JSON %s", typ.Field, jsonKind(typ.Type), typ.Value)
			}
			return fmt.Errorf("request body must be %s, got a JSON %s", jsonKind(typ.Type), typ.Value)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return errors.New("malformed JSON: unexpected end of body")
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fmt.Errorf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		default:
			return fmt.Errorf("malformed JSON: %s", err.Error())
		}
	}
	if dec.More() {
		return errors.New("request body must hold a single JSON object")
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &bodyTooLargeError{limit: tooBig.Limit}
		}
		return errors.New("request body must hold a single JSON object")
	}
	return nil
}

// jsonKind names what a Go type accepts in JSON, for error messages that a
// client can act on (never a Go type name).
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "a JSON object"
	case reflect.Slice, reflect.Array:
		return "a JSON array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a valid JSON value"
}
