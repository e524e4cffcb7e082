package store_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store"
)

var sqliteLike = store.Dialect{
	Param:    store.NumberedParam,
	Contains: func(s, sub string) string { return "instr(" + s + ", " + sub + ") > 0" },
	Text:     func(c string) string { return c },
	Bytewise: func(e string) string { return e + " /*bytewise*/" },
}

// TestErasureSQL pins what the catalogue makes an erasure run: every agent
// column renamed, the agent's rows acted on, the free text renamed.
func TestErasureSQL(t *testing.T) {
	e := store.NewErasureSQL(sqliteLike)
	P, X, At, ID := store.ArgPseudonym, store.ArgErased, store.ArgAt, store.ArgID
	want := []store.Statement{
		{"UPDATE ledger_records SET agent_id = ?1, sealed_by = ?2 WHERE agent_id = ?3", []store.EraseArg{P, ID, X}},
		{"UPDATE conduit_sessions SET agent_id = ?1 WHERE agent_id = ?2", []store.EraseArg{P, X}},
		{"UPDATE conduit_sessions SET buyer_id = ?1 WHERE buyer_id = ?2", []store.EraseArg{P, X}},
		{"UPDATE conduit_sessions SET reported_agent_id = ?1 WHERE reported_agent_id = ?2", []store.EraseArg{P, X}},
		{"UPDATE ap2_transactions SET provider_id = ?1 WHERE provider_id = ?2", []store.EraseArg{P, X}},
		{"UPDATE ap2_transactions SET buyer_id = ?1 WHERE buyer_id = ?2", []store.EraseArg{P, X}},
		{"UPDATE ap2_transactions SET reported_agent_id = ?1 WHERE reported_agent_id = ?2", []store.EraseArg{P, X}},
		{"UPDATE task_offers SET agent_id = ?1 WHERE agent_id = ?2", []store.EraseArg{P, X}},
		{"UPDATE task_offers SET buyer_id = ?1 WHERE buyer_id = ?2", []store.EraseArg{P, X}},
		{"UPDATE task_offers SET reported_agent_id = ?1 WHERE reported_agent_id = ?2", []store.EraseArg{P, X}},
		{"UPDATE corrections SET from_agent = ?1 WHERE from_agent = ?2", []store.EraseArg{P, X}},
		{"UPDATE corrections SET to_agent = ?1 WHERE to_agent = ?2", []store.EraseArg{P, X}},
		{"DELETE FROM swarmscore_cache WHERE agent_id = ?1", []store.EraseArg{X}},
		{"UPDATE passports SET agent_id = ?1, signature = '', document = '', revoked_at = COALESCE(revoked_at, ?2) WHERE agent_id = ?3", []store.EraseArg{P, At, X}},
		{"UPDATE api_tokens SET agent_id = ?1, revoked_at = COALESCE(revoked_at, ?2) WHERE agent_id = ?3", []store.EraseArg{P, At, X}},
		{"UPDATE operator_actions SET agent_id = ?1 WHERE agent_id = ?2", []store.EraseArg{P, X}},
		{"UPDATE consent SET agent_id = ?1 WHERE agent_id = ?2", []store.EraseArg{P, X}},
		{"INSERT INTO consent (agent_id, visibility, consented_at) VALUES (?1, 'unlisted', ?2) ON CONFLICT (agent_id) DO UPDATE SET visibility = 'unlisted'", []store.EraseArg{P, At}},
		{"UPDATE appeals SET agent_id = ?1 WHERE agent_id = ?2", []store.EraseArg{P, X}},
		{"UPDATE chain_breaks SET agent_id = ?1 WHERE agent_id = ?2", []store.EraseArg{P, X}},
		{"UPDATE chain_anchors SET agent_id = ?1 WHERE agent_id = ?2", []store.EraseArg{P, X}},
		{"UPDATE ledger_summaries SET agent_id = ?1 WHERE agent_id = ?2", []store.EraseArg{P, X}},
		{"UPDATE ledger_summary_rows SET agent_id = ?1 WHERE agent_id = ?2", []store.EraseArg{P, X}},
		{"UPDATE webhook_messages SET agent_id = ?1 WHERE agent_id = ?2", []store.EraseArg{P, X}},
		{"DELETE FROM webhook_scores WHERE agent_id = ?1", []store.EraseArg{X}},
	}
	if len(e.Updates) != len(want) {
		t.Errorf("%d statements, want %d", len(e.Updates), len(want))
	}
	for i := range min(len(e.Updates), len(want)) {
		if g, w := e.Updates[i], want[i]; g.SQL != w.SQL || !slices.Equal(g.Args, w.Args) {
			t.Errorf("statement %d:\n got %s %v\nwant %s %v", i, g.SQL, g.Args, w.SQL, w.Args)
		}
	}
	texts := map[string]string{}
	for _, r := range e.Texts {
		texts[r.Select] = r.Update
	}
	for sel, upd := range map[string]string{
		"SELECT id, reason, actor FROM corrections WHERE instr(COALESCE(reason, ''), ?1) > 0 OR instr(COALESCE(actor, ''), ?1) > 0":                                                            "UPDATE corrections SET reason = ?1, actor = ?2 WHERE id = ?3",
		"SELECT agent_id, consent_by FROM consent WHERE instr(COALESCE(consent_by, ''), ?1) > 0":                                                                                               "UPDATE consent SET consent_by = ?1 WHERE agent_id = ?2",
		"SELECT id, statement, filed_by, decision FROM appeals WHERE instr(COALESCE(statement, ''), ?1) > 0 OR instr(COALESCE(filed_by, ''), ?1) > 0 OR instr(COALESCE(decision, ''), ?1) > 0": "UPDATE appeals SET statement = ?1, filed_by = ?2, decision = ?3 WHERE id = ?4",
		"SELECT appeal_id, seq, actor, note FROM appeal_actions WHERE instr(COALESCE(actor, ''), ?1) > 0 OR instr(COALESCE(note, ''), ?1) > 0":                                                 "UPDATE appeal_actions SET actor = ?1, note = ?2 WHERE appeal_id = ?3 AND seq = ?4",
		"SELECT agent_id, reason FROM chain_breaks WHERE instr(COALESCE(reason, ''), ?1) > 0":                                                                                                  "UPDATE chain_breaks SET reason = ?1 WHERE agent_id = ?2",
		"SELECT seq, detail FROM operator_actions WHERE instr(COALESCE(detail, ''), ?1) > 0":                                                                                                   "UPDATE operator_actions SET detail = ?1 WHERE seq = ?2",
		"SELECT id, payload FROM webhook_messages WHERE instr(COALESCE(payload, ''), ?1) > 0":                                                                                                  "UPDATE webhook_messages SET payload = ?1 WHERE id = ?2",
	} {
		if got, ok := texts[sel]; !ok || got != upd {
			t.Errorf("text rename %s: %q (%v), want %s", sel, got, ok, upd)
		}
	}
	if len(e.Texts) != 7 {
		t.Errorf("%d text renames, want 7", len(e.Texts))
	}
	st := e.Updates[13]
	if got := st.Values("p", "x", int64(7), "era"); !slices.Equal(got, []any{"p", int64(7), "x"}) {
		t.Errorf("Values = %v", got)
	}
}

