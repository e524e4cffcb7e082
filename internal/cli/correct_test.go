package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/store/sqlite"
)

const cliSigningKey = "cli-test-signing-key-0123456789abcdefghij"

// correctionsCLI runs the CLI in-process on one SQLite database with a
// signing key and a clock the test moves.
type correctionsCLI struct {
	t   *testing.T
	db  string
	dir string
	now time.Time
	env map[string]string
}

func newCorrectionsCLI(t *testing.T) *correctionsCLI {
	dir := t.TempDir()
	c := &correctionsCLI{t: t, dir: dir, db: "sqlite:" + filepath.Join(dir, "c.db"), now: time.Now().UTC().Truncate(time.Second)}
	c.env = map[string]string{"SWARMSCORE_DB": c.db, "SWARMSCORE_SIGNING_KEY": cliSigningKey}
	file := filepath.Join(dir, "events.ndjson")
	if err := os.WriteFile(file, []byte(cliEvents()), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := c.run("", "ingest", file); r.code != ExitFailure { // the DONE line is rejected
		t.Fatalf("ingest: %+v", r)
	}
	return c
}

func (c *correctionsCLI) run(stdin string, args ...string) result {
	c.t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), args, Process{Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return c.env[k] }, Drivers: testDrivers, Now: func() time.Time { return c.now }})
	r := result{stdout.String(), stderr.String(), code}
	checkStderr(c.t, r)
	return r
}

func (c *correctionsCLI) sql(q string) {
	c.t.Helper()
	db, err := sql.Open("sqlite", strings.TrimPrefix(c.db, "sqlite:"))
	if err != nil {
		c.t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(q); err != nil {
		c.t.Fatalf("%s: %v", q, err)
	}
}

func TestCorrectCommand(t *testing.T) {
	c := newCorrectionsCLI(t)
	r := c.run("", "correct", "ap2_transaction", "t-1", "--status", "refunded", "--reason", "chargeback: case 77", "--operator", "payments")
	if r.code != 0 || !strings.Contains(r.stdout, "recorded: ap2_transaction t-1: SETTLED -> REFUNDED (agent agent-1)\n") ||
		!strings.Contains(r.stdout, "passports of agent-1 re-issued at "+c.now.Format(time.RFC3339)+"\n") {
		t.Fatalf("correct: %+v", r)
	}
	c.now = c.now.Add(time.Minute)
	r = c.run("", "correct", "ap2_transaction", "t-1", "--status", "REFUNDED", "--reason", "chargeback: case 77", "--operator", "payments", "--json")
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("repeat --json: %+v %v", r, err)
	}
	if got["by"] != "payments" || got["to_status"] != "REFUNDED" || got["at"] != c.now.Add(-time.Minute).Format(time.RFC3339) {
		t.Fatalf("repeat is not the first: %s", r.stdout)
	}
	var show struct{ AP2 struct{ Total, Success int } }
	if r := c.run("", "agent", "show", "agent-1", "--json"); json.Unmarshal([]byte(r.stdout), &show) != nil || show.AP2.Total != 1 || show.AP2.Success != 0 {
		t.Fatalf("the chargeback did not count: %s", r.stdout)
	}
	if r := c.run("", "ledger", "verify"); r.code != 0 {
		t.Fatalf("ledger verify after a correction: %+v", r)
	}
	for name, tc := range map[string]struct {
		args []string
		code int
		msg  string
	}{
		"no action":      {[]string{"correct", "conduit_session", "s-1", "--reason", "x"}, ExitUsage, "exactly one of --status, --agent and --void"},
		"two actions":    {[]string{"correct", "conduit_session", "s-1", "--void", "--agent", "a-2", "--reason", "x"}, ExitUsage, "exactly one"},
		"no reason":      {[]string{"correct", "conduit_session", "s-1", "--void"}, ExitUsage, "reason: is required"},
		"unknown event":  {[]string{"correct", "conduit_session", "s-9", "--void", "--reason", "x"}, ExitNotFound, `conduit_session "s-9" is not in the ledger`},
		"unknown appeal": {[]string{"correct", "conduit_session", "s-1", "--void", "--reason", "x", "--appeal", "apl-0"}, ExitNotFound, "apl-0"},
		"bad type":       {[]string{"correct", "session", "s-1", "--void", "--reason", "x"}, ExitUsage, "event_type"},
	} {
		r := c.run("", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("%s: %+v", name, r)
		}
	}
	delete(c.env, "SWARMSCORE_SIGNING_KEY")
	if err := os.WriteFile(filepath.Join(c.dir, "c.key"), []byte(cliSigningKey), 0o600); err != nil {
		t.Fatal(err)
	}
	// The key beside the database serves as it serves serve.
	if r := c.run("", "correct", "conduit_session", "s-2", "--agent", "agent-2", "--reason", "wrong agent"); r.code != 0 ||
		!strings.Contains(r.stdout, "passports of agent-1 and agent-2 re-issued") {
		t.Fatalf("re-attribution with the key file: %+v", r)
	}
}

