package service

import (
	"context"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// PassportStore is the history of issued passports: every passport stored
// with a cache entry whose IssueFunc set ScoreEntry.PassportID.
type PassportStore interface {
	PassportReader
	PassportLister
	StaleFinder
}

// PassportReader reads one issued passport.
type PassportReader interface {
	// Passport returns an issued passport by its agent_passport_id
	// (ErrNotFound for an unknown id).
	Passport(ctx context.Context, id string) (ledger.IssuedPassport, error)
}

// PassportLister lists an agent's passports.
type PassportLister interface {
	// Passports returns an agent's issued passports, oldest first (none
	// for an unknown agent).
	Passports(ctx context.Context, agentID string) ([]ledger.IssuedPassport, error)
}

// StaleFinder finds the passports a rotation must re-issue.
type StaleFinder interface {
	// StalePassports returns, in agent id order after the agent after and
	// at most limit of them, the agents whose current cache entry holds a
	// passport that expires after asOf and was not signed by the key
	// activeKeyID (including passports whose key was not recorded): the
	// passports a rotation must re-issue. Pass the last agent returned as
	// after to resume.
	StalePassports(ctx context.Context, activeKeyID string, asOf time.Time, after string, limit int) ([]string, error)
}
