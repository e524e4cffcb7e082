package ledger

import (
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"time"
)

// HashSize is the length of a chain hash.
const HashSize = sha256.Size

// Hash is a link of an agent's hash chain.
type Hash [HashSize]byte

// Record is one accepted report in an agent's hash chain: the event as
// accepted (a first report or a transition), who reported it, its 1-based
// position in the agent's chain, and when the server received it.
type Record struct {
	Event    Event
	Operator string
	Seq      int64
	// ReceivedAt is the server's clock when the report arrived, recorded
	// in the chain so that a report back-dated far behind its arrival is
	// visible (§8.3, §15.2). Zero for records written before it was kept:
	// their content, and so their hash, has no received_at member.
	ReceivedAt time.Time
}

// canonicalRecord lists the hashed fields in the byte order of their names,
// so that encoding/json emits RFC 8785 (JCS) canonical JSON: every string is
// ASCII from a restricted alphabet and every number is an integer below
// 2^53, for which JCS and encoding/json agree byte for byte.
type canonicalRecord struct {
	AgentID   string `json:"agent_id"`
	BuyerID   string `json:"buyer_id"`
	EndedAt   string `json:"ended_at"`
	Escrow    int64  `json:"escrow_amount_cents"`
	ID        string `json:"id"`
	Operator  string `json:"operator"`
	Received  string `json:"received_at,omitempty"`
	Seq       int64  `json:"seq"`
	StartedAt string `json:"started_at"`
	Status    Status `json:"status"`
	Type      Type   `json:"type"`
}

// Canonical is the record's hashed content: RFC 8785 canonical JSON of its
// fields (absent buyer and end time as "", an absent received_at
// omitted), with the type-independent names agent_id and ended_at. It is stable across versions: changing it breaks
// every stored chain. The bytes are those encoding/json produces for
// canonicalRecord, for every Record, valid or not (verification rebuilds
// records from rows an attacker may have edited).
func (r *Record) Canonical() []byte { return r.AppendCanonical(make([]byte, 0, 256)) }

// AppendCanonical appends Canonical's bytes to dst and returns the extended
// slice. With a reused dst of sufficient capacity it does not allocate for
// any record that passes Event.Validate.
func (r *Record) AppendCanonical(dst []byte) []byte {
	dst = append(dst, `{"agent_id":`...)
	dst = appendJSONString(dst, r.Event.AgentID)
	dst = append(dst, `,"buyer_id":`...)
	dst = appendJSONString(dst, r.Event.BuyerID)
	dst = append(dst, `,"ended_at":`...)
	if r.Event.EndedAt.IsZero() {
		dst = append(dst, `""`...)
	} else {
		dst = appendJSONTime(dst, r.Event.EndedAt)
	}
	dst = append(dst, `,"escrow_amount_cents":`...)
	dst = strconv.AppendInt(dst, r.Event.EscrowAmountCents, 10)
	dst = append(dst, `,"id":`...)
	dst = appendJSONString(dst, r.Event.ID)
	dst = append(dst, `,"operator":`...)
	dst = appendJSONString(dst, r.Operator)
	if !r.ReceivedAt.IsZero() {
		dst = append(dst, `,"received_at":`...)
		dst = appendJSONTime(dst, r.ReceivedAt)
	}
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, r.Seq, 10)
	dst = append(dst, `,"started_at":`...)
	dst = appendJSONTime(dst, r.Event.StartedAt)
	dst = append(dst, `,"status":`...)
	dst = appendJSONString(dst, string(r.Event.Status))
	dst = append(dst, `,"type":`...)
	dst = appendJSONString(dst, string(r.Event.Type))
	return append(dst, '}')
}

// appendJSONString appends s as encoding/json encodes it. Strings of
// printable ASCII other than the characters encoding/json escapes (quote,
// backslash and its HTML escapes <, >, &) are copied as they are; ids and
// statuses that pass validation are always such strings. Anything else is
// rare (a tampered row) and takes encoding/json itself, so the two cannot
// disagree.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, err := json.Marshal(s)
			if err != nil {
				panic("ledger: canonical string: " + err.Error()) // unreachable: every string encodes
			}
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendJSONTime appends FormatTime(t) as a JSON string. Years 0 to 9999
// (every valid event time) are formatted by hand, the same digits as
// time.Format with timeLayout: fractional seconds truncated to
// microseconds, trailing zeros and an all-zero fraction dropped. Other
// years take time.Format. Neither emits a character JSON escapes.
func appendJSONTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	dst = append(dst, '"')
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		dst = t.AppendFormat(dst, timeLayout)
		return append(dst, '"')
	}
	hour, minute, sec := t.Clock()
	dst = append(dst, byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-', byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10))
	if us := t.Nanosecond() / 1000; us != 0 {
		var frac [7]byte
		frac[0] = '.'
		for i := 6; i >= 1; i-- {
			frac[i] = byte('0' + us%10)
			us /= 10
		}
		n := 7
		for frac[n-1] == '0' {
			n--
		}
		dst = append(dst, frac[:n]...)
	}
	return append(dst, 'Z', '"')
}

// Link computes the chain hash of a record whose canonical content is
// canonical and whose predecessor's hash is prev (the zero Hash for an
// agent's first record): SHA-256(prev || canonical).
func Link(prev Hash, canonical []byte) Hash {
	h := sha256.New()
	h.Write(prev[:])
	h.Write(canonical)
	var out Hash
	h.Sum(out[:0])
	return out
}

// Chainer computes successive records' canonical content and links with one
// reused buffer, so that appending to or verifying a chain does not allocate
// per record. The zero value is ready to use; a Chainer is not safe for
// concurrent use.
type Chainer struct {
	buf []byte
}

// Link returns ledger.Link(prev, r.Canonical()) together with the canonical
// bytes, which stay valid only until the next call.
func (c *Chainer) Link(prev Hash, r *Record) (Hash, []byte) {
	c.buf = append(c.buf[:0], prev[:]...)
	c.buf = r.AppendCanonical(c.buf)
	return sha256.Sum256(c.buf), c.buf[HashSize:]
}

// ParseCanonical decodes a record's canonical content, for verification.
// Errors match errkind.ErrInvalid.
func ParseCanonical(b []byte) (Record, error) {
	var c canonicalRecord
	if err := json.Unmarshal(b, &c); err != nil {
		return Record{}, &FieldError{Reason: "malformed canonical record: " + err.Error()}
	}
	r := Record{Operator: c.Operator, Seq: c.Seq, Event: Event{
		Type: c.Type, ID: c.ID, AgentID: c.AgentID, BuyerID: c.BuyerID, Status: c.Status, EscrowAmountCents: c.Escrow,
	}}
	var err error
	if r.Event.StartedAt, err = ParseTime("started_at", c.StartedAt); err != nil {
		return Record{}, err
	}
	if c.EndedAt != "" {
		if r.Event.EndedAt, err = ParseTime("ended_at", c.EndedAt); err != nil {
			return Record{}, err
		}
	}
	if c.Received != "" {
		if r.ReceivedAt, err = ParseTime("received_at", c.Received); err != nil {
			return Record{}, err
		}
	}
	return r, nil
}
