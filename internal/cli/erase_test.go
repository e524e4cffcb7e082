package cli

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/audit"
)

// TestAgentEraseCommands: agent erase prints the pseudonym and the opening
// (warning on stderr that it is shown once) and never the erased id; the
// ledger still verifies; the id is then unknown; agent erasures lists the
// erasure without the opening; errors are one line with the exit status of
// their kind.
func TestAgentEraseCommands(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "erase.db")
	end := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Second)
	var b strings.Builder
	for i := range 6 {
		for _, agent := range []string{"alice-77", "bob-88"} {
			fmt.Fprintf(&b, `{"type":"conduit_session","id":"%s-%d","agent_id":%q,"buyer_id":"buyer-1","status":"VERIFIED","started_at":%q,"completed_at":%q}`+"\n",
				agent, i, agent, end.Add(-time.Hour).Format(time.RFC3339), end.Format(time.RFC3339))
		}
	}
	file := filepath.Join(dir, "events.ndjson")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runLedgerCLI(t, db, "", "ingest", file); code != 0 {
		t.Fatalf("ingest: %d %s %s", code, out, errs)
	}
	_, before, _ := runLedgerCLI(t, db, "", "agent", "show", "bob-88", "--json")

	if code, out, errs := runLedgerCLI(t, db, "", "agent", "erasures"); code != 0 || out != "no erasures\n" || errs != "" {
		t.Fatalf("no erasures: %d %q %q", code, out, errs)
	}
	code, out, errs := runLedgerCLI(t, db, "", "agent", "erase", "ghost")
	if code != ExitNotFound || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, `"ghost"`) || out != "" {
		t.Fatalf("erasing an unknown agent: %d %q %q", code, out, errs)
	}
	if code, _, errs := runLedgerCLI(t, db, "", "agent", "erase", "alice-77", "--reason", strings.Repeat("x", 1001)); code != ExitUsage || strings.Count(errs, "\n") != 1 {
		t.Fatalf("a long reason: %d %q", code, errs)
	}
	if code, _, _ := runLedgerCLI(t, db, "", "agent", "erase"); code != ExitUsage {
		t.Fatalf("no id: %d", code)
	}

	code, out, errs = runLedgerCLI(t, db, "", "agent", "erase", "alice-77", "--reason", "alice-77 wrote on 1 March")
	if code != 0 || !strings.Contains(errs, "shown this once") {
		t.Fatalf("erase: %d %q %q", code, out, errs)
	}
	if strings.Contains(out, "alice-77") {
		t.Errorf("the output names the erased id:\n%s", out)
	}
	m := regexp.MustCompile(`(?m)^pseudonym +(erased-[0-9a-f]{16})\n(?s:.*)^identity +([0-9a-f]{64})\nopening +([0-9a-f]{32}) \(category agents\)\nreason +(.*)\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("erase output:\n%s", out)
	}
	pseudonym, identity := m[1], m[2]
	salt, _ := hex.DecodeString(m[3])
	if audit.Commit(audit.Agents, [audit.SaltSize]byte(salt), "alice-77") != identity {
		t.Error("the opening does not open the identity to the erased id")
	}
	if m[4] != pseudonym+" wrote on 1 March" {
		t.Errorf("reason %q", m[4])
	}

	if code, out, errs := runLedgerCLI(t, db, "", "ledger", "verify"); code != 0 {
		t.Fatalf("ledger verify after the erasure: %d %s %s", code, out, errs)
	}
	if code, _, errs := runLedgerCLI(t, db, "", "agent", "show", "alice-77"); code != ExitNotFound || strings.Count(errs, "\n") != 1 {
		t.Errorf("the erased id: %d %q", code, errs)
	}
	if code, _, errs := runLedgerCLI(t, db, "", "agent", "erase", pseudonym); code != ExitConflict || strings.Count(errs, "\n") != 1 {
		t.Errorf("erasing a pseudonym: %d %q", code, errs)
	}
	if _, after, _ := runLedgerCLI(t, db, "", "agent", "show", "bob-88", "--json"); !sameScore(t, before, after) {
		t.Errorf("another agent's score changed:\n%s\n%s", before, after)
	}

	code, out, _ = runLedgerCLI(t, db, "", "agent", "erasures", "--json")
	var list struct {
		Erasures []map[string]any `json:"erasures"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list.Erasures) != 1 {
		t.Fatalf("erasures --json: %d %q %v", code, out, err)
	}
	if e := list.Erasures[0]; e["pseudonym"] != pseudonym || e["identity"] != identity || e["opening"] != nil || e["erased_by"] != "cli" {
		t.Errorf("listed %v", e)
	}
	code, out, _ = runLedgerCLI(t, db, "", "agent", "erasures")
	if code != 0 || !strings.Contains(out, pseudonym) || strings.Contains(out, m[3]) {
		t.Errorf("erasures: %d\n%s", code, out)
	}

	code, out, errs = runLedgerCLI(t, db, "", "agent", "erase", "bob-88", "--json", "--operator", "market-1")
	var j struct {
		Pseudonym string `json:"pseudonym"`
		ErasedBy  string `json:"erased_by"`
		Opening   struct{ Category, Salt string }
	}
	if err := json.Unmarshal([]byte(out), &j); code != 0 || err != nil || j.ErasedBy != "market-1" || j.Opening.Category != "agents" ||
		len(j.Opening.Salt) != 32 || !strings.Contains(errs, "shown this once") || strings.Contains(out, `"reason"`) {
		t.Fatalf("erase --json: %d %q %q %v", code, out, errs, err)
	}
}

// sameScore compares the score members of two agent show --json outputs,
// ignoring when they were computed.
func sameScore(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y map[string]any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		t.Fatalf("agent show --json: %q %q", a, b)
	}
	for _, k := range []string{"score", "tier", "conduit", "ap2"} {
		if fmt.Sprint(x[k]) != fmt.Sprint(y[k]) {
			return false
		}
	}
	return x["score"] != nil
}
