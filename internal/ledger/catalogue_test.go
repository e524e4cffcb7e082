package ledger

import (
	"slices"
	"strings"
	"testing"
)

// TestCatalogueConsistent: every table names its key, owner and end among
// its columns, roles that act on "the agent's rows" have an owner, and
// every event type has exactly one table.
func TestCatalogueConsistent(t *testing.T) {
	tables := map[string]bool{}
	events := map[Type]int{}
	for _, tab := range Catalogue() {
		if tables[tab.Name] {
			t.Errorf("%s listed twice", tab.Name)
		}
		tables[tab.Name] = true
		seen := map[string]bool{}
		for _, c := range tab.Columns {
			if seen[c.Name] {
				t.Errorf("%s.%s listed twice", tab.Name, c.Name)
			}
			seen[c.Name] = true
			if c.Role.rowAction() && tab.Owner == "" {
				t.Errorf("%s.%s is %s but %s has no owner", tab.Name, c.Name, c.Role, tab.Name)
			}
			if c.Role == AgentKey && (tab.Name != "agents" || c.Name != "id") {
				t.Errorf("%s.%s: only agents.id is the agent key", tab.Name, c.Name)
			}
			// The back ends compute leaf hashes for this table alone.
			if c.Role == LeafHash && tab.Name != "checkpoint_leaves" {
				t.Errorf("%s.%s: leaf hashes are written for checkpoint_leaves only", tab.Name, c.Name)
			}
		}
		if len(tab.Key) == 0 {
			t.Errorf("%s has no key", tab.Name)
		}
		for _, k := range tab.Key {
			if !seen[k] {
				t.Errorf("%s: key column %s is not a column", tab.Name, k)
			}
		}
		if tab.Owner != "" {
			c, ok := tab.Column(tab.Owner)
			if !ok || (c.Role != AgentRef && c.Role != AgentKey && c.Role != DeleteRow) {
				t.Errorf("%s: owner %s is %v (%v), want an agent id", tab.Name, tab.Owner, c.Role, ok)
			}
		}
		if len(tab.With(Unlisted)) > 1 || (len(tab.With(Unlisted)) == 0) != (len(tab.With(Stamped)) == 0) {
			t.Errorf("%s: an Unlisted column goes with the Stamped columns of the row it makes", tab.Name)
		}
		if len(tab.With(DeleteRow)) > 0 && len(tab.With(AgentRef)) > 0 {
			t.Errorf("%s: a table whose rows are deleted renames nothing", tab.Name)
		}
		if tab.Event != "" {
			events[tab.Event]++
			if c, ok := tab.Column(tab.Ends); !ok || c.Role != Plain {
				t.Errorf("%s: end column %q is %v (%v)", tab.Name, tab.Ends, c.Role, ok)
			}
			if tab.Owner == "" {
				t.Errorf("%s: an event table names the agent the event counts for", tab.Name)
			}
		}
	}
	for _, typ := range Types {
		if events[typ] != 1 {
			t.Errorf("%d tables hold %s events, want 1", events[typ], typ)
		}
		if EventTable(typ).Event != typ {
			t.Errorf("EventTable(%s) = %s", typ, EventTable(typ).Name)
		}
	}
}

func TestLooksLikeAgent(t *testing.T) {
	for name, want := range map[string]bool{
		"agent_id": true, "reported_agent_id": true, "from_agent": true, "to_agent": true, "provider_id": true,
		"buyer_id": true, "seller": true, "payee_id": true, "moved_to": true, "moved_from": true, "escrow_agent": true,
		"agents": false, "agent_count": false, "operator_id": false, "id": false, "event_id": false,
		"reason": false, "actor": false, "buyers": false, "provider_fee": false, "movedto": false,
	} {
		if got := LooksLikeAgent(name); got != want {
			t.Errorf("LooksLikeAgent(%q) = %v, want %v", name, got, want)
		}
	}
}

// schemaOf is the catalogue as a live schema would report it.
func schemaOf(tables []Table) []SchemaColumn {
	var out []SchemaColumn
	for _, tab := range tables {
		for _, c := range tab.Columns {
			out = append(out, SchemaColumn{Table: tab.Name, Column: c.Name, Type: "text"})
		}
	}
	return out
}

func TestCheckSchema(t *testing.T) {
	live := schemaOf(Catalogue())
	if got := CheckSchema(append(live, SchemaColumn{Table: "goose_db_version", Column: "version_id", Type: "integer"})); got != nil {
		t.Fatalf("the catalogue's own schema: %q", got)
	}
	check := func(name string, live []SchemaColumn, want ...string) {
		t.Helper()
		if got := CheckSchema(live); !slices.Equal(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want)
		}
	}
	check("an agent column added", append(slices.Clone(live), SchemaColumn{"conduit_sessions", "escrow_agent", "text"}),
		"conduit_sessions.escrow_agent (text): names an agent and is not in the ledger catalogue")
	check("a plain column added", append(slices.Clone(live), SchemaColumn{"appeals", "priority", "integer"}),
		"appeals.priority (integer): column not in the ledger catalogue")
	check("a table added", append(slices.Clone(live), SchemaColumn{"notices", "id", "text"}, SchemaColumn{"notices", "agent_id", "text"}),
		"notices.agent_id (text): table not in the ledger catalogue", "notices.id (text): table not in the ledger catalogue")
	dropped := slices.DeleteFunc(slices.Clone(live), func(c SchemaColumn) bool {
		return c.Table == "corrections" && c.Column == "reason" || c.Table == "conduit_sessions" && c.Column == "action_count" ||
			c.Table == "signing_keys"
	})
	check("columns and a table dropped", dropped,
		"corrections.reason: in the ledger catalogue, not in the schema", "signing_keys: in the ledger catalogue, not in the schema")

	// A column whose name says it holds an agent, classified as holding
	// none.
	saved := catalogue
	t.Cleanup(func() { catalogue = saved })
	catalogue = slices.Clone(saved)
	for i := range catalogue {
		if catalogue[i].Name == "task_offers" {
			catalogue[i].Columns = slices.Clone(catalogue[i].Columns)
			for j := range catalogue[i].Columns {
				if catalogue[i].Columns[j].Name == "buyer_id" {
					catalogue[i].Columns[j].Role = Plain
				}
			}
		}
	}
	check("an agent column classified plain", live, "task_offers.buyer_id (text): names an agent but the catalogue says plain")
	for _, line := range CheckSchema(live) {
		if !strings.Contains(line, "buyer_id") {
			t.Errorf("unexpected: %s", line)
		}
	}
}
