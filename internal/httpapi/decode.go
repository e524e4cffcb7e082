package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// decodeObject decodes a request body holding exactly one JSON object into
// dst, refusing unknown fields, trailing data and member names that appear
// twice in one object at any depth. Its errors are problems that name the
// field: malformed-json for syntax, wrong-type for a value of the wrong
// JSON type, invalid-request for an unknown or repeated field.
func decodeObject(body io.Reader, dst any) error {
	b, err := io.ReadAll(body)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return err
		}
		return errorf(ptInvalid, "the request body could not be read: %v", err)
	}
	return decodeJSON(b, dst, 0)
}

// decodeJSON is decodeObject over a body already read, checking repeated
// names dupDepth objects deep (0: every depth).
func decodeJSON(b []byte, dst any, dupDepth int) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errorf(ptMalformedJSON, "unexpected data after the JSON object")
	}
	return checkDuplicates(b, dupDepth)
}

// jsonError turns an encoding/json error into a problem naming the field.
func jsonError(err error) error {
	var mb *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mb):
		return err
	case errors.Is(err, io.EOF):
		return errorf(ptMalformedJSON, "the request body is empty; expected a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(ptMalformedJSON, "the request body ends inside a JSON value")
	case errors.As(err, &se):
		return errorf(ptMalformedJSON, "malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.As(err, &te):
		if te.Field == "" {
			return errorf(ptWrongType, "the request body must be a JSON object, not a JSON %s", te.Value)
		}
		return errorf(ptWrongType, "field %s must be a JSON %s, not a JSON %s", te.Field, jsonTypeName(te.Type.Kind().String()), te.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return errorf(ptInvalid, "unknown field %s", name)
	}
	return errorf(ptMalformedJSON, "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

func jsonTypeName(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	}
	return "number"
}

// jsonKind names the JSON type of a raw value by its first byte.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// parseCents reads a JSON integer exactly (no float on the way); a fraction,
// exponent, string or out-of-range value names the field.
func parseCents(field string, raw json.RawMessage, max int64) (int64, error) {
	if raw == nil || jsonKind(raw) == "null" {
		return 0, errorf(ptInvalid, "field %s is required", field)
	}
	if k := jsonKind(raw); k != "number" {
		return 0, errorf(ptWrongType, "field %s must be a JSON number, not a JSON %s", field, k)
	}
	s := string(bytes.TrimSpace(raw))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if strings.ContainsAny(s, ".eE") {
			return 0, errorf(ptInvalid, "field %s must be a whole number of cents, got %s", field, s)
		}
		return 0, errorf(ptInvalid, "field %s = %s is out of range (0..%d)", field, s, max)
	}
	if n < 0 || n > max {
		return 0, errorf(ptInvalid, "field %s = %d is out of range (0..%d)", field, n, max)
	}
	return n, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// writeJSON sends b (a complete JSON document) with status.
func writeJSON(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// marshal encodes v followed by a newline, without HTML escaping (details
// quote "<operator token>" and such literally). v is always one of this
// package's response types, which cannot fail to encode.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("httpapi: encoding a response: " + err.Error())
	}
	return buf.Bytes()
}
