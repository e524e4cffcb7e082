package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestLedgerPrune(t *testing.T) {
	c := newCorrectionsCLI(t)
	// Not yet past retention: nothing goes.
	if r := c.run("", "ledger", "prune", "--keep", "90d", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"agents":0`) {
		t.Fatalf("a fresh ledger: %+v", r)
	}
	c.now = c.now.Add(200 * 24 * time.Hour)
	r := c.run("", "ledger", "prune", "--keep", "90d", "--json")
	var got struct {
		Agents, Records, Events, Checkpoint int64
		Cutoff                              string
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("prune: %+v %v", r, err)
	}
	if got.Agents != 1 || got.Events != 3 || got.Records != 3 || got.Checkpoint != 1 ||
		got.Cutoff != c.now.Add(-120*24*time.Hour).Format(time.RFC3339) {
		t.Fatalf("prune: %s", r.stdout)
	}
	if r := c.run("", "ledger", "verify"); r.code != 0 || !strings.Contains(r.stdout, "every chain is intact") {
		t.Fatalf("verify after the prune: %+v", r)
	}
	if r := c.run("", "agent", "show", "agent-1"); r.code != 0 {
		t.Fatalf("the agent after the prune: %+v", r)
	}
	if r := c.run("", "ledger", "prune", "--keep", "2160h"); r.code != 0 || !strings.Contains(r.stdout, "0 pruned from 0 chains") {
		t.Fatalf("again: %+v", r)
	}
	for _, args := range [][]string{{"--keep", "30d"}, {"--keep", "ninety"}, {}, {"--keep", "0d"}} {
		if r := c.run("", append([]string{"ledger", "prune"}, args...)...); r.code != ExitUsage {
			t.Errorf("ledger prune %v: %+v", args, r)
		}
	}
	if r := c.run("", "serve", "--prune-keep", "30d"); r.code != ExitUsage || !strings.Contains(r.stderr, "90-day") {
		t.Errorf("serve --prune-keep 30d: %+v", r)
	}
}
