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
)

// runCLI runs the CLI in-process with SWARMSCORE_DB set to db.
func runLedgerCLI(t *testing.T, db, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := func(k string) string {
		if k == "SWARMSCORE_DB" {
			return db
		}
		return ""
	}
	code = Run(context.Background(), args, Process{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: env, Drivers: testDrivers})
	return code, out.String(), errb.String()
}

// cliEnd is when the test events end: a day before the real clock, so
// "now" counts them, and read once, so that every call of cliEvents gives
// the same events (a second boundary between two calls made a re-sent
// event a conflicting one).
var cliEnd = time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Second)

func cliEvents() string {
	end := cliEnd
	start := end.Add(-time.Hour)
	f := func(t time.Time) string { return t.Format(time.RFC3339) }
	return strings.Join([]string{
		`{"type":"conduit_session","id":"s-1","agent_id":"agent-1","buyer_id":"b-1","status":"VERIFIED","started_at":"` + f(start) + `","completed_at":"` + f(end) + `"}`,
		`{"type":"conduit_session","id":"s-2","agent_id":"agent-1","status":"FAILED","started_at":"` + f(start) + `","completed_at":"` + f(end) + `"}`,
		`{"type":"conduit_session","id":"s-3","agent_id":"agent-1","status":"DONE","started_at":"` + f(start) + `"}`,
		`{"type":"ap2_transaction","id":"t-1","provider_id":"agent-1","buyer_id":"b-1","status":"SETTLED","escrow_amount_cents":100000,"started_at":"` + f(start) + `","settled_at":"` + f(end) + `"}`,
		`{"type":"conduit_session","id":"s-1","agent_id":"agent-1","buyer_id":"b-1","status":"VERIFIED","started_at":"` + f(start) + `","completed_at":"` + f(end) + `"}`,
	}, "\n") + "\n"
}

