package ledger

import (
	"fmt"
	"regexp"
	"slices"
)

// The catalogue says, for every table of the schema, which columns name an
// agent and what an erasure does to each, and which column ends an event
// (retention prunes by it). Both back ends generate their erasure
// statements and their prune condition from it (internal/store), and the
// conformance suite checks it against each back end's live schema after
// every migration: a column the catalogue does not list, in any table,
// fails the build (CheckSchema). A migration that adds a table or a column
// therefore adds it here too, and says what it holds.

// Role is what a column holds as far as an erasure is concerned, and so
// what the erasure of agent x under pseudonym p does to it. "The agent's
// rows" are the rows of the table whose Owner column is x.
type Role uint8

const (
	// Plain holds no agent id (counts, times, hashes, statuses, the ids of
	// events, operators, passports, appeals, erasures and keys), or is
	// deleted with its row: kept as it is.
	Plain Role = iota
	// AgentKey is the agents table's own id. The erasure writes the
	// agent's row anew under p, with the chain head its plan gives, and
	// deletes x's row last, once nothing refers to it.
	AgentKey
	// AgentRef holds one agent id, whole: x becomes p in every row.
	AgentRef
	// AgentText is free text that may name agents among other words (a
	// reason, a statement, an author such as "agent:ID"): every occurrence
	// of x standing as a whole identifier becomes p (ReplaceID), row by
	// row.
	AgentText
	// DeleteRow holds the owner's id in a table of derived data (the
	// score cache): the agent's rows are deleted.
	DeleteRow
	// Blanked is emptied ('') in the agent's rows: signed content that
	// names the agent and cannot be renamed without breaking its
	// signature (a passport's document and signature).
	Blanked
	// Revoked is set to the erasure's time in the agent's rows where it
	// is not set already.
	Revoked
	// Sealed is set to the erasure's id in the agent's rows: the chain
	// records whose content named x (ledger_records.sealed_by; the other
	// chains' records the plan seals are written from ErasurePlan.Sealed).
	Sealed
	// LeafHash is set, in the agent's rows, to the leaf hash the
	// checkpoint was signed with (computed from x before the rename), so
	// that old checkpoints still verify. The back ends compute it in Go.
	LeafHash
	// Unlisted is set to VisibilityUnlisted in the agent's row, which the
	// erasure creates when there is none.
	Unlisted
	// Stamped is kept in existing rows and set to the erasure's time in a
	// row the erasure creates (an Unlisted table's).
	Stamped
)

var roleNames = [...]string{"plain", "agent key", "agent id", "agent text", "deleted row", "blanked", "revoked", "sealed", "leaf hash", "unlisted", "stamped"}

func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", r)
}

// NamesAgent reports whether a column of the role can hold an agent's id.
func (r Role) NamesAgent() bool {
	return r == AgentKey || r == AgentRef || r == AgentText || r == DeleteRow
}

// rowAction reports whether the role changes the agent's rows (those of
// the table's Owner), and so needs an Owner.
func (r Role) rowAction() bool {
	return r == DeleteRow || r == Blanked || r == Revoked || r == Sealed || r == LeafHash || r == Unlisted || r == Stamped
}

// Column is one column of a table.
type Column struct {
	Name string
	Role Role
}

// Table is one table of the schema.
type Table struct {
	Name string
	// Key is the primary key: it addresses one row (the row-by-row text
	// renames update by it).
	Key []string
	// Owner is the column naming the agent a row belongs to, "" when a
	// row belongs to no one agent. The roles that change "the agent's
	// rows" act on the rows whose Owner is the erased id.
	Owner string
	// Event is the type of the events the table holds ("" for other
	// tables), and Ends its column that is set exactly when the event is
	// final: retention prunes an event whose Ends is before the cutoff
	// (Prunable).
	Event Type
	Ends  string
	// Columns are every column of the table in every back end.
	Columns []Column
	// Only names the one back end whose schema has the table ("postgres"),
	// "" when every back end's has it.
	Only string
}