// TestErasureSQLCoversCatalogue: every agent column of the catalogue is
// renamed, acted on or left to the back end (agents.id, the leaves).
func TestErasureSQLCoversCatalogue(t *testing.T) {
	e := store.NewErasureSQL(sqliteLike)
	var all strings.Builder
	for _, s := range e.Updates {
		all.WriteString(s.SQL + "\n")
	}
	for _, r := range e.Texts {
		all.WriteString(r.Update + "\n")
	}
	for _, tab := range ledger.Catalogue() {
		if tab.Name == "agents" || tab.Name == "checkpoint_leaves" {
			continue
		}
		for _, c := range tab.Columns {
			if c.Role != ledger.Plain && c.Role != ledger.Stamped && !strings.Contains(all.String(), tab.Name+" SET "+c.Name+" = ") &&
				!strings.Contains(all.String(), ", "+c.Name+" = ") && !strings.Contains(all.String(), "FROM "+tab.Name+" WHERE "+c.Name) &&
				!strings.Contains(all.String(), "INSERT INTO "+tab.Name) {
				t.Errorf("%s.%s (%s) is in no statement", tab.Name, c.Name, c.Role)
			}
		}
	}
}

// TestNotPrunable pins the prune condition ledger.Prunable is written as.
func TestNotPrunable(t *testing.T) {
	want := `NOT (r.event_type = 'summary'
	  OR (r.event_type = 'conduit_session' AND EXISTS (SELECT 1 FROM conduit_sessions e WHERE e.id = r.event_id AND e.completed_at < ?2))
	  OR (r.event_type = 'ap2_transaction' AND EXISTS (SELECT 1 FROM ap2_transactions e WHERE e.id = r.event_id AND e.settled_at < ?2))
	  OR (r.event_type = 'task_offer' AND EXISTS (SELECT 1 FROM task_offers e WHERE e.id = r.event_id AND e.decided_at < ?2)))
	OR EXISTS (SELECT 1 FROM corrections k WHERE k.event_type = r.event_type AND k.event_id = r.event_id AND k.action = 'reattribute')`
	if got := store.NotPrunable("?2"); got != want {
		t.Errorf("NotPrunable:\n%s\nwant\n%s", got, want)
	}
	if got := store.PruneCandidates(sqliteLike); !strings.Contains(got, "NOT ("+strings.ReplaceAll(want, "?2", "?1")+"))") ||
		!strings.HasSuffix(got, "ORDER BY a.id /*bytewise*/") {
		t.Errorf("PruneCandidates:\n%s", got)
	}
	if got := store.PruneFirstKept(sqliteLike); !strings.HasPrefix(got, "SELECT MIN(r.seq) FROM ledger_records r WHERE r.agent_id = ?1 AND r.seq > ?3 AND (NOT (") ||
		!strings.HasSuffix(got, want+")") {
		t.Errorf("PruneFirstKept:\n%s", got)
	}
}