func TestLedgerCommands(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cli.db")
	db := "sqlite:" + path

	if code, _, stderr := runLedgerCLI(t, db, "", "agent", "show", "agent-1"); code != ExitNotFound || !strings.Contains(stderr, "does not exist") {
		t.Errorf("show before any database: %d %q", code, stderr)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a read-only command created the database file")
	}
	if code, out, stderr := runLedgerCLI(t, db, "", "migrate"); code != 0 || !strings.Contains(out, "schema up to date") {
		t.Fatalf("migrate: %d %q %q", code, out, stderr)
	}

	file := filepath.Join(dir, "events.ndjson")
	// One set of events: cliEvents reads the clock, and a second ticking
	// between two calls would make the re-sends conflicts.
	events := cliEvents()
	if err := os.WriteFile(file, []byte(events), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runLedgerCLI(t, "", "", "ingest", "--db", db, "--operator", "market-1", "--batch-size", "2", file)
	if code != ExitFailure || !strings.Contains(out, "3 accepted, 1 duplicates, 0 superseded, 1 rejected") ||
		!strings.Contains(out, `line 3: status: "DONE" is not a conduit_session status`) || !strings.Contains(stderr, "1 line(s) rejected") {
		t.Fatalf("ingest: %d\n%s\n%s", code, out, stderr)
	}
	// Re-ingesting from standard input is all duplicates but the bad line.
	code, out, _ = runLedgerCLI(t, db, events, "ingest", "--operator", "market-1", "-")
	if code != ExitFailure || !strings.Contains(out, "standard input: 0 accepted, 4 duplicates, 0 superseded, 1 rejected") {
		t.Errorf("re-ingest: %d %s", code, out)
	}
	// Another operator's events conflict.
	code, out, _ = runLedgerCLI(t, db, events, "ingest")
	if code != ExitFailure || !strings.Contains(out, "0 accepted, 0 duplicates, 0 superseded, 5 rejected") || !strings.Contains(out, "another operator") {
		t.Errorf("other operator: %d %s", code, out)
	}
	if code, _, stderr := runLedgerCLI(t, db, "", "ingest", "--batch-size", "0", file); code != ExitUsage {
		t.Errorf("batch size 0: %d %s", code, stderr)
	}
	if code, _, _ := runLedgerCLI(t, db, "", "ingest", filepath.Join(dir, "missing.ndjson")); code != ExitUsage {
		t.Errorf("missing file: %d", code)
	}

	code, out, stderr = runLedgerCLI(t, db, "", "agent", "show", "agent-1")
	for _, want := range []string{"agent-1", "score", "contribution 4/400", "tier", "NONE", "escrow modifier", "conduit (90d)", "1/2 verified", "ap2 (90d)", "1/1 settled", "cache", "refreshed", "next tier"} {
		if !strings.Contains(out, want) {
			t.Errorf("agent show lacks %q:\n%s%s", want, out, stderr)
		}
	}
	if code != 0 {
		t.Errorf("agent show: %d", code)
	}
	code, out, _ = runLedgerCLI(t, db, "", "agent", "show", "--json", "agent-1")
	var v struct {
		AgentID string `json:"agent_id"`
		Score   int    `json:"score"`
		Cache   string `json:"cache"`
		Conduit struct {
			Sessions int `json:"total"`
		} `json:"conduit"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 || v.AgentID != "agent-1" || v.Cache != "hit" || v.Conduit.Sessions != 2 || v.Score != 16 {
		t.Errorf("agent show --json: %d %v %+v\n%s", code, err, v, out)
	}
	var members map[string]any
	if err := json.Unmarshal([]byte(out), &members); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"agent_id", "score", "tier", "conduit", "ap2", "escrow_modifier", "qualification_gaps",
		"formula_version", "as_of", "computed_at", "expires_at", "valid_until", "cache", "passport_issued"} {
		if _, ok := members[k]; !ok {
			t.Errorf("agent show --json lacks %q:\n%s", k, out)
		}
	}
	code, out, _ = runLedgerCLI(t, db, "", "agent", "show", "--json", "--as-of", "2020-01-01T00:00:00+02:00", "agent-1")
	if code != 0 || !strings.Contains(out, `"cache": "bypassed"`) || !strings.Contains(out, `"as_of": "2019-12-31T22:00:00Z"`) {
		t.Errorf("agent show --as-of: %d %s", code, out)
	}
	if code, _, stderr := runLedgerCLI(t, db, "", "agent", "show", "--as-of", "yesterday", "agent-1"); code != ExitUsage || !strings.Contains(stderr, "--as-of") {
		t.Errorf("bad --as-of: %d %s", code, stderr)
	}
	if code, _, _ := runLedgerCLI(t, db, "", "agent", "show", "nobody"); code != ExitNotFound {
		t.Errorf("unknown agent: %d", code)
	}

	if code, out, _ := runLedgerCLI(t, db, "", "ledger", "recompute"); code != 0 || out != "1 agents recomputed\n" {
		t.Errorf("recompute: %d %q", code, out)
	}
	code, out, _ = runLedgerCLI(t, db, "", "ledger", "verify")
	if code != 0 || !strings.Contains(out, "1 agents, 3 chain records, 3 events checked") || !strings.Contains(out, "intact") {
		t.Errorf("verify: %d %s", code, out)
	}
	if code, out, _ := runLedgerCLI(t, db, "", "ledger", "verify", "--json"); code != 0 || out != `{"agents":1,"records":3,"events":3,"broken":[]}`+"\n" {
		t.Errorf("verify --json: %d %s", code, out)
	}
	if code, out, _ := runLedgerCLI(t, db, "", "ledger", "recompute", "--json"); code != 0 || out != `{"recomputed":1}`+"\n" {
		t.Errorf("recompute --json: %d %q", code, out)
	}
	// Back-date a session behind the ledger's back.
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE conduit_sessions SET completed_at = completed_at - 1000000 WHERE id = 's-2'`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	code, out, stderr = runLedgerCLI(t, db, "", "ledger", "verify")
	if code != ExitFailure || !strings.Contains(out, "BROKEN agent agent-1 seq 2 event s-2") || !strings.Contains(stderr, "1 of 1 chains broken") {
		t.Errorf("verify after tampering: %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runLedgerCLI(t, db, "", "ledger", "verify", "--json")
	var rep struct {
		Agents int64
		Broken []struct {
			AgentID string `json:"agent_id"`
			Seq     int64
			EventID string `json:"event_id"`
			Reason  string
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitFailure || len(rep.Broken) != 1 || rep.Broken[0].AgentID != "agent-1" ||
		rep.Broken[0].Seq != 2 || rep.Broken[0].EventID != "s-2" || rep.Broken[0].Reason == "" || !strings.Contains(stderr, "1 of 1 chains broken") {
		t.Errorf("verify --json after tampering: %d %v\n%s%s", code, err, out, stderr)
	}
}

// TestMigrateSaysWhatItApplied: a new database lists every migration once;
// a second run applies none and says so.
func TestMigrateSaysWhatItApplied(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "m.db")
	code, out, stderr := runLedgerCLI(t, db, "", "migrate")
	if code != 0 || !strings.Contains(out, "applied 00001_ledger.sql\n") || !strings.Contains(out, "applied 00004_signing_keys.sql\n") {
		t.Fatalf("first migrate: %d\n%s%s", code, out, stderr)
	}
	code, out, _ = runLedgerCLI(t, db, "", "migrate")
	if code != 0 || strings.Contains(out, "applied 0") || !strings.Contains(out, "(0 migration(s) applied)") {
		t.Fatalf("second migrate: %d\n%s", code, out)
	}
	code, out, _ = runLedgerCLI(t, db, "", "migrate", "--json")
	if code != 0 || out != `{"applied":[],"database":"`+db+`"}`+"\n" {
		t.Fatalf("migrate --json: %d %s", code, out)
	}
	db2 := "sqlite:" + filepath.Join(t.TempDir(), "m2.db")
	code, out, _ = runLedgerCLI(t, db2, "", "migrate", "--json")
	var m struct{ Applied []string }
	if err := json.Unmarshal([]byte(out), &m); code != 0 || err != nil || len(m.Applied) < 4 || m.Applied[0] != "00001_ledger.sql" {
		t.Fatalf("first migrate --json: %d %v %s", code, err, out)
	}
}
