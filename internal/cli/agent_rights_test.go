package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestAgentRightsCommands: agent tokens, visibility, consent, records,
// signals and the disclosure on the command line.
func TestAgentRightsCommands(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "rights.db")
	end := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Second)
	var b strings.Builder
	for i := range 12 {
		buyer := "whale"
		if i%4 == 3 {
			buyer = fmt.Sprint("b-", i)
		}
		fmt.Fprintf(&b, `{"type":"conduit_session","id":"s-%d","agent_id":"agent-1","buyer_id":%q,"status":"VERIFIED","started_at":%q,"completed_at":%q}`+"\n",
			i, buyer, end.Add(-time.Hour).Format(time.RFC3339), end.Format(time.RFC3339))
	}
	file := filepath.Join(dir, "events.ndjson")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runLedgerCLI(t, db, "", "ingest", "--operator", "market-1", file); code != 0 {
		t.Fatalf("ingest: %d %s %s", code, out, errs)
	}

	// An agent's token: printed alone; listed with its agent.
	code, out, errs := runLedgerCLI(t, db, "", "token", "create", "--agent", "agent-1")
	if tok := strings.TrimSpace(out); code != 0 || !strings.HasPrefix(tok, "sst_") || strings.Count(out, "\n") != 1 || !strings.Contains(errs, "agent agent-1 (granted by cli)") {
		t.Fatalf("token create --agent: %d %q %q", code, out, errs)
	}
	code, out, _ = runLedgerCLI(t, db, "", "token", "create", "--agent", "agent-1", "--operator", "market-1", "--json")
	var tok struct{ ID, Operator, Token, AgentID string }
	if err := json.Unmarshal([]byte(out), &tok); code != 0 || err != nil || tok.Operator != "market-1" || !strings.Contains(out, `"agent_id":"agent-1"`) {
		t.Fatalf("token create --agent --json: %d %q", code, out)
	}
	if code, _, errs := runLedgerCLI(t, db, "", "token", "create", "--agent", "ghost"); code != ExitNotFound {
		t.Fatalf("a token for an unknown agent: %d %q", code, errs)
	}
	code, out, _ = runLedgerCLI(t, db, "", "token", "list", "--json")
	if code != 0 || !strings.Contains(out, `"agent_id":"agent-1"`) || strings.Contains(out, tok.Token) {
		t.Fatalf("token list: %d %s", code, out)
	}

	code, out, _ = runLedgerCLI(t, db, "", "agent", "visibility", "agent-1", "unlisted")
	if code != 0 || !strings.Contains(out, "unlisted (score, certificate, pages and badge hidden") || !strings.Contains(out, "none recorded") {
		t.Fatalf("visibility: %d %s", code, out)
	}
	if code, _, _ := runLedgerCLI(t, db, "", "agent", "visibility", "agent-1", "hidden"); code != ExitUsage {
		t.Fatalf("another visibility: %d", code)
	}
	if code, _, _ := runLedgerCLI(t, db, "", "agent", "visibility", "ghost", "public"); code != ExitNotFound {
		t.Fatalf("unknown agent: %d", code)
	}
	code, out, _ = runLedgerCLI(t, db, "", "agent", "consent", "agent-1", "--record", "--operator", "market-1", "--json")
	var st struct {
		Visibility        string `json:"visibility"`
		DisclosureVersion string `json:"disclosure_version"`
		ConsentedBy       string `json:"consented_by"`
		Consented         bool   `json:"consented"`
	}
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil ||
		!st.Consented || st.DisclosureVersion != "1" || st.ConsentedBy != "operator:market-1" || st.Visibility != "unlisted" {
		t.Fatalf("consent --record: %d %s", code, out)
	}
	if code, _, _ := runLedgerCLI(t, db, "", "agent", "consent", "agent-1", "--record", "--version", "0"); code != ExitUsage {
		t.Fatalf("an unknown version: %d", code)
	}
	if code, _, _ := runLedgerCLI(t, db, "", "agent", "consent", "agent-1", "--version", "1"); code != ExitUsage {
		t.Fatalf("--version without --record: %d", code)
	}
	if code, out, _ := runLedgerCLI(t, db, "", "agent", "consent", "agent-1"); code != 0 || !strings.Contains(out, "disclosure version 1") || !strings.Contains(out, "by operator:market-1") {
		t.Fatalf("consent: %d %s", code, out)
	}

	// Records: every counted event with its buyer, as the operator sees it.
	code, out, _ = runLedgerCLI(t, db, "", "agent", "records", "agent-1")
	if code != 0 || !strings.Contains(out, "agent-1 as of") || !strings.Contains(out, "12 events counting, 0 passports issued") || strings.Count(out, "whale") != 9 {
		t.Fatalf("records: %d %s", code, out)
	}
	code, out, _ = runLedgerCLI(t, db, "", "agent", "records", "agent-1", "--json", "--as-of", end.Add(-time.Minute).Format(time.RFC3339))
	if code != 0 || !strings.Contains(out, `"events":[]`) || !strings.Contains(out, `"buyer_ids_masked":false`) {
		t.Fatalf("records --json before they ended: %d %s", code, out)
	}
	if code, _, _ := runLedgerCLI(t, db, "", "agent", "records", "agent-1", "--as-of", "yesterday"); code != ExitUsage {
		t.Fatalf("a bad --as-of: %d", code)
	}

	// Signals: 9 of 12 sessions from one buyer trips the default threshold,
	// not one of 0.8; --flagged lists it.
	code, out, _ = runLedgerCLI(t, db, "", "agent", "signals", "agent-1", "--json")
	var sig struct {
		AgentID string `json:"agent_id"`
		Signals []struct {
			Name      string
			Value     float64
			Threshold float64
			Flagged   bool
		}
	}
	if err := json.Unmarshal([]byte(out), &sig); code != 0 || err != nil || len(sig.Signals) != 9 || sig.Signals[0].Name != "conduit_top_buyer_share" ||
		sig.Signals[0].Value != 0.75 || sig.Signals[0].Threshold != 0.5 || !sig.Signals[0].Flagged {
		t.Fatalf("signals --json: %d %s", code, out)
	}
	if code, out, _ := runLedgerCLI(t, db, "", "agent", "signals", "agent-1", "--signal-conduit-burst", "5", "--signal-burst-interval", "2h"); code != 0 ||
		!regexp.MustCompile(`conduit_burst +9 +5 +YES`).MatchString(out) || !strings.Contains(out, "no task offers reported") {
		t.Fatalf("signals with a burst threshold of 5: %d %s", code, out)
	}
	if code, out, _ := runLedgerCLI(t, db, "", "agent", "signals", "agent-1", "--signal-conduit-top-buyer-share", "0.8"); code != 0 ||
		!strings.Contains(out, "conduit_top_buyer_share  0.75   0.8        no") {
		t.Fatalf("signals with a higher threshold: %d %s", code, out)
	}
	if code, out, _ := runLedgerCLI(t, db, "", "agent", "signals", "--flagged"); code != 0 || !strings.Contains(out, "1 agent flagged") ||
		!strings.Contains(out, "agent-1: conduit_top_buyer_share") {
		t.Fatalf("signals --flagged: %d %s", code, out)
	}
	for _, args := range [][]string{
		{"agent", "signals"},
		{"agent", "signals", "agent-1", "--flagged"},
		{"agent", "signals", "agent-1", "--signal-acceptance-rate", "1.5"},
		{"agent", "signals", "agent-1", "--signal-report-lag", "0s"},
		{"agent", "signals", "agent-1", "--signal-burst-interval", "0s"},
		{"agent", "signals", "agent-1", "--signal-conduit-burst", "-1"},
	} {
		if code, _, errs := runLedgerCLI(t, db, "", args...); code != ExitUsage {
			t.Errorf("%v: %d %s", args, code, errs)
		}
	}

	code, out, _ = runLedgerCLI(t, "", "", "agent", "disclosure")
	if code != 0 || !strings.HasPrefix(out, "Disclosure, version 1\n\nYour transactions on this marketplace") || !strings.Contains(out, "not liable for losses") {
		t.Fatalf("disclosure: %d %s", code, out)
	}
	if code, _, _ := runLedgerCLI(t, "", "", "agent", "disclosure", "--version", "9"); code != ExitNotFound {
		t.Fatalf("an unknown version: %d", code)
	}
}

func TestServeRightsFlags(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "s.db")
	for _, args := range [][]string{
		{"serve", "--db", db, "--signal-conduit-top-buyer-share", "2"},
		{"serve", "--db", db, "--signal-ap2-buyer-diversity", "-0.1"},
		{"serve", "--db", db, "--signal-report-lag", "0s"},
		{"serve", "--db", db, "--signal-min-events", "-1"},
		{"serve", "--db", db, "--signals-every", "10ms"},
		{"serve", "--db", db, "--verify-every", "-1h"},
		{"serve", "--db", db, "--require-consent=maybe"},
	} {
		if code, _, errs := runCLI(t, nil, args...); code != ExitUsage || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}