// rows is store.Rows over fixed values.
type rows struct {
	vals [][]*string
	i    int
}

func (r *rows) Next() bool { r.i++; return r.i <= len(r.vals) }
func (r *rows) Err() error { return nil }
func (r *rows) Close()     {}
func (r *rows) Scan(dest ...any) error {
	for j, d := range dest {
		*d.(**string) = r.vals[r.i-1][j]
	}
	return nil
}

func TestTextRenames(t *testing.T) {
	var tr store.TextRename
	for _, r := range store.NewErasureSQL(sqliteLike).Texts {
		if strings.HasPrefix(r.Update, "UPDATE appeal_actions") {
			tr = r
		}
	}
	s := func(v string) *string { return &v }
	got, err := tr.Renames(&rows{vals: [][]*string{
		{s("apl-1"), s("2"), s("agent:x"), nil},
		{s("apl-1"), s("3"), s("agent:x-2"), s("x.y")}, // no whole-identifier x: left alone
	}}, "x", "p")
	if err != nil || len(got) != 1 {
		t.Fatalf("Renames = %v %v", got, err)
	}
	if args := got[0]; len(args) != 4 || *args[0].(*string) != "agent:p" || args[1].(*string) != nil || *args[2].(*string) != "apl-1" || *args[3].(*string) != "2" {
		t.Errorf("Renames = %v", args)
	}
}

func TestErasureScope(t *testing.T) {
	q := store.ErasureScope(sqliteLike, "SELECT … FROM ledger_records r")
	want := "SELECT … FROM ledger_records r WHERE r.agent_id <> ?1 AND (COALESCE(c.buyer_id, t.buyer_id, o.buyer_id) = ?1\n\t    OR k.from_agent = ?1\n\t    OR k.to_agent = ?1\n\t    OR instr(k.reason, ?1) > 0\n\t    OR instr(k.actor, ?1) > 0)\n\t  ORDER BY r.agent_id, r.seq"
	if len(q) != 2 || q[0] != "SELECT … FROM ledger_records r WHERE r.agent_id = ?1 ORDER BY r.seq" || q[1] != want {
		t.Errorf("ErasureScope:\n%s\nwant\n%s", strings.Join(q, "\n"), want)
	}
}
