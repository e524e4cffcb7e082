package httpapi

import "github.com/swarmscore/swarmscore/internal/auth"

// routePermissions is what an operator's token needs, by its role
// (auth.Allow), to call each route an operator may call: every route of
// access operator, self or appellant has a row (guard panics at start
// otherwise). The console's pages and forms name the same permissions
// (internal/web), so that the API and the console enforce one rule. On
// self and appellant routes it applies to operators only: an agent's own
// token is limited to its agent instead.
var routePermissions = map[string]auth.Permission{
	"POST /swarmscore/events":                  auth.Ingest,
	"POST /swarmscore/{agent_id}/escrow":       auth.ReadOperator,
	"GET /swarmscore/agents":                   auth.ReadOperator,
	"GET /swarmscore/{agent_id}/audit":         auth.ReadOperator,
	"POST /swarmscore/corrections":             auth.Correct,
	"POST /swarmscore/appeals":                 auth.DecideAppeals,
	"GET /swarmscore/appeals":                  auth.ReadOperator,
	"GET /swarmscore/appeals/{id}":             auth.ReadOperator,
	"POST /swarmscore/appeals/{id}/ack":        auth.DecideAppeals,
	"POST /swarmscore/appeals/{id}/uphold":     auth.DecideAppeals,
	"POST /swarmscore/appeals/{id}/reject":     auth.DecideAppeals,
	"POST /swarmscore/appeals/{id}/escalate":   auth.DecideAppeals,
	"POST /swarmscore/{agent_id}/erase":        auth.Erase,
	"GET /swarmscore/erasures":                 auth.ReadOperator,
	"GET /swarmscore/{agent_id}/consent":       auth.ReadOperator,
	"PUT /swarmscore/{agent_id}/consent":       auth.ActForAgent,
	"PUT /swarmscore/{agent_id}/visibility":    auth.ActForAgent,
	"GET /swarmscore/{agent_id}/records":       auth.ReadOperator,
	"GET /swarmscore/{agent_id}/signals":       auth.ReadOperator,
	"GET /swarmscore/signals":                  auth.ReadOperator,
	"GET /swarmscore/actions":                  auth.ReadActions,
	"POST /swarmscore/webhooks":                auth.ManageWebhooks,
	"GET /swarmscore/webhooks":                 auth.ReadOperator,
	"GET /swarmscore/webhooks/{id}":            auth.ReadOperator,
	"DELETE /swarmscore/webhooks/{id}":         auth.ManageWebhooks,
	"GET /swarmscore/webhooks/{id}/deliveries": auth.ReadOperator,
}