// Column returns the named column and whether the table has it.
func (t *Table) Column(name string) (Column, bool) {
	for _, c := range t.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// With returns the names of the table's columns of role r, in order.
func (t *Table) With(r Role) []string {
	var out []string
	for _, c := range t.Columns {
		if c.Role == r {
			out = append(out, c.Name)
		}
	}
	return out
}

func cols(role Role, names ...string) []Column {
	out := make([]Column, len(names))
	for i, n := range names {
		out[i] = Column{Name: n, Role: role}
	}
	return out
}

func join(parts ...[]Column) []Column { return slices.Concat(parts...) }

// catalogue is the schema as the erasure and retention see it, in the order
// an erasure writes the tables. Columns marked "PostgreSQL" exist in that
// back end only.
var catalogue = []Table{
	{Name: "operators", Key: []string{"id"}, Columns: cols(Plain, "id", "created_at")},
	{Name: "agents", Key: []string{"id"}, Owner: "id",
		Columns: join(cols(AgentKey, "id"), cols(Plain, "created_at", "head_seq", "head_hash", "terminal_seq"))},
	{Name: "ledger_records", Key: []string{"agent_id", "seq"}, Owner: "agent_id",
		Columns: join(cols(AgentRef, "agent_id"),
			// event_id is an event's, an erasure's or a summary's id;
			// the record's hash covers it, so it is never renamed.
			cols(Plain, "seq", "event_type", "event_id", "status", "hash", "correction_id", "received_at", "log_index"),
			cols(Sealed, "sealed_by"),
			cols(Plain, "period"))}, // period: PostgreSQL (its partition)
	{Name: "conduit_sessions", Key: []string{"id"}, Owner: "agent_id", Event: ConduitSession, Ends: "completed_at",
		Columns: join(cols(Plain, "id"), cols(AgentRef, "agent_id", "buyer_id"),
			cols(Plain, "operator_id", "started_at", "completed_at", "status", "action_count", "session_cost_usd", "proof_hash",
				"seq", "created_at", "updated_at"),
			cols(AgentRef, "reported_agent_id"), cols(Plain, "reported_status", "voided_at"),
			cols(Plain, "period"))}, // PostgreSQL
	{Name: "ap2_transactions", Key: []string{"id"}, Owner: "provider_id", Event: AP2Transaction, Ends: "settled_at",
		Columns: join(cols(Plain, "id"), cols(AgentRef, "provider_id", "buyer_id"),
			cols(Plain, "operator_id", "status", "escrow_amount_cents", "escrow_modifier_bp",
				"escrow_amount_usd", "escrow_modifier", // PostgreSQL
				"started_at", "settled_at", "seq", "created_at", "updated_at"),
			cols(AgentRef, "reported_agent_id"), cols(Plain, "reported_status", "voided_at"),
			cols(Plain, "period"))}, // PostgreSQL
	{Name: "task_offers", Key: []string{"id"}, Owner: "agent_id", Event: TaskOffer, Ends: "decided_at",
		Columns: join(cols(Plain, "id"), cols(AgentRef, "agent_id", "buyer_id"),
			cols(Plain, "operator_id", "status", "started_at", "decided_at", "seq", "created_at", "updated_at"),
			cols(AgentRef, "reported_agent_id"), cols(Plain, "reported_status", "voided_at"),
			cols(Plain, "period"))}, // PostgreSQL
	{Name: "corrections", Key: []string{"id"},
		Columns: join(cols(Plain, "id", "event_type", "event_id", "action"), cols(AgentRef, "from_agent", "to_agent"),
			cols(Plain, "from_status", "to_status"), cols(AgentText, "reason"), cols(Plain, "appeal_id"), cols(AgentText, "actor"),
			cols(Plain, "created_at", "reissued_at"))},
	// The cache is rebuilt on demand: the agent's row is deleted with its
	// passport copy.
	{Name: "swarmscore_cache", Key: []string{"agent_id"}, Owner: "agent_id",
		Columns: join(cols(DeleteRow, "agent_id"),
			cols(Plain, "score", "tier", "conduit_sessions_90d", "conduit_successful_90d", "ap2_sessions_90d", "ap2_successful_90d",
				"conduit_contribution", "ap2_contribution", "escrow_modifier_bp",
				"escrow_modifier", // PostgreSQL
				"computed_at", "expires_at", "valid_until", "passport_json", "passport_signature", "ledger_seq", "passport_kid"))},
	{Name: "passports", Key: []string{"id"}, Owner: "agent_id",
		Columns: join(cols(Plain, "id"), cols(AgentRef, "agent_id"), cols(Plain, "computed_at", "expires_at", "key_id"),
			cols(Blanked, "signature", "document"), cols(Revoked, "revoked_at"))},
	// A credential's status index names its passport, never its agent:
	// the erasure revokes the passport, which the status list then shows.
	{Name: "credential_status", Key: []string{"idx"}, Columns: cols(Plain, "idx", "passport_id")},
	{Name: "api_tokens", Key: []string{"id"}, Owner: "agent_id",
		Columns: join(cols(Plain, "id", "operator_id", "token_sha256", "created_at", "role"), cols(Revoked, "revoked_at"), cols(AgentRef, "agent_id"))},
	// The action log keeps what an operator did to an agent after the
	// agent is erased, under its pseudonym: the entry's agent and its
	// words are renamed like every other record, and nothing else of it
	// changes (the tables refuse it).
	{Name: "operator_actions", Key: []string{"seq"},
		Columns: join(cols(Plain, "seq", "at", "operator_id", "token_id", "role", "via", "client", "action"),
			cols(AgentRef, "agent_id"), cols(Plain, "target"), cols(AgentText, "detail"), cols(Plain, "outcome", "code"))},
	// A console session is an operator's (an agent's token cannot sign
	// in): it names no agent.
	{Name: "console_sessions", Key: []string{"id_sha256"},
		Columns: cols(Plain, "id_sha256", "token_id", "created_at", "seen_at", "client", "browser", "revoked_at", "revoked_by")},
	{Name: "consent", Key: []string{"agent_id"}, Owner: "agent_id",
		Columns: join(cols(AgentRef, "agent_id"), cols(Unlisted, "visibility"), cols(Stamped, "consented_at"),
			cols(Plain, "disclosure_version", "consent_given_at"), cols(AgentText, "consent_by"))},
	{Name: "appeals", Key: []string{"id"}, Owner: "agent_id",
		Columns: join(cols(Plain, "id"), cols(AgentRef, "agent_id"), cols(Plain, "passport_id", "passport_computed_at", "grounds"),
			cols(AgentText, "statement"), cols(Plain, "state"), cols(AgentText, "filed_by"),
			cols(Plain, "filed_at", "acknowledged_at", "decided_at", "escalated_at"), cols(AgentText, "decision"), cols(Plain, "reissued_at"))},
	{Name: "appeal_events", Key: []string{"appeal_id", "event_type", "event_id"}, Columns: cols(Plain, "appeal_id", "event_type", "event_id")},
	{Name: "appeal_actions", Key: []string{"appeal_id", "seq"},
		Columns: join(cols(Plain, "appeal_id", "seq", "action"), cols(AgentText, "actor"), cols(Plain, "at"), cols(AgentText, "note"))},
	// An escrow hold names its provider (its owner) and its buyer, and
	// its reasons may name agents. The hold's chain hashes its parties
	// (VerifyHold): after an erasure renames one, escrow reconcile
	// reports the hold as sealed by that erasure instead of broken.
	{Name: "escrow_holds", Key: []string{"transaction_id"}, Owner: "provider_id",
		Columns: join(cols(Plain, "transaction_id"), cols(AgentRef, "provider_id", "buyer_id"),
			cols(Plain, "operator_id", "amount_cents", "currency", "score", "tier", "escrow_modifier_bp", "passport_id", "kid",
				"hold_cents", "released_cents", "state", "payout_cents", "fee_cents", "refund_cents"),
			cols(AgentText, "reason"), cols(Plain, "created_at", "updated_at", "seq", "hash", "correction_id"))},
	{Name: "escrow_hold_steps", Key: []string{"transaction_id", "seq"},
		Columns: join(cols(Plain, "transaction_id", "seq", "action", "state", "at", "actor", "payout_cents", "fee_cents", "refund_cents"),
			cols(AgentText, "reason"), cols(Plain, "correction_id", "hash"))},
	// A proof check names a Conduit session by its event id and an
	// operator: no agent.
	{Name: "conduit_proofs", Key: []string{"event_id", "seq"},
		Columns: cols(Plain, "event_id", "seq", "at", "actor", "size", "sha256", "expected", "outcome", "hash")},
	{Name: "chain_breaks", Key: []string{"agent_id"}, Owner: "agent_id",
		Columns: join(cols(AgentRef, "agent_id"), cols(Plain, "found_at", "seq"), cols(AgentText, "reason"))},
	{Name: "chain_anchors", Key: []string{"agent_id"}, Owner: "agent_id", Columns: join(cols(AgentRef, "agent_id"), cols(Plain, "seq", "hash"))},
	{Name: "ledger_summaries", Key: []string{"agent_id", "seq"}, Owner: "agent_id",
		Columns: join(cols(AgentRef, "agent_id"), cols(Plain, "seq", "created_at", "pruned_through", "anchor"))},
	{Name: "ledger_summary_rows", Key: []string{"agent_id", "seq", "month", "event_type", "status", "voided"}, Owner: "agent_id",
		Columns: join(cols(AgentRef, "agent_id"), cols(Plain, "seq", "month", "event_type", "status", "voided", "count", "escrow_cents"))},
	// A checkpoint's document is the signed note of its root: it names no
	// agent.
	{Name: "checkpoints", Key: []string{"number"}, Columns: cols(Plain, "number", "created_at", "agents", "root", "document")},
	{Name: "checkpoint_leaves", Key: []string{"number", "agent_id"}, Owner: "agent_id",
		Columns: join(cols(Plain, "number"), cols(AgentRef, "agent_id"), cols(Plain, "seq", "hash", "position"), cols(LeafHash, "erased_hash"))},
	// An erasure names its pseudonym (never erasable: DecideErasure
	// refuses it) and its author, an operator; its record's hash covers
	// both.
	{Name: "erasures", Key: []string{"id"}, Columns: cols(Plain, "id", "pseudonym", "identity", "actor", "created_at", "digests")},
	// The partitions of the event tables and the chain (PostgreSQL only:
	// postgres/partitions.go); a partition's rows are its tables'.
	{Name: "ledger_partitions", Key: []string{"period"}, Only: "postgres", Columns: cols(Plain, "period", "opened_at", "closed_at", "dropped_at")},
	// The transparency log (logleaf.go): leaves are a record's hash and
	// seq, subtrees and checkpoints hashes of them, cosignatures a
	// witness's key name and signature; none names an agent, so erasure
	// renames nothing there.
	{Name: "log_state", Key: []string{"one"}, Only: "postgres", Columns: cols(Plain, "one", "size")},
	{Name: "log_leaves", Key: []string{"idx"}, Columns: cols(Plain, "idx", "hash", "seq")},
	{Name: "log_subtrees", Key: []string{"level", "idx"}, Columns: cols(Plain, "level", "idx", "hash")},
	{Name: "log_checkpoints", Key: []string{"size"}, Columns: cols(Plain, "size", "created_at", "root", "note")},
	{Name: "checkpoint_cosignatures", Key: []string{"size", "key_name"}, Columns: cols(Plain, "size", "key_name", "signature", "created_at")},
	// Webhooks (internal/webhook). An endpoint is an operator's: it names
	// no agent. A message's payload names the agent it is about, in its
	// data: the stored copy is renamed like every other record (what was
	// delivered is the receiver's).
	{Name: "webhooks", Key: []string{"id"}, Columns: cols(Plain, "id", "url", "events", "secret", "created_at", "created_by", "deleted_at")},
	{Name: "webhook_messages", Key: []string{"id"},
		Columns: join(cols(Plain, "id", "endpoint_id", "event_type"), cols(AgentRef, "agent_id"), cols(AgentText, "payload"),
			cols(Plain, "created_at", "state", "attempts", "next_attempt_at", "delivered_at", "last_status", "last_error"))},
	{Name: "webhook_attempts", Key: []string{"message_id", "n"}, Columns: cols(Plain, "message_id", "n", "at", "status", "error", "duration_us")},
	// The last score and tier announced for an agent are derived data:
	// the agent's row is deleted, as its cache entry is.
	{Name: "webhook_scores", Key: []string{"agent_id"}, Owner: "agent_id",
		Columns: join(cols(DeleteRow, "agent_id"), cols(Plain, "score", "tier"))},
	{Name: "signing_keys", Key: []string{"id"},
		Columns: cols(Plain, "id", "alg", "environment", "state", "created_at", "state_changed_at", "active_from", "active_until", "public_key", "sealed_key")},
}

// Catalogue returns every table of the schema, in the order an erasure
// writes them. The slice is shared: callers must not modify it.
func Catalogue() []Table { return catalogue }

// CatalogueTable returns the named table and whether the catalogue has it.
func CatalogueTable(name string) (*Table, bool) {
	for i := range catalogue {
		if catalogue[i].Name == name {
			return &catalogue[i], true
		}
	}
	return nil, false
}

// EventTable returns the table holding events of type t; t must be one of
// Types.
func EventTable(t Type) *Table {
	for i := range catalogue {
		if catalogue[i].Event == t {
			return &catalogue[i]
		}
	}
	panic(fmt.Sprintf("ledger: no table holds %q events", t))
}

// agentName is the rule by which a column's name says it holds an agent's
// id: its last word names a party to an event or a move, optionally
// followed by "id" (agent_id, reported_agent_id, from_agent, to_agent,
// provider_id, buyer_id, seller_id, payee, moved_to, moved_from, …).
var agentName = regexp.MustCompile(`(^|_)(agent|provider|buyer|seller|payer|payee|counterparty|owner|principal|requester)(_id)?$|^moved_(to|from)$`)

// LooksLikeAgent reports whether a column's name says it holds an agent's
// id (the rule CheckSchema applies to columns that are not agents.id).
func LooksLikeAgent(column string) bool { return agentName.MatchString(column) }

// SchemaColumn is one column of a live schema, as a back end reports it.
type SchemaColumn struct {
	Table, Column, Type string
}

// ToolTables are tables a live schema holds that belong to the migration
// tool, not to this program; CheckSchema skips them.
var ToolTables = []string{"goose_db_version"}

// CheckSchema compares a back end's live schema with the catalogue and
// returns one line per disagreement, nil when there is none:
//   - a table or a column the catalogue does not list (every column of
//     every table is classified, so that a new one says what it holds);
//   - a column whose name says it holds an agent id (LooksLikeAgent)
//     classified as holding none;
//   - a column the catalogue gives a role other than Plain, or names as a
//     key, an owner or an event's end, that the schema lacks (the
//     generated statements would fail).
func CheckSchema(live []SchemaColumn) []string {
	var out []string
	have := map[string]map[string]bool{}
	for _, c := range live {
		if slices.Contains(ToolTables, c.Table) {
			continue
		}
		if have[c.Table] == nil {
			have[c.Table] = map[string]bool{}
		}
		have[c.Table][c.Column] = true
		t, ok := CatalogueTable(c.Table)
		if !ok {
			out = append(out, fmt.Sprintf("%s.%s (%s): table not in the ledger catalogue", c.Table, c.Column, c.Type))
			continue
		}
		col, ok := t.Column(c.Column)
		switch {
		case !ok && LooksLikeAgent(c.Column):
			out = append(out, fmt.Sprintf("%s.%s (%s): names an agent and is not in the ledger catalogue", c.Table, c.Column, c.Type))
		case !ok:
			out = append(out, fmt.Sprintf("%s.%s (%s): column not in the ledger catalogue", c.Table, c.Column, c.Type))
		case LooksLikeAgent(c.Column) && !col.Role.NamesAgent():
			out = append(out, fmt.Sprintf("%s.%s (%s): names an agent but the catalogue says %s", c.Table, c.Column, c.Type, col.Role))
		}
	}
	for _, t := range catalogue {
		cols, ok := have[t.Name]
		if !ok && t.Only == "" {
			out = append(out, fmt.Sprintf("%s: in the ledger catalogue, not in the schema", t.Name))
		}
		if !ok {
			continue
		}
		need := slices.Concat(t.Key, []string{t.Owner, t.Ends})
		for _, c := range t.Columns {
			if c.Role != Plain {
				need = append(need, c.Name)
			}
		}
		for _, n := range need {
			if n != "" && !cols[n] {
				out = append(out, fmt.Sprintf("%s.%s: in the ledger catalogue, not in the schema", t.Name, n))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