// TestAppealCommands follows an appeal with the clock moved: filed, shown
// overdue after 8 days, acknowledged, upheld with a correction, refused a
// second decision, escalated.
func TestAppealCommands(t *testing.T) {
	c := newCorrectionsCLI(t)
	// A passport to appeal against: a correction re-issues one and the
	// store keeps it.
	if r := c.run("", "correct", "conduit_session", "s-1", "--status", "FAILED", "--reason", "the buyer's proof was forged"); r.code != 0 {
		t.Fatalf("correct: %+v", r)
	}
	st, err := sqlite.Open(context.Background(), c.db)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := st.Passports(context.Background(), "agent-1")
	st.Close()
	if err != nil || len(ps) != 1 {
		t.Fatalf("passports %+v %v", ps, err)
	}
	r := c.run("", "appeal", "file", "--passport", ps[0].ID, "--grounds", "incorrect_status", "--event", "conduit_session:s-2",
		"--statement", "s-2 was delivered", "--operator", "market-1", "--json")
	var a struct {
		ID, State    string
		NextDeadline struct{ Duty, Due string } `json:"next_deadline"`
		History      []struct{ Action, By string }
		Corrections  []string
	}
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil || r.code != 0 || a.State != "submitted" || a.NextDeadline.Duty != "acknowledge" {
		t.Fatalf("file: %+v %v", r, err)
	}
	if r := c.run("", "appeal", "file", "--passport", ps[0].ID, "--grounds", "formula", "--event", "conduit_session:s-2", "--statement", "x"); r.code != ExitUsage ||
		!strings.Contains(r.stderr, "disagreement with the formula") {
		t.Fatalf("formula grounds: %+v", r)
	}
	if r := c.run("", "appeal", "list", "--overdue"); r.code != 0 || r.stdout != "no appeals\n" {
		t.Fatalf("overdue at once: %+v", r)
	}
	c.now = c.now.Add(8 * 24 * time.Hour)
	if r := c.run("", "appeal", "list", "--overdue"); r.code != 0 || !strings.Contains(r.stdout, a.ID+"  submitted  agent-1") || !strings.Contains(r.stdout, "OVERDUE") {
		t.Fatalf("overdue after 8 days: %+v", r)
	}
	if r := c.run("", "appeal", "show", a.ID); r.code != 0 || !strings.Contains(r.stdout, "next duty    acknowledge by ") || !strings.Contains(r.stdout, "(OVERDUE)") {
		t.Fatalf("show: %+v", r)
	}
	if r := c.run("", "appeal", "ack", a.ID, "--operator", "ops"); r.code != 0 || !strings.Contains(r.stdout, "state        acknowledged") {
		t.Fatalf("ack: %+v", r)
	}
	if r := c.run("", "appeal", "uphold", a.ID, "--reason", "confirmed"); r.code != ExitUsage || !strings.Contains(r.stderr, "--event") {
		t.Fatalf("uphold without a correction: %+v", r)
	}
	corrections := filepath.Join(c.dir, "fix.json")
	os.WriteFile(corrections, []byte(`[{"event_type":"conduit_session","event_id":"s-2","action":"status","status":"VERIFIED"}]`), 0o600)
	r = c.run("", "appeal", "uphold", a.ID, "--reason", "the buyer confirmed delivery", "--corrections", corrections, "--operator", "ops")
	if r.code != 0 || !strings.Contains(r.stdout, "conduit_session s-2: FAILED -> VERIFIED") || !strings.Contains(r.stdout, "state        upheld") ||
		!strings.Contains(r.stdout, "re-issued    ") {
		t.Fatalf("uphold: %+v", r)
	}
	if r := c.run("", "appeal", "reject", a.ID, "--reason", "late"); r.code != ExitConflict {
		t.Fatalf("reject after uphold: %+v", r)
	}
	if r := c.run("", "appeal", "escalate", a.ID, "--reason", "the agent disputes the remedy", "--operator", "agent-rep"); r.code != 0 {
		t.Fatalf("escalate: %+v", r)
	}
	r = c.run("", "appeal", "show", a.ID, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil {
		t.Fatal(err)
	}
	var hist []string
	for _, h := range a.History {
		hist = append(hist, h.Action+"/"+h.By)
	}
	if a.State != "escalated" || len(a.Corrections) != 1 || strings.Join(hist, " ") != "file/market-1 ack/ops uphold/ops escalate/agent-rep" {
		t.Fatalf("history %v, %+v", hist, a)
	}
	if r := c.run("", "ledger", "verify"); r.code != 0 {
		t.Fatalf("ledger verify: %+v", r)
	}
	if r := c.run("", "appeal", "show", "apl-none"); r.code != ExitNotFound {
		t.Fatalf("unknown appeal: %+v", r)
	}
}

// TestCheckpointCommands: a checkpoint printed and archived, verified while
// the ledger grows, then a truncated chain is caught (exit 1, naming the
// agent); another key's signature and a file that is no checkpoint.
func TestCheckpointCommands(t *testing.T) {
	c := newCorrectionsCLI(t)
	r := c.run("", "ledger", "checkpoint", "--json")
	if r.code != 0 || !strings.HasPrefix(r.stdout, `{"agents":1,"checkpoint":1,"environment":"production","issuer":{"alg":"HS256",`) {
		t.Fatalf("checkpoint: %+v", r)
	}
	archived := filepath.Join(c.dir, "cp1.json")
	os.WriteFile(archived, []byte(r.stdout), 0o600)
	if r := c.run("", "correct", "conduit_session", "s-1", "--void", "--reason", "test session"); r.code != 0 {
		t.Fatalf("correct: %+v", r)
	}
	r = c.run("", "ledger", "verify", "--checkpoint", archived)
	if r.code != 0 || !strings.Contains(r.stdout, "signature valid") || !strings.Contains(r.stdout, "the ledger extends checkpoint 1") ||
		!strings.Contains(r.stdout, "every chain is intact") {
		t.Fatalf("verify against checkpoint 1: %+v", r)
	}
	// Truncate agent-1's chain to its first record, head included.
	c.sql(`DROP TRIGGER IF EXISTS ledger_records_no_delete`)
	c.sql(`DELETE FROM ledger_records WHERE agent_id = 'agent-1' AND seq > 1`)
	c.sql(`UPDATE agents SET head_seq = 1, head_hash = (SELECT hash FROM ledger_records WHERE agent_id = 'agent-1' AND seq = 1) WHERE id = 'agent-1'`)
	r = c.run("", "ledger", "verify", "--checkpoint", archived, "--json")
	var rep struct {
		Checkpoint struct {
			Extends bool
			Changes []struct {
				AgentID     string `json:"agent_id"`
				Kind        string
				ArchivedSeq int64 `json:"archived_seq"`
				CurrentSeq  int64 `json:"current_seq"`
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != ExitFailure || rep.Checkpoint.Extends ||
		len(rep.Checkpoint.Changes) != 1 || rep.Checkpoint.Changes[0].Kind != "truncated" || rep.Checkpoint.Changes[0].CurrentSeq != 1 ||
		!strings.Contains(r.stderr, "the ledger does not extend checkpoint 1: 1 agent changed") {
		t.Fatalf("truncated: %+v %v", r, err)
	}
	r = c.run("", "ledger", "verify", "--checkpoint", archived)
	if r.code != ExitFailure || !strings.Contains(r.stdout, "DIVERGED agent agent-1: truncated (checkpointed at seq 3, the chain now ends at seq 1)") {
		t.Fatalf("truncated, text: %+v", r)
	}

	c.env["SWARMSCORE_SIGNING_KEY"] = "another-signing-key-0123456789abcdefghij"
	if r := c.run("", "ledger", "verify", "--checkpoint", archived); r.code != ExitFailure || !strings.Contains(r.stderr, "signature does not verify") {
		t.Fatalf("another key: %+v", r)
	}
	os.WriteFile(archived, []byte(`{"checkpoint":1}`), 0o600)
	if r := c.run("", "ledger", "verify", "--checkpoint", archived); r.code != ExitUsage {
		t.Fatalf("not a checkpoint: %+v", r)
	}
}
