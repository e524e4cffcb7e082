package web

import (
	"context"
	"net/http"
	"slices"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// HoldsService is what the escrow page reads (service.Holds).
type HoldsService interface {
	// Holds lists holds, oldest first.
	Holds(ctx context.Context, q service.HoldQuery) ([]ledger.Hold, error)
	// HoldStats counts holds by state and what the open ones hold.
	HoldStats(ctx context.Context) (service.HoldStats, error)
}

// escrowPageSize bounds the open holds the page lists.
const escrowPageSize = 200

type holdsView struct {
	HeldCents int64
	Open      int64 // held + disputed
	Disputed  int64
	States    []holdsState
	// Holds are the open holds, disputed first, then held, oldest first
	// in each; at most escrowPageSize of them (More counts the rest).
	Holds []ledger.Hold
	More  int
}

type holdsState struct {
	State ledger.HoldState
	Count int64
}

// loadEscrow is the escrow holds page: what open holds hold, the count of
// holds in each state, and the open holds with the disputes waiting for a
// resolution first.
func (p *Pages) loadEscrow(r *http.Request, _ session) (any, error) {
	st, err := p.svc.Holds.HoldStats(r.Context())
	if err != nil {
		return nil, err
	}
	v := holdsView{HeldCents: st.HeldCents, Open: st.ByState[ledger.HoldHeld] + st.ByState[ledger.HoldDisputed], Disputed: st.ByState[ledger.HoldDisputed]}
	for _, s := range ledger.HoldStates {
		v.States = append(v.States, holdsState{s, st.ByState[s]})
	}
	for _, s := range []ledger.HoldState{ledger.HoldDisputed, ledger.HoldHeld} {
		list, err := p.svc.Holds.Holds(r.Context(), service.HoldQuery{State: s})
		if err != nil {
			return nil, err
		}
		v.Holds = append(v.Holds, list...)
	}
	if len(v.Holds) > escrowPageSize {
		v.More, v.Holds = len(v.Holds)-escrowPageSize, slices.Clip(v.Holds[:escrowPageSize])
	}
	return v, nil
}
