package storetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// testCatalogue: the live schema after every migration is the one
// ledger.Catalogue describes. Every column of every table is listed there
// with what an erasure does to it, so a migration that adds a table or a
// column (above all one that names an agent: ledger.LooksLikeAgent) fails
// here until the catalogue says what it holds; the erasure and the prune
// condition are generated from it.
func testCatalogue(t *testing.T, h Harness) {
	s := h.Open(t)
	live := h.Tamper.Schema(t, s)
	if len(live) == 0 {
		t.Fatal("the back end reports no columns")
	}
	if problems := ledger.CheckSchema(live); len(problems) > 0 {
		t.Errorf("the schema and ledger.Catalogue disagree; register what each column holds:\n%s", strings.Join(problems, "\n"))
	}
}

// testCatalogueCatchesUnregistered: on a scratch database, a column whose
// name says it holds an agent id and a whole new table, added behind the
// catalogue's back, are what testCatalogue reports.
func testCatalogueCatchesUnregistered(t *testing.T, h Harness) {
	s := h.Open(t)
	h.Tamper.Exec(t, s, `ALTER TABLE conduit_sessions ADD COLUMN escrow_agent TEXT;
		CREATE TABLE notices (id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, url TEXT NOT NULL)`)
	got := ledger.CheckSchema(h.Tamper.Schema(t, s))
	for i, line := range got {
		got[i] = strings.ToLower(line)
	}
	want := []string{
		"conduit_sessions.escrow_agent (text): names an agent and is not in the ledger catalogue",
		"notices.agent_id (text): table not in the ledger catalogue",
		"notices.id (text): table not in the ledger catalogue",
		"notices.url (text): table not in the ledger catalogue",
	}
	if !slices.Equal(got, want) {
		t.Errorf("unregistered columns reported as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
