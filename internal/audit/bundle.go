package audit

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// Type is the bundle's "type" member: the format and its version.
const Type = "swarmscore-audit/v1"

// MaxBundleSize bounds the document Parse reads: about two million chain
// records, far above any agent's history today, so that reading untrusted
// input costs bounded memory.
const MaxBundleSize = 1 << 30

// Bundle is everything an L3 audit (spec §7.1) of one agent's score as of
// an instant needs: the passport, the agent's whole hash chain, the report
// records of events moved to it from other agents' chains (with the rest of
// those chains up to their heads, so that their links can be followed), the
// signed checkpoint that anchors the heads, and the exporter's account of
// every event: counted, or excluded and why. Verify re-derives the account
// from the records and checks every claim.
type Bundle struct {
	AgentID string
	// AsOf is the end of the window audited, to the microsecond.
	AsOf time.Time
	// Counts are the four counts the exporter's ledger gives as of AsOf,
	// and Score what score.Compute gives for them.
	Counts score.Counts
	Score  Score
	// Withheld lists the kinds of identifier the exporter replaced by
	// commitments (withhold.go), sorted.
	Withheld []Category
	// Passport is the signed passport document as issued; nil when no
	// passport was in force at AsOf.
	Passport []byte
	// Checkpoint is the latest signed checkpoint document as published;
	// nil when none had been made.
	Checkpoint []byte
	// Events is the exporter's account, one entry per event the agent's
	// chain records, in the order of their first record there.
	Events []Event
	// Chains are the audited agent's chain first (all of it), then the
	// segments of other agents' chains that hold the reports of events
	// moved to it, then the segments, from their erasure records, of the
	// chains of erased agents whose erasures sealed a record of the
	// others (Sealings).
	Chains []Chain
	// Sealings are the digests of every erasure that sealed a record of
	// Chains (Record.SealedBy), by erasure id, sorted; each erasure's
	// record is in Chains and commits to them.
	Sealings []Sealing
	// Holds are the escrow holds whose provider is the agent and whose
	// transaction its chain reports, oldest first, and HoldPassports the
	// documents of the passports that priced them, each once (hold.go).
	Holds         []Hold
	HoldPassports [][]byte
	// Log proves the audited agent's head record to be in the exporter's
	// transparency log, against a signed checkpoint note; nil when the
	// exporter signs no notes (an HMAC key) or the record is not in the
	// log yet.
	Log *LogInclusion
}

// Sealing is what an erasure (GDPR Art. 17, spec §11.4) sealed: the
// SHA-256 of each sealed record's content as it reads after the rename,
// sorted. The erasure's own record commits to them (ledger.Erasure), so a
// sealed record is checked by its digest instead of its link, which the
// rename broke.
type Sealing struct {
	ID      string
	Digests []ledger.Hash
}

// commitment is SHA-256 over the sorted digests: what the erasure's record
// states as "sealed".
func (s *Sealing) commitment() ledger.Hash {
	e := ledger.Erasure{Digests: s.Digests}
	return e.Commitment()
}

// sealing returns the sealing of erasure id.
func (b *Bundle) sealing(id string) *Sealing {
	for i := range b.Sealings {
		if b.Sealings[i].ID == id {
			return &b.Sealings[i]
		}
	}
	return nil
}

// Score is the score block: what score.Compute gives for the counts.
type Score struct {
	Value  int
	Tier   score.Tier
	Escrow score.Modifier
}

// Chain is one agent's hash chain from FromSeq to its head.
type Chain struct {
	// AgentID is the chain's agent (withheld for another agent when
	// agents are withheld).
	AgentID Value
	// FromSeq is the seq of the first record (1 for a whole chain) and
	// Prev the chain hash before it (zero for seq 1).
	FromSeq int64
	Prev    ledger.Hash
	// Head is the agent's head as the exporter stored it.
	Head ledger.Head
	// Proof proves the record at Proof.Seq (Prev at FromSeq − 1) to be the
	// agent's head in Bundle.Checkpoint; nil when the checkpoint does not
	// name the agent, or predates the segment.
	Proof   *Inclusion
	Records []Record
}

// Inclusion is a checkpoint inclusion proof for the leaf (chain agent, Seq,
// the chain hash at Seq).
type Inclusion struct {
	Seq   int64
	Proof checkpoint.Proof
}

// Record is one chain record: its hash as the ledger stored it and its
// canonical content, the members ledger.Record.Canonical or
// ledger.Correction.AppendCanonical hashed.
type Record struct {
	Hash    ledger.Hash
	Content Content
	// SealedBy names the erasure that sealed the record ("" for none):
	// its content names an erased agent by its pseudonym, so its link is
	// not recomputed; its content's SHA-256 must be one of the erasure's
	// digests (Bundle.Sealings).
	SealedBy string
}

// Content is a record's canonical content: its members by name, in byte
// order of the name, each a string (possibly withheld) or an integer.
type Content []Member

// Member is one member of a record's content: a string, an integer, or
// (only a summary record's "rows") the rows of a summary of pruned events.
type Member struct {
	Name   string
	Str    Value
	Int    int64
	IsInt  bool
	Rows   []ledger.SummaryRow
	IsRows bool
}

// Value is a string that may be withheld. When Withheld, S is not the value
// but the commitment to it: 64 lowercase hex characters (withhold.go).
type Value struct {
	S        string
	Withheld bool
}

