package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for tampering
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", for tampering

	"github.com/swarmscore/swarmscore/client"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
)

var clockBuild struct {
	once sync.Once
	path string
	err  error
}

// clockBinary builds, once, the binary with the e2eclock tag: its use cases
// run ahead of the system clock by the duration in the file
// SWARMSCORE_E2E_CLOCK names (cmd/swarmscore/clock_e2e.go), so that a
// running server can be moved past a deadline.
func clockBinary(t *testing.T) string {
	t.Helper()
	clockBuild.once.Do(func() {
		clockBuild.path = filepath.Join(filepath.Dir(bin), "swarmscore-clock")
		out, err := exec.Command("go", "build", "-tags", "e2eclock", "-o", clockBuild.path, "github.com/swarmscore/swarmscore/cmd/swarmscore").CombinedOutput()
		if err != nil {
			clockBuild.err = fmt.Errorf("%v: %s", err, out)
		}
	})
	if clockBuild.err != nil {
		t.Fatalf("building the e2eclock binary: %v", clockBuild.err)
	}
	return clockBuild.path
}

func passportID(t *testing.T, doc []byte) string {
	t.Helper()
	var p struct {
		ID string `json:"agent_passport_id"`
	}
	if err := json.Unmarshal(doc, &p); err != nil || p.ID == "" {
		t.Fatalf("no agent_passport_id in %s: %v", doc, err)
	}
	return p.ID
}

