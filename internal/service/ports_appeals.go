package service

import (
	"context"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// AppealStore keeps appeals (internal/appeal) and their history.
type AppealStore interface {
	// CreateAppeal stores a new appeal. An id already used is
	// ErrConflict.
	CreateAppeal(ctx context.Context, a appeal.Appeal) error
	// Appeal returns an appeal with its events, history and the
	// corrections that name it (ErrNotFound for an unknown id).
	Appeal(ctx context.Context, id string) (appeal.Appeal, error)
	// Appeals returns the appeals in state (every state when ""), oldest
	// first.
	Appeals(ctx context.Context, state appeal.State) ([]appeal.Appeal, error)
	// AppealSummaries returns every appeal without its events, history or
	// corrections (enough for its state and deadlines), oldest first, in
	// one query: what /metrics counts at each scrape.
	AppealSummaries(ctx context.Context) ([]appeal.Appeal, error)
	// SaveAppeal stores a's new state and the actions appended to its
	// history, provided the stored appeal is still in state from
	// (ErrConflict otherwise: someone acted first). The corrections of an
	// uphold are recorded in the same transaction, each as
	// LedgerStore.Correct records it (re-issuing the affected passports
	// when issue is not nil, and then setting a's ReissuedAt); they are
	// returned in order. Errors: those of Correct, ErrConflict,
	// ErrUnavailable.
	SaveAppeal(ctx context.Context, a appeal.Appeal, from appeal.State, corrections []ledger.CorrectionRequest, issue ledger.IssueFunc) ([]ledger.Correction, error)
}
