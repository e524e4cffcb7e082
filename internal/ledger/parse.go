package ledger

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// MaxLineBytes bounds one NDJSON line. An event is a few hundred bytes; a
// longer line is rejected on its own without stopping the stream.
const MaxLineBytes = 64 << 10

// fields each type accepts; anything else is an unknown field.
var allowed = map[Type]map[string]bool{
	ConduitSession: {"type": true, "id": true, "agent_id": true, "buyer_id": true, "status": true, "started_at": true, "completed_at": true, "proof_hash": true},
	AP2Transaction: {"type": true, "id": true, "provider_id": true, "buyer_id": true, "status": true, "escrow_amount_cents": true, "started_at": true, "settled_at": true},
	TaskOffer:      {"type": true, "id": true, "agent_id": true, "buyer_id": true, "status": true, "started_at": true, "decided_at": true},
}

// ParseEvent decodes one event object strictly: it must be a single JSON
// object with no duplicate, unknown or mistyped fields, every required field
// present, and the values must pass Validate. Times may carry any RFC 3339
// offset and are converted to UTC. Every error is a *FieldError
// (errkind.ErrInvalid) naming the field; the Event returned with it holds
// the event's id when the object has a valid one, and nothing else.
func ParseEvent(data []byte) (Event, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return Event{}, &FieldError{Reason: "not a JSON object: " + jsonReason(err)}
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return Event{}, &FieldError{Reason: "not a JSON object"}
	}
	raw := make(map[string]json.RawMessage, 8)
	var order []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Event{}, &FieldError{Reason: "malformed JSON: " + jsonReason(err)}
		}
		key := tok.(string) // inside an object the decoder only yields string keys here
		if _, dup := raw[key]; dup {
			return Event{}, fieldErr(key, "appears more than once")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return Event{}, fieldErr(key, "malformed JSON value: %s", jsonReason(err))
		}
		raw[key] = v
		order = append(order, key)
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return Event{}, &FieldError{Reason: "malformed JSON: " + jsonReason(err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return Event{}, &FieldError{Reason: "unexpected data after the event object"}
	}

	// Once the id has been read, a rejection names it, so that the reporter
	// can tell which event was refused.
	var failed Event
	if id, err := str(raw, "id", true); err == nil && ValidID(id) {
		failed.ID = id
	}
	var e Event
	typ, err := str(raw, "type", true)
	if err != nil {
		return failed, err
	}
	e.Type = Type(typ)
	if !e.Type.Valid() {
		return failed, fieldErr("type", "%q is not conduit_session, ap2_transaction or task_offer", typ)
	}
	for _, k := range order {
		if !allowed[e.Type][k] {
			return failed, fieldErr(k, "is not a field of %s events", e.Type)
		}
	}
	if e.ID, err = str(raw, "id", true); err != nil {
		return failed, err
	}
	if e.AgentID, err = str(raw, e.Type.agentField(), true); err != nil {
		return failed, err
	}
	if e.BuyerID, err = str(raw, "buyer_id", e.Type != ConduitSession); err != nil {
		return failed, err
	}
	status, err := str(raw, "status", true)
	if err != nil {
		return failed, err
	}
	e.Status = Status(status)
	if e.Type == AP2Transaction {
		if e.EscrowAmountCents, err = cents(raw, "escrow_amount_cents"); err != nil {
			return failed, err
		}
	}
	if e.StartedAt, err = timeField(raw, "started_at", true); err != nil {
		return failed, err
	}
	if e.EndedAt, err = timeField(raw, e.Type.endField(), false); err != nil {
		return failed, err
	}
	if e.Type == ConduitSession {
		if e.ProofHash, err = str(raw, "proof_hash", false); err != nil {
			return failed, err
		}
		if e.ProofHash != "" && !ValidProofHash(e.ProofHash) {
			return failed, fieldErr("proof_hash", "must be 64 lowercase hex digits (the SHA-256 of the proof bundle)")
		}
	}
	if err := e.Validate(); err != nil {
		return failed, err
	}
	return e, nil
}