// TestAppealEndToEnd: through the real server, an appeal against an issued
// passport is upheld with a correction; the old passport then fails L2 and
// the new one, issued in the decision's transaction, verifies. A second
// appeal goes overdue when the server's clock is moved 8 days ahead, and is
// listed first and counted on /metrics; 31 days on, the first passport can
// no longer be appealed.
func TestAppealEndToEnd(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clockFile := filepath.Join(dir, "clock")
	setClock := func(d time.Duration) {
		if err := os.WriteFile(clockFile, []byte(d.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	setClock(0)
	dsn := "sqlite:" + filepath.Join(dir, "swarmscore.db")
	env := []string{"SWARMSCORE_ADMIN_TOKEN=" + adminToken, "SWARMSCORE_SIGNING_KEY=" + signingKey}
	s := startBinary(t, clockBinary(t), dsn, nil, append(env, "SWARMSCORE_E2E_CLOCK="+clockFile)...)
	op, pub := s.client(adminToken), s.client("")
	if _, err := op.IngestEvents(ctx, history("agent-a")); err != nil {
		t.Fatal(err)
	}
	old, err := pub.Certificate(ctx, "agent-a")
	if err != nil {
		t.Fatal(err)
	}
	// agent-a-c79 is one of the 4 FAILED sessions; the agent says it was
	// delivered.
	disputed := client.EventKey{EventType: "conduit_session", EventID: "agent-a-c79"}
	ap, err := op.FileAppeal(ctx, client.AppealFiling{PassportID: passportID(t, old.Raw), Grounds: "incorrect_status",
		Statement: "agent-a-c79 was delivered; the buyer confirmed in writing", Events: []client.EventKey{disputed}})
	if err != nil || ap.State != "submitted" || ap.NextDeadline == nil || ap.NextDeadline.Duty != "acknowledge" || ap.FiledBy != "admin" {
		t.Fatalf("file: %+v %v", ap, err)
	}
	if _, err := op.FileAppeal(ctx, client.AppealFiling{PassportID: passportID(t, old.Raw), Grounds: "formula", Statement: "AP2 weighs too much",
		Events: []client.EventKey{disputed}}); !client.IsProblem(err, client.ProblemInvalid) || !strings.Contains(err.Error(), "formula") {
		t.Fatalf("a disagreement with the formula: %v", err)
	}
	up, err := op.ActOnAppeal(ctx, ap.ID, "uphold", "the buyer's confirmation checks out",
		[]client.CorrectionRequest{{EventType: disputed.EventType, EventID: disputed.EventID, Action: "status", Status: "VERIFIED"}})
	if err != nil || up.State != "upheld" || up.ReissuedAt == nil || len(up.Corrections) != 1 || up.NextDeadline != nil {
		t.Fatalf("uphold: %+v %v", up, err)
	}
	v, err := pub.Verify(ctx, old.Raw, "agent-a")
	if err != nil || v.Valid || !v.SignatureValid || v.ScoreValid || !hasCode(v, service.CodeLedgerMismatch) {
		t.Fatalf("the old passport after the uphold: %+v %v", v, err)
	}
	cur, err := pub.Certificate(ctx, "agent-a")
	if err != nil || bytes.Equal(cur.Raw, old.Raw) {
		t.Fatalf("no new passport after the uphold: %v", err)
	}
	if v, err := pub.Verify(ctx, cur.Raw, "agent-a"); err != nil || !v.Valid {
		t.Fatalf("the new passport: %+v %v", v, err)
	}
	// 77 of 80 sessions now: floor(400 · 77/80 · 0.8) = 308, plus 456.
	if sc, err := pub.Score(ctx, "agent-a"); err != nil || sc.Score != 764 {
		t.Fatalf("score after the uphold: %+v %v", sc, err)
	}

	second, err := op.FileAppeal(ctx, client.AppealFiling{PassportID: passportID(t, cur.Raw), Grounds: "incorrect_count",
		Statement: "agent-a-c78 is counted twice", Events: []client.EventKey{{EventType: "conduit_session", EventID: "agent-a-c78"}}})
	if err != nil {
		t.Fatal(err)
	}
	if list, err := op.Appeals(ctx, "", true); err != nil || len(list) != 0 {
		t.Fatalf("overdue before the deadline: %+v %v", list, err)
	}
	setClock(8 * 24 * time.Hour)
	list, err := op.Appeals(ctx, "", false)
	if err != nil || len(list) != 2 || list[0].ID != second.ID || !list[0].Overdue || list[1].ID != ap.ID || list[1].Overdue {
		t.Fatalf("appeals 8 days on, overdue first: %+v %v", list, err)
	}
	if only, err := op.Appeals(ctx, "submitted", true); err != nil || len(only) != 1 || only[0].ID != second.ID {
		t.Fatalf("overdue and submitted: %+v %v", only, err)
	}
	m, err := pub.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`swarmscore_appeals_overdue{duty="acknowledge"} 1`, `swarmscore_appeals{state="upheld"} 1`, `swarmscore_appeals{state="submitted"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if _, err := op.ActOnAppeal(ctx, second.ID, "reject", "counted once: agent-a-c78 has one record", nil); err != nil {
		t.Fatal(err)
	}
	setClock(31 * 24 * time.Hour)
	if _, err := op.FileAppeal(ctx, client.AppealFiling{PassportID: passportID(t, old.Raw), Grounds: "incorrect_status", Statement: "late",
		Events: []client.EventKey{disputed}}); !client.IsProblem(err, client.ProblemInvalid) || !strings.Contains(err.Error(), "30 days") {
		t.Fatalf("an appeal after 30 days: %v", err)
	}
	if code, out, errOut := run(t, env, "", "ledger", "verify", "--db", dsn); code != 0 || !strings.Contains(out, "every chain is intact") {
		t.Fatalf("ledger verify: %d %s %s", code, out, errOut)
	}
}

// backEnds runs f on a fresh SQLite file and a fresh PostgreSQL database.
func backEnds(t *testing.T, f func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, "sqlite:"+filepath.Join(t.TempDir(), "swarmscore.db")) })
	t.Run("postgres", func(t *testing.T) { f(t, pgtest.NewDatabase(t)) })
}

// TestChargeback: a payment system reports a chargeback through its own
// operator token; the score and the served certificate change at once, the
// old passport fails L2, a repeat is a no-op and the chains still walk.
func TestChargeback(t *testing.T) {
	backEnds(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		env := []string{"SWARMSCORE_ADMIN_TOKEN=" + adminToken, "SWARMSCORE_SIGNING_KEY=" + signingKey}
		s := start(t, dsn, env...)
		op, pub := s.client(adminToken), s.client("")
		if _, err := op.IngestEvents(ctx, history("agent-cb")); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := run(t, env, "", "token", "create", "--operator", "payments", "--db", dsn)
		if code != 0 {
			t.Fatalf("token create: %d %s", code, errOut)
		}
		pay := s.client(strings.TrimSpace(out))
		old, err := pub.Certificate(ctx, "agent-cb")
		if err != nil {
			t.Fatal(err)
		}
		if sc, err := pub.Score(ctx, "agent-cb"); err != nil || sc.Score != 760 {
			t.Fatalf("score before: %+v %v", sc, err)
		}
		req := client.CorrectionRequest{EventType: "ap2_transaction", EventID: "agent-cb-t0", Action: "status", Status: "REFUNDED",
			Reason: "chargeback: card network case 4471"}
		c, err := pay.Correct(ctx, req)
		if err != nil || !c.Created || c.By != "payments" || c.FromStatus != "SETTLED" || c.ToStatus != "REFUNDED" || c.ReissuedAt == nil {
			t.Fatalf("chargeback: %+v %v", c, err)
		}
		// 37 of 40 settled: floor(600 · 37/40 · 0.8) = 444, plus 304.
		if sc, err := pub.Score(ctx, "agent-cb"); err != nil || sc.Score != 748 {
			t.Fatalf("score right after the chargeback: %+v %v", sc, err)
		}
		cur, err := pub.Certificate(ctx, "agent-cb")
		if err != nil || bytes.Equal(cur.Raw, old.Raw) {
			t.Fatalf("the certificate served right after the chargeback is the old one: %v", err)
		}
		if v, err := pub.Verify(ctx, cur.Raw, "agent-cb"); err != nil || !v.Valid {
			t.Fatalf("the re-issued passport: %+v %v", v, err)
		}
		if v, err := pub.Verify(ctx, old.Raw, "agent-cb"); err != nil || v.ScoreValid || !hasCode(v, service.CodeLedgerMismatch) {
			t.Fatalf("the old passport: %+v %v", v, err)
		}
		again, err := pay.Correct(ctx, req)
		if err != nil || again.Created || again.ID != c.ID || again.At != c.At {
			t.Fatalf("repeat: %+v %v", again, err)
		}
		if _, err := pay.Correct(ctx, client.CorrectionRequest{EventType: "ap2_transaction", EventID: "nope", Action: "void", Reason: "x"}); !client.IsProblem(err, client.ProblemNotFound) {
			t.Fatalf("unknown event: %v", err)
		}
		if code, out, errOut := run(t, env, "", "ledger", "verify", "--db", dsn); code != 0 || !strings.Contains(out, "every chain is intact") {
			t.Fatalf("ledger verify: %d %s %s", code, out, errOut)
		}
	})
}

// tamperer edits a database as someone with write access could, past the
// append-only triggers.
type tamperer struct {
	t    *testing.T
	conn *sql.Conn
	pg   bool
	st   service.Backend
}

func newTamperer(t *testing.T, dsn string) *tamperer {
	ctx := context.Background()
	tp := &tamperer{t: t, pg: strings.HasPrefix(dsn, "postgres")}
	driver, source := "sqlite", strings.TrimPrefix(dsn, "sqlite:")+"?_pragma=busy_timeout(10000)"
	if tp.pg {
		driver, source = "pgx", dsn
	}
	db, err := sql.Open(driver, source)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if tp.conn, err = db.Conn(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.conn.Close() })
	if tp.pg {
		tp.exec(`SET session_replication_role = replica`)
		tp.st, err = postgres.Open(ctx, dsn)
	} else {
		tp.exec(`DROP TRIGGER IF EXISTS ledger_records_no_update`)
		tp.exec(`DROP TRIGGER IF EXISTS ledger_records_no_delete`)
		tp.st, err = sqlite.Open(ctx, dsn)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.st.Close() })
	return tp
}

// exec runs q, written with ? placeholders.
func (tp *tamperer) exec(q string, args ...any) {
	tp.t.Helper()
	if tp.pg {
		var b strings.Builder
		n := 0
		for _, c := range q {
			if c == '?' {
				n++
				fmt.Fprintf(&b, "$%d", n)
				continue
			}
			b.WriteRune(c)
		}
		q = b.String()
	}
	if _, err := tp.conn.ExecContext(context.Background(), q, args...); err != nil {
		tp.t.Fatalf("%s: %v", q, err)
	}
}

func (tp *tamperer) chain(agent string) []ledger.ChainRow {
	tp.t.Helper()
	rows, err := tp.st.Chain(context.Background(), agent)
	if err != nil {
		tp.t.Fatal(err)
	}
	return rows
}

// rewrite turns every FAILED session of agent into a VERIFIED one, in its
// event rows and its chain records, and recomputes every hash of its chain
// from the first (ledger.Link) and its head: the chain walks.
func (tp *tamperer) rewrite(agent string) {
	var prev ledger.Hash
	for _, r := range tp.chain(agent) {
		if r.Record.Status == ledger.Failed {
			r.Record.Status, r.Event.Event.Status = ledger.Verified, ledger.Verified
			tp.exec(`UPDATE conduit_sessions SET status = ? WHERE id = ?`, string(ledger.Verified), r.Record.EventID)
		}
		rec := ledger.RebuildRecord(&r.Record, &r.Event)
		prev = ledger.Link(prev, rec.Canonical())
		tp.exec(`UPDATE ledger_records SET status = ?, hash = ? WHERE agent_id = ? AND seq = ?`, string(r.Record.Status), prev[:], agent, r.Record.Seq)
	}
	tp.exec(`UPDATE agents SET head_hash = ? WHERE id = ?`, prev[:], agent)
}

// truncate cuts agent's chain after seq keep, with the events only the
// removed records held, and moves its head back: the chain walks.
func (tp *tamperer) truncate(agent string, keep int64) {
	rows := tp.chain(agent)
	for _, r := range rows[keep:] {
		table := "conduit_sessions"
		if r.Record.Type == ledger.AP2Transaction {
			table = "ap2_transactions"
		}
		tp.exec(`DELETE FROM `+table+` WHERE id = ?`, r.Record.EventID)
	}
	tp.exec(`DELETE FROM ledger_records WHERE agent_id = ? AND seq > ?`, agent, keep)
	tp.exec(`UPDATE agents SET head_seq = ?, head_hash = ?, terminal_seq = ? WHERE id = ?`, keep, rows[keep-1].StoredHash, keep, agent)
}

// drop removes every trace of agent.
func (tp *tamperer) drop(agent string) {
	for _, q := range []string{`DELETE FROM passports WHERE agent_id = ?`, `DELETE FROM swarmscore_cache WHERE agent_id = ?`,
		`DELETE FROM ledger_records WHERE agent_id = ?`, `DELETE FROM conduit_sessions WHERE agent_id = ?`,
		`DELETE FROM ap2_transactions WHERE provider_id = ?`, `DELETE FROM agents WHERE id = ?`} {
		tp.exec(q, agent)
	}
}

// TestCheckpointCatchesRewrites: serve signs checkpoints on a schedule, only
// when a head moved; one is archived from the public route. Then one agent's
// whole chain is rewritten with every hash recomputed, another's truncated
// and a third dropped, each consistently enough that `ledger verify` alone
// passes; `ledger verify --checkpoint` fails and names all three.
func TestCheckpointCatchesRewrites(t *testing.T) {
	backEnds(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		env := []string{"SWARMSCORE_ADMIN_TOKEN=" + adminToken, "SWARMSCORE_SIGNING_KEY=" + signingKey}
		s := startArgs(t, dsn, []string{"--checkpoint-every", "1s"}, env...)
		op, pub := s.client(adminToken), s.client("")
		var evs []client.Event
		for _, a := range []string{"agent-rw", "agent-tr", "agent-dr", "agent-ok"} {
			evs = append(evs, history(a)...)
		}
		if _, err := op.IngestEvents(ctx, evs); err != nil {
			t.Fatal(err)
		}
		var doc []byte
		var cp struct {
			Agents, Checkpoint int64
		}
		for deadline := time.Now().Add(10 * time.Second); cp.Agents != 4; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no checkpoint of the 4 agents within 10s; latest %s\n%s", doc, s.logs)
			}
			var err error
			if doc, err = pub.Checkpoint(ctx, 0); err == nil {
				json.Unmarshal(doc, &cp)
			}
		}
		if byNumber, err := pub.Checkpoint(ctx, cp.Checkpoint); err != nil || !bytes.Equal(byNumber, doc) {
			t.Fatalf("checkpoint %d by number differs from the latest: %v", cp.Checkpoint, err)
		}
		archived := filepath.Join(t.TempDir(), "checkpoint.json")
		if err := os.WriteFile(archived, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		// Nothing moves: the schedule signs nothing new.
		time.Sleep(2500 * time.Millisecond)
		if latest, err := pub.Checkpoint(ctx, 0); err != nil || !bytes.Equal(latest, doc) {
			t.Fatalf("a checkpoint was made with no head moved: %s %v", latest, err)
		}
		if code, out, errOut := run(t, env, "", "ledger", "verify", "--checkpoint", archived, "--db", dsn); code != 0 ||
			!strings.Contains(out, "the ledger extends checkpoint") {
			t.Fatalf("verify against the fresh checkpoint: %d %s %s", code, out, errOut)
		}

		tp := newTamperer(t, dsn)
		tp.rewrite("agent-rw")
		tp.truncate("agent-tr", 100)
		tp.drop("agent-dr")
		if code, out, errOut := run(t, env, "", "ledger", "verify", "--db", dsn); code != 0 {
			t.Fatalf("the tampering is not consistent enough to pass the walk: %d %s %s", code, out, errOut)
		}
		code, out, errOut := run(t, env, "", "ledger", "verify", "--checkpoint", archived, "--db", dsn)
		if code != 1 || !strings.Contains(errOut, fmt.Sprintf("the ledger does not extend checkpoint %d: 3 agents changed", cp.Checkpoint)) {
			t.Fatalf("verify against the archived checkpoint: %d\n%s\n%s", code, out, errOut)
		}
		for _, want := range []string{
			"DIVERGED agent agent-dr: dropped (checkpointed at seq 120, no chain now)",
			"DIVERGED agent agent-rw: rewritten (chain hash at seq 120 was ",
			"DIVERGED agent agent-tr: truncated (checkpointed at seq 120, the chain now ends at seq 100)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the report lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "agent-ok") {
			t.Errorf("the untouched agent is named:\n%s", out)
		}
	})
}

// TestCheckpointByDefault: serve signs a checkpoint at start without a
// flag (--checkpoint-every defaults to 24h, issue 28) when the ledger has
// moved, none for an empty ledger, and none with --checkpoint-every 0.
func TestCheckpointByDefault(t *testing.T) {
	ctx := context.Background()
	env := []string{"SWARMSCORE_ADMIN_TOKEN=" + adminToken, "SWARMSCORE_SIGNING_KEY=" + signingKey}
	latest := func(s *server) (int64, error) {
		doc, err := s.client("").Checkpoint(ctx, 0)
		if err != nil {
			return 0, err
		}
		var cp struct{ Agents, Checkpoint int64 }
		if err := json.Unmarshal(doc, &cp); err != nil || cp.Agents != 1 {
			t.Fatalf("checkpoint %s: %v", doc, err)
		}
		return cp.Checkpoint, nil
	}
	notFound := func(err error) bool {
		var p *client.Problem
		return errors.As(err, &p) && p.Status == 404
	}

	dsn := "sqlite:" + filepath.Join(t.TempDir(), "swarmscore.db")
	s := start(t, dsn, env...)
	if _, err := latest(s); !notFound(err) {
		t.Fatalf("a checkpoint of the empty ledger: %v", err)
	}
	if _, err := s.client(adminToken).IngestEvents(ctx, history("agent-cp")); err != nil {
		t.Fatal(err)
	}
	s.stop()

	off := startArgs(t, dsn, []string{"--checkpoint-every", "0"}, env...)
	time.Sleep(time.Second)
	if _, err := latest(off); !notFound(err) {
		t.Fatalf("--checkpoint-every 0 made a checkpoint: %v", err)
	}
	off.stop()

	s = start(t, dsn, env...)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		n, err := latest(s)
		if err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint at start by default within 10 s: %v\n%s", err, s.logs)
		}
	}
}
