package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/signal"
)

// SignalsService lists the use cases of the console's gaming flags page
// (spec §8.3, §15.2; service.Signals).
type SignalsService interface {
	// FlaggedAgents is every agent with a flagged signal as of asOf (now
	// when zero), computed set-based.
	FlaggedAgents(ctx context.Context, asOf time.Time) (service.Flagged, error)
	// Signals is one agent's signals, for an operator.
	Signals(ctx context.Context, c service.Caller, agentID string, asOf time.Time) (service.AgentSignals, error)
	// Thresholds are the deployment's thresholds.
	Thresholds() signal.Thresholds
	// SignalStats says when this process last walked the chains.
	SignalStats() (service.SignalStats, bool)
}

type signalsView struct {
	Query string
	AsOf  time.Time
	// Columns are the signals with their thresholds, in signal.Names order.
	Columns []signalCell
	// Found is an exact search's agent, flagged or not; Searched is true
	// when there was a search (Found nil: no such agent).
	Searched bool
	Found    *agentSignalsRow
	// Flagged are the flagged agents when nothing was searched.
	Flagged []agentSignalsRow
	// WalkAt is when this process last walked the chains; zero if never.
	WalkAt    time.Time
	MinEvents int64
}

type agentSignalsRow struct {
	AgentID string
	Cells   []signalCell
}

type signalCell struct {
	Name      string
	Value     string
	Threshold string
	Flagged   bool
	// Note says why the signal was not judged (signal.Signal.Note).
	Note string
}

// loadSignals is the gaming flags page: every flagged agent with each
// figure beside its threshold, or one agent's signals by exact id.
func (p *Pages) loadSignals(r *http.Request, s session) (any, error) {
	v := signalsView{Query: strings.TrimSpace(r.URL.Query().Get("q")), MinEvents: p.svc.Signals.Thresholds().MinEvents}
	if st, ok := p.svc.Signals.SignalStats(); ok {
		v.WalkAt = st.WalkAt
	}
	if v.Query != "" {
		if !ledger.ValidID(v.Query) {
			return nil, badRequest("An agent id is 1 to 128 letters, digits and . _ : - characters.")
		}
		v.Searched = true
		a, err := p.svc.Signals.Signals(r.Context(), s.caller(), v.Query, time.Time{})
		if errors.Is(err, errkind.ErrNotFound) {
			return v, nil
		}
		if err != nil {
			return nil, err
		}
		row := signalsRow(&a)
		v.AsOf, v.Found, v.Columns = a.AsOf, &row, row.Cells
		return v, nil
	}
	list, err := p.svc.Signals.FlaggedAgents(r.Context(), time.Time{})
	if err != nil {
		return nil, err
	}
	v.AsOf = list.AsOf
	for i := range list.Agents {
		v.Flagged = append(v.Flagged, signalsRow(&list.Agents[i]))
	}
	// The thresholds head the columns; every agent's signals name them.
	v.Columns = signalsRow(&service.AgentSignals{Signals: signal.Evaluate(signal.Figures{}, p.svc.Signals.Thresholds())}).Cells
	return v, nil
}

func signalsRow(a *service.AgentSignals) agentSignalsRow {
	row := agentSignalsRow{AgentID: a.AgentID}
	for _, s := range a.Signals {
		row.Cells = append(row.Cells, signalCell{Name: s.Name, Value: signalFigure(s.Name, s.Value), Threshold: signalLimit(s.Name, s.Threshold), Flagged: s.Flagged, Note: s.Note})
	}
	return row
}

// signalFigure renders a figure in its signal's unit.
func signalFigure(name string, v float64) string {
	switch name {
	case signal.ReportLag:
		return strconv.FormatFloat(v, 'f', 1, 64) + " h"
	case signal.ChainBreak:
		if v != 0 {
			return "broken"
		}
		return "intact"
	case signal.SelfDealing, signal.ConduitBurst:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v*100, 'f', 0, 64) + "%"
}

// signalLimit says when a signal is flagged.
func signalLimit(name string, t float64) string {
	switch name {
	case signal.ChainBreak:
		return "any break"
	case signal.AP2BuyerDiversity, signal.AcceptanceRate:
		return "below " + signalFigure(name, t)
	}
	return "above " + signalFigure(name, t)
}
