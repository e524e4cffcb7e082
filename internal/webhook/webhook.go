// Package webhook holds the pure rules of SwarmScore's webhooks: the event
// types and their payloads, the Standard Webhooks signature
// (https://www.standardwebhooks.com/), the endpoint URL rules that keep the
// server from being turned against private networks, and the retry
// schedule. It does no I/O: the stores keep the outbox, the service's
// dispatcher delivers it.
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// EventType names what happened, as the payload's "type" and the
// endpoint's subscription say it.
type EventType string

// The event types.
const (
	// ScoreChanged: an agent's score, computed by the server, differs
	// from the last one announced for it (ERRATA E60).
	ScoreChanged EventType = "score.changed"
	// TierChanged: likewise for its trust tier.
	TierChanged EventType = "tier.changed"
	// PassportIssued: a passport was signed and recorded.
	PassportIssued EventType = "passport.issued"
	// AppealUpdated: an appeal was filed or changed state.
	AppealUpdated EventType = "appeal.updated"
	// HoldUpdated: an escrow hold was created or changed state.
	HoldUpdated EventType = "hold.updated"
)

// EventTypes lists every event type, in the order the API documents them.
var EventTypes = []EventType{ScoreChanged, TierChanged, PassportIssued, AppealUpdated, HoldUpdated}

// Codes of the errors this package returns (errkind.WithCode).
const (
	CodeInvalidURL   = "invalid_webhook_url"
	CodeInvalidEvent = "invalid_webhook_event"
)

// ParseEvents checks a subscription: one or more known event types, each
// once; the result is in EventTypes order. Errors: ErrInvalid with code
// invalid_webhook_event.
func ParseEvents(names []string) ([]EventType, error) {
	if len(names) == 0 {
		return nil, errkind.WithCode(fmt.Errorf("%w: events: subscribe to at least one of %s", errkind.ErrInvalid, typeList()), CodeInvalidEvent)
	}
	seen := map[EventType]bool{}
	for _, n := range names {
		t := EventType(n)
		if !slices.Contains(EventTypes, t) {
			return nil, errkind.WithCode(fmt.Errorf("%w: events: %q is not one of %s", errkind.ErrInvalid, n, typeList()), CodeInvalidEvent)
		}
		if seen[t] {
			return nil, errkind.WithCode(fmt.Errorf("%w: events: %q is listed twice", errkind.ErrInvalid, n), CodeInvalidEvent)
		}
		seen[t] = true
	}
	var out []EventType
	for _, t := range EventTypes {
		if seen[t] {
			out = append(out, t)
		}
	}
	return out, nil
}

func typeList() string {
	s := make([]string, len(EventTypes))
	for i, t := range EventTypes {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// JoinEvents is how a subscription is stored: the types separated by
// single spaces, with a space at each end, so that " type " matches one
// exactly (SubscribedPattern).
func JoinEvents(ts []EventType) string {
	var b strings.Builder
	b.WriteByte(' ')
	for _, t := range ts {
		b.WriteString(string(t))
		b.WriteByte(' ')
	}
	return b.String()
}

// SplitEvents reverses JoinEvents.
func SplitEvents(s string) []EventType {
	var out []EventType
	for _, f := range strings.Fields(s) {
		out = append(out, EventType(f))
	}
	return out
}

// SubscribedPattern is the SQL LIKE pattern matching a stored subscription
// (JoinEvents) that holds t. Event type names hold no LIKE wildcard.
func SubscribedPattern(t EventType) string { return "% " + string(t) + " %" }

// Secret is an endpoint's signing secret as Standard Webhooks writes it:
// "whsec_" then the base64 of the key bytes. Its String, Format, LogValue
// and JSON forms are redacted, so that it never reaches a log, an error or
// a response by accident: Reveal is the one way to read it.
type Secret struct{ s string }

// secretPrefix starts every secret (Standard Webhooks).
const secretPrefix = "whsec_"

// SecretBytes is the length of a new secret's key: 24 bytes, 192 bits, as
// the reference libraries generate.
const SecretBytes = 24

// NewSecret draws a new secret from crypto/rand.
func NewSecret() Secret {
	b := make([]byte, SecretBytes)
	rand.Read(b)
	return Secret{secretPrefix + base64.StdEncoding.EncodeToString(b)}
}

// ParseSecret reads a stored secret. Errors: ErrInvalid (without the
// secret) when it is not whsec_ and the base64 of at least 16 bytes.
func ParseSecret(s string) (Secret, error) {
	key, ok := strings.CutPrefix(s, secretPrefix)
	b, err := base64.StdEncoding.DecodeString(key)
	if !ok || err != nil || len(b) < 16 {
		return Secret{}, fmt.Errorf("%w: a webhook secret is whsec_ and the base64 of at least 16 bytes", errkind.ErrInvalid)
	}
	return Secret{s}, nil
}

// Reveal returns the secret itself: for storing it and showing it once.
func (s Secret) Reveal() string { return s.s }

// IsZero reports whether s holds no secret.
func (s Secret) IsZero() bool { return s.s == "" }

func (s Secret) key() []byte {
	b, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(s.s, secretPrefix))
	return b
}

const redacted = "whsec_[redacted]"

// String is redacted.
func (s Secret) String() string { return redacted }

// GoString is redacted.
func (s Secret) GoString() string { return redacted }

// LogValue is redacted.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON is redacted: a response that shows the secret sets it as a
// string from Reveal.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(redacted) }

// Signature is the webhook-signature header of a message: "v1," and the
// base64 HMAC-SHA256, keyed by the secret's decoded bytes, of
// "id.timestamp.body" (Standard Webhooks, "Signature scheme").
func Signature(s Secret, id string, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, s.key())
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(timestamp, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Verify checks a webhook-signature header (several space-separated
// signatures may be given; one matching v1 is enough) in constant time,
// and that timestamp is within tolerance of now. It is what a receiver
// does; the tests use it as a second, in-process check beside the npm
// reference implementation.
func Verify(s Secret, id string, timestamp int64, body []byte, header string, now time.Time, tolerance time.Duration) bool {
	at := time.Unix(timestamp, 0)
	if at.Before(now.Add(-tolerance)) || at.After(now.Add(tolerance)) {
		return false
	}
	want := []byte(Signature(s, id, timestamp, body))
	ok := false
	for _, sig := range strings.Fields(header) {
		if hmac.Equal([]byte(sig), want) {
			ok = true
		}
	}
	return ok
}

// Headers are the Standard Webhooks headers of one delivery attempt.
func Headers(s Secret, id string, at time.Time, body []byte) map[string]string {
	ts := at.Unix()
	return map[string]string{
		"webhook-id":        id,
		"webhook-timestamp": strconv.FormatInt(ts, 10),
		"webhook-signature": Signature(s, id, ts, body),
	}
}

// NewMessageID is a fresh message id: "msg_" and 26 base32 characters
// (128 random bits). It is the webhook-id of every attempt of the message,
// what a receiver de-duplicates by.
func NewMessageID() string {
	var b [16]byte
	rand.Read(b[:])
	return "msg_" + strings.ToLower(base32NoPad.EncodeToString(b[:]))
}

// NewEndpointID is a fresh endpoint id: "ep_" and 26 base32 characters.
func NewEndpointID() string {
	var b [16]byte
	rand.Read(b[:])
	return "ep_" + strings.ToLower(base32NoPad.EncodeToString(b[:]))
}
