package ledger

import (
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/score"
)

// ScoreEntry is an agent's score as computed from the ledger as of an
// instant, the instants it holds for and the passport issued from it, if
// any. The score cache stores one per agent.
type ScoreEntry struct {
	AgentID string
	Result  score.Result
	// ComputedAt is the as_of the counts were taken at.
	ComputedAt time.Time
	// ExpiresAt is ComputedAt + 7 days: the passport lifetime.
	ExpiresAt time.Time
	// ValidUntil is the first instant the entry may be wrong (an event
	// leaves or enters the window, the lifetime ends, or it was
	// invalidated, in which case ValidUntil == ComputedAt).
	ValidUntil time.Time
	// Passport and Signature are what the IssueFunc returned; nil and ""
	// if none was issued for this entry.
	Passport  []byte
	Signature string
	// PassportID and KeyID are the passport's agent_passport_id and the
	// id of the key that signed it, set by the IssueFunc; the store keeps
	// a history of issued passports by PassportID and finds passports
	// signed by a retired key by KeyID. Empty when unknown.
	PassportID string
	KeyID      string
}

// Answers reports whether the entry holds the score as of asOf.
func (e *ScoreEntry) Answers(asOf time.Time) bool {
	return !asOf.Before(e.ComputedAt) && asOf.Before(e.ValidUntil)
}

// ScoreStamp identifies an agent's stored score entry without its counts or
// passport. When Current is false every other field is zero: there is no
// entry, or its counts predate the agent's latest terminal report.
type ScoreStamp struct {
	// Current is true when an entry exists at the agent's ledger version.
	Current bool
	// ComputedAt and ValidUntil bound the instants the entry answers, as in
	// ScoreEntry (an invalidated entry has ValidUntil == ComputedAt).
	ComputedAt time.Time
	ValidUntil time.Time
	// Signature is the stored passport's signature; "" when the entry has
	// no passport.
	Signature string
}

// Answers reports whether the stamped entry is current and holds the score
// as of asOf.
func (s *ScoreStamp) Answers(asOf time.Time) bool {
	return s.Current && !asOf.Before(s.ComputedAt) && asOf.Before(s.ValidUntil)
}

// IssueFunc produces the passport for a freshly computed entry, inside the
// transaction that stores it. It may set e.PassportID and e.KeyID, which
// the store records with the passport.
type IssueFunc func(e *ScoreEntry) (passport []byte, signature string, err error)

// ListQuery selects ranked entries. Limit must be 1..MaxListLimit.
type ListQuery struct {
	MinTier  score.Tier
	MinScore int
	Limit    int
	// By is what the ranking orders by, highest first, then agent id
	// ascending; the zero value is the score.
	By RankBy
	// After is the keyset cursor: the last entry of the previous page, or
	// nil for the first page.
	After *Cursor
}

// RankBy is the key a ranking orders by.
type RankBy int

// The keys: the score, or one dimension's contribution to it (§3.4).
const (
	RankScore RankBy = iota
	RankConduit
	RankAP2
)

// Key is r's value of the key, as a Cursor holds it.
func (k RankBy) Key(r score.Result) int {
	switch k {
	case RankConduit:
		return r.Conduit().Contribution
	case RankAP2:
		return r.AP2().Contribution
	}
	return r.Score
}

// MaxListLimit is the largest page of a ranking.
const MaxListLimit = 1000

// Cursor is a position in the ranking: the last entry of a page. Score
// is that entry's value of the ranking's key (RankBy.Key): its score, or
// the contribution the ranking orders by.
type Cursor struct {
	Score   int
	AgentID string
}

// Validate checks the query's bounds (errkind.ErrInvalid).
func (q *ListQuery) Validate() error {
	switch {
	case q.Limit < 1 || q.Limit > MaxListLimit:
		return fmt.Errorf("%w: limit %d is outside 1..%d", errkind.ErrInvalid, q.Limit, MaxListLimit)
	case q.MinScore < 0 || q.MinScore > score.MaxScore:
		return fmt.Errorf("%w: min_score %d is outside 0..%d", errkind.ErrInvalid, q.MinScore, score.MaxScore)
	case q.MinTier > score.TierElite:
		return fmt.Errorf("%w: tier %d", errkind.ErrInvalid, q.MinTier)
	case q.By < RankScore || q.By > RankAP2:
		return fmt.Errorf("%w: ranking key %d", errkind.ErrInvalid, q.By)
	case q.After != nil && !ValidID(q.After.AgentID):
		return fmt.Errorf("%w: cursor agent id", errkind.ErrInvalid)
	}
	return nil
}

// IssuedPassport is a passport the server signed, as its history keeps it.
type IssuedPassport struct {
	ID         string // agent_passport_id
	AgentID    string
	ComputedAt time.Time
	ExpiresAt  time.Time
	KeyID      string // "" when the key was not recorded
	Signature  string
	Document   []byte
	// RevokedAt is when the passport was revoked (its agent erased: the
	// document is then gone); zero while it stands.
	RevokedAt time.Time
}
