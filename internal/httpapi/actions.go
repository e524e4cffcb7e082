package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/wire"
)

// ConsoleService is what the action log route calls, and where refusals
// for a token's role are recorded (service.Console).
type ConsoleService interface {
	// RecordDenied records that the actor in ctx was refused what for
	// err.
	RecordDenied(ctx context.Context, what string, err error)
	// Actions reads the action log, newest first.
	Actions(ctx context.Context, q auth.ActionQuery) ([]auth.Action, error)
}

// defaultActionsPage is the page size of GET /swarmscore/actions without
// ?limit=.
const defaultActionsPage = 100

func (s *Server) actionRoutes() {
	if s.svc.Console == nil {
		return
	}
	s.route("GET /swarmscore/actions", operator, maxNoBody, s.actions)
}

// actions serves the action log, newest first: ?limit= (1 to
// service.MaxActionsPage, default 100), ?before= (a seq: the page after
// the one that ended there), ?operator=, ?action=, ?agent_id=.
func (s *Server) actions(w http.ResponseWriter, r *http.Request) {
	p, err := singleParams(r, "limit", "before", "operator", "action", "agent_id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := auth.ActionQuery{Limit: defaultActionsPage, Operator: p["operator"], Kind: auth.ActionKind(p["action"]), AgentID: p["agent_id"]}
	if v, ok := p["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > service.MaxActionsPage {
			s.fail(w, r, errorf(ptInvalid, "limit must be a whole number from 1 to %d", service.MaxActionsPage))
			return
		}
		q.Limit = n
	}
	if v, ok := p["before"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			s.fail(w, r, errorf(ptInvalid, "before must be a positive whole number (a seq from the previous page)"))
			return
		}
		q.Before = n
	}
	if q.AgentID != "" {
		if err := ledger.CheckID("agent_id", q.AgentID); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	if q.Operator != "" {
		if err := ledger.CheckID("operator", q.Operator); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	if len(q.Kind) > 64 {
		s.fail(w, r, errorf(ptInvalid, "action is at most 64 characters"))
		return
	}
	list, err := s.svc.Console.Actions(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, marshal(wire.ActionsOf(list, q.Limit)))
}