// Clear is the Value of a string that is not withheld.
func Clear(s string) Value { return Value{S: s} }

// IsZero reports whether v is the absent value.
func (v Value) IsZero() bool { return v == Value{} }

func (v Value) String() string {
	if v.Withheld {
		return "withheld:" + v.S[:min(12, len(v.S))]
	}
	return v.S
}

// get returns the member named name.
func (c Content) get(name string) (*Member, bool) {
	for i := range c {
		if c[i].Name == name {
			return &c[i], true
		}
	}
	return nil, false
}

// str returns a string member's value (the zero Value when absent or an
// integer).
func (c Content) str(name string) Value {
	if m, ok := c.get(name); ok && !m.IsInt {
		return m.Str
	}
	return Value{}
}

func (c Content) integer(name string) int64 {
	if m, ok := c.get(name); ok && m.IsInt {
		return m.Int
	}
	return 0
}

// isErasure reports whether the content is an erasure's record: only those
// have an "erasure" member.
func (c Content) isErasure() bool {
	_, ok := c.get("erasure")
	return ok
}

// isCorrection reports whether the content is a correction's: only those
// have a "correction" member.
func (c Content) isCorrection() bool {
	_, ok := c.get("correction")
	return ok
}

// complete reports whether no member is withheld, so that the canonical
// bytes, and so the link, can be recomputed.
func (c Content) complete() bool {
	for i := range c {
		if c[i].Str.Withheld {
			return false
		}
	}
	return true
}

// Outcome says whether an event counted as of the bundle's instant, and if
// not, why.
type Outcome string

// The outcomes, in the order they are decided.
const (
	// Counted: in the agent's 90-day counts.
	Counted Outcome = "counted"
	// MovedAway: re-attributed to another agent by a correction.
	MovedAway Outcome = "moved_to_another_agent"
	// Voided: removed from every count by a correction.
	Voided Outcome = "voided"
	// NotFinal: its latest status is not terminal (no end time yet).
	NotFinal Outcome = "not_final"
	// StatusNotCounted: ERROR, TIMEOUT or CANCELLED, which no count takes
	// (spec §12.2, docs/ERRATA.md E7).
	StatusNotCounted Outcome = "status_not_counted"
	// BeforeWindow: it ended before the window's start.
	BeforeWindow Outcome = "before_window"
	// AfterAsOf: it ended after the window's end.
	AfterAsOf Outcome = "after_as_of"
)

// Outcomes lists the outcomes in the order Verify decides them.
var Outcomes = []Outcome{Counted, MovedAway, Voided, NotFinal, StatusNotCounted, BeforeWindow, AfterAsOf}

func (o Outcome) valid() bool {
	switch o {
	case Counted, MovedAway, Voided, NotFinal, StatusNotCounted, BeforeWindow, AfterAsOf:
		return true
	}
	return false
}

// Event is the exporter's account of one event the agent's chain records.
type Event struct {
	Type    ledger.Type
	ID      string
	Outcome Outcome
	// Status is its status after every correction; EndedAt its end time
	// (zero while not final).
	Status  ledger.Status
	EndedAt time.Time
	// Corrections are the ids of the corrections of it that the agent's
	// chain records, in chain order.
	Corrections []string
	// MovedFrom is the agent it was last moved from to this one, MovedTo
	// the agent it was moved to from this one; zero when it was not.
	MovedFrom Value
	MovedTo   Value
}

// Key is the event's ledger key.
func (e *Event) Key() ledger.EventKey { return ledger.EventKey{Type: e.Type, ID: e.ID} }

// Category is a kind of identifier of parties other than the audited agent
// that a bundle can withhold.
type Category string

// The categories.
const (
	// Buyers: buyer_id of every report.
	Buyers Category = "buyers"
	// Operators: the operator of every report, the author (by) of every
	// correction and the actor of every hold step.
	Operators Category = "operators"
	// Agents: every agent id other than the audited agent's: the other
	// party of a re-attribution and the agent of another chain.
	Agents Category = "agents"
	// Reasons: the free text of corrections and holds, which may name
	// people.
	Reasons Category = "reasons"
)

// Categories lists every category, in the order they are documented.
var Categories = []Category{Buyers, Operators, Agents, Reasons}

// ParseCategories reads a comma-separated list of categories ("" for none)
// and returns them sorted, each once. An unknown name matches
// errkind.ErrInvalid and names the known ones.
func ParseCategories(s string) ([]Category, error) {
	var out []Category
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		c := Category(strings.TrimSpace(part))
		if !slices.Contains(Categories, c) {
			return nil, fmt.Errorf("%w: withhold: %q is not one of buyers, operators, agents, reasons", errkind.ErrInvalid, part)
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out, nil
}

// category is the category of a content member of a chain of agent, or ""
// for one that is never withheld: the members the rules and counts read
// (type, ids, statuses, times, amounts, seq) and the audited agent's id.
func category(name string, v Value, audited string) Category {
	switch name {
	case "buyer_id":
		return Buyers
	case "operator", "by", "actor":
		return Operators
	case "reason":
		return Reasons
	case "agent_id", "from_agent", "to_agent":
		if v.Withheld || v.S != audited {
			return Agents
		}
	}
	return ""
}
