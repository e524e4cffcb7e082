package ledger

import (
	"crypto/sha256"
	"encoding/json"
)

// HashSize is the length of a chain hash.
const HashSize = sha256.Size

// Hash is a link of an agent's hash chain.
type Hash [HashSize]byte

// Record is one accepted report in an agent's hash chain: the event as
// accepted (a first report or a transition), who reported it and its
// 1-based position in the agent's chain.
type Record struct {
	Event    Event
	Operator string
	Seq      int64
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
	Seq       int64  `json:"seq"`
	StartedAt string `json:"started_at"`
	Status    Status `json:"status"`
	Type      Type   `json:"type"`
}

// Canonical is the record's hashed content: RFC 8785 canonical JSON of its
// fields (absent buyer and end time as ""), with the type-independent names
// agent_id and ended_at. It is stable across versions: changing it breaks
// every stored chain.
func (r *Record) Canonical() []byte {
	c := canonicalRecord{
		AgentID: r.Event.AgentID, BuyerID: r.Event.BuyerID, Escrow: r.Event.EscrowAmountCents,
		ID: r.Event.ID, Operator: r.Operator, Seq: r.Seq, StartedAt: FormatTime(r.Event.StartedAt),
		Status: r.Event.Status, Type: r.Event.Type,
	}
	if !r.Event.EndedAt.IsZero() {
		c.EndedAt = FormatTime(r.Event.EndedAt)
	}
	b, err := json.Marshal(c)
	if err != nil {
		panic("ledger: canonical record: " + err.Error()) // unreachable: only strings and integers
	}
	return b
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
	return r, nil
}