// ValidProofHash reports whether s is 64 lowercase hex digits.
func ValidProofHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func jsonReason(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Error()
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of input"
	}
	return err.Error()
}

// str reads a JSON string field. An absent or null optional field is "".
func str(raw map[string]json.RawMessage, field string, required bool) (string, error) {
	v, ok := raw[field]
	if !ok || string(v) == "null" {
		if required {
			return "", fieldErr(field, "is required")
		}
		return "", nil
	}
	if len(v) == 0 || v[0] != '"' {
		return "", fieldErr(field, "must be a string, got %s", abbreviate(v))
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fieldErr(field, "malformed string")
	}
	if s == "" && !required {
		return "", fieldErr(field, "must not be empty (omit it instead)")
	}
	return s, nil
}

func timeField(raw map[string]json.RawMessage, field string, required bool) (time.Time, error) {
	s, err := str(raw, field, required)
	if err != nil || s == "" {
		return time.Time{}, err
	}
	return ParseTime(field, s)
}

// cents reads a required non-negative integer field with no fraction or
// exponent, so that no float ever stands for money.
func cents(raw map[string]json.RawMessage, field string) (int64, error) {
	v, ok := raw[field]
	if !ok || string(v) == "null" {
		return 0, fieldErr(field, "is required")
	}
	s := string(v)
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			if i == 0 && s[0] == '-' {
				return 0, fieldErr(field, "%s is negative", abbreviate(v))
			}
			return 0, fieldErr(field, "must be a whole number of cents, got %s", abbreviate(v))
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, fieldErr(field, "must be a whole number of cents, got %s", abbreviate(v))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > MaxEscrowCents {
		return 0, fieldErr(field, "%s exceeds %d", abbreviate(v), int64(MaxEscrowCents))
	}
	return n, nil
}

func abbreviate(v []byte) string {
	if len(v) > 40 {
		return string(v[:37]) + "..."
	}
	return string(v)
}

// Line is one line of an NDJSON stream: its 1-based number and either the
// parsed event or the reason it was rejected.
type Line struct {
	Number int
	Event  Event
	Err    error // a *FieldError; nil when Event is valid
}

// LineReader reads NDJSON events one line at a time. Blank lines are
// skipped, and so is a UTF-8 byte-order mark at the start of the stream; a
// malformed or oversized line yields a Line with Err set (and the event's
// id in Event.ID when it could be read) and the reader continues with the
// next line.
type LineReader struct {
	r    *bufio.Reader
	line int
}

// NewLineReader reads events from r.
func NewLineReader(r io.Reader) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 256<<10)}
}

// Next returns the next non-blank line. It returns io.EOF after the last
// line, and any other error only when reading r itself failed.
func (lr *LineReader) Next() (Line, error) {
	for {
		data, tooLong, err := lr.readLine()
		if err != nil && (err != io.EOF || (len(data) == 0 && !tooLong)) {
			return Line{}, err
		}
		if lr.line == 0 {
			// Editors on some systems start a UTF-8 file with a byte-order
			// mark; it is not part of the first event.
			data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
		}
		lr.line++
		if tooLong {
			return Line{Number: lr.line, Err: &FieldError{Reason: fmt.Sprintf("line longer than %d bytes", MaxLineBytes)}}, nil
		}
		data = bytes.TrimSpace(data)
		if len(data) == 0 {
			continue
		}
		ev, perr := ParseEvent(data)
		return Line{Number: lr.line, Event: ev, Err: perr}, nil
	}
}

// readLine returns one line without its terminator, discarding the rest of a
// line longer than MaxLineBytes.
func (lr *LineReader) readLine() (data []byte, tooLong bool, err error) {
	for {
		chunk, isPrefix, rerr := lr.r.ReadLine()
		if !tooLong {
			if len(data)+len(chunk) > MaxLineBytes {
				tooLong, data = true, nil
			} else {
				data = append(data, chunk...)
			}
		}
		if rerr != nil {
			return data, tooLong, rerr
		}
		if !isPrefix {
			return data, tooLong, nil
		}
	}
}
