package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/cli"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/score"
)

const committed = "../events.ndjson"

func anchorOf(t *testing.T) time.Time {
	t.Helper()
	a, err := parseAnchor(defaultAnchor, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func readEvents(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d: %v", len(out)+1, err)
		}
		out = append(out, m)
	}
	return out
}

// TestCommittedFileIsGenerated: examples/events.ndjson is exactly what the
// generator writes for its anchor, so the file and the program cannot
// drift apart.
func TestCommittedFileIsGenerated(t *testing.T) {
	want, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	generate(&got, anchorOf(t))
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("examples/events.ndjson is not what the generator writes: run 'go run ./examples/gen > examples/events.ndjson'")
	}
}

// TestExportShape: about 30 agents of every kind, over 1,000 events of both
// types over more than 120 days, none after the anchor.
func TestExportShape(t *testing.T) {
	anchor := anchorOf(t)
	var b bytes.Buffer
	generate(&b, anchor)
	evs := readEvents(t, b.Bytes())
	ids := map[string]bool{}
	agents := map[string]bool{}
	types := map[string]int{}
	first, last := anchor, time.Time{}
	for _, e := range evs {
		ids[e["type"].(string)+"/"+e["id"].(string)] = true
		types[e["type"].(string)]++
		agent, _ := e["agent_id"].(string)
		if p, ok := e["provider_id"].(string); ok {
			agent = p
		}
		agents[agent] = true
		for _, k := range []string{"started_at", "completed_at", "settled_at"} {
			if s, ok := e[k].(string); ok {
				at, err := time.Parse(time.RFC3339, s)
				if err != nil {
					t.Fatal(err)
				}
				if at.Before(first) {
					first = at
				}
				if at.After(last) {
					last = at
				}
			}
		}
	}
	if len(agents) != len(profiles) || len(profiles) != 30 {
		t.Errorf("%d agents in the export, %d profiles", len(agents), len(profiles))
	}
	if len(ids) < 1000 || types["conduit_session"] < 500 || types["ap2_transaction"] < 500 {
		t.Errorf("%d events (%v)", len(ids), types)
	}
	if anchor.Sub(first) < 120*24*time.Hour || last.After(anchor) {
		t.Errorf("the export runs from %s to %s; anchor %s", first, last, anchor)
	}
	kinds := map[kind]int{}
	for _, p := range profiles {
		kinds[p.Kind]++
	}
	for _, k := range []kind{elite, standard, building, newcomer, failing, disputed, dormant} {
		if kinds[k] < 2 {
			t.Errorf("%d %s agents", kinds[k], k)
		}
	}
}

// TestRedating: another anchor moves every time by the same amount and
// changes nothing else, so 'gen -anchor now' is the same export, current.
func TestRedating(t *testing.T) {
	anchor := anchorOf(t)
	shift := 1000*time.Hour + 17*time.Second
	var a, b bytes.Buffer
	generate(&a, anchor)
	generate(&b, anchor.Add(shift))
	ea, eb := readEvents(t, a.Bytes()), readEvents(t, b.Bytes())
	if len(ea) != len(eb) {
		t.Fatalf("%d lines, re-dated %d", len(ea), len(eb))
	}
	for i := range ea {
		for k, v := range ea[i] {
			if s, ok := v.(string); ok && strings.HasSuffix(k, "_at") {
				at, _ := time.Parse(time.RFC3339, s)
				v = at.Add(shift).Format(time.RFC3339)
			}
			if eb[i][k] != v {
				t.Fatalf("line %d: %s is %v, re-dated %v", i+1, k, ea[i][k], eb[i][k])
			}
		}
	}
	now := time.Date(2027, 2, 3, 4, 5, 6, 789, time.UTC)
	if got, err := parseAnchor("now", now); err != nil || !got.Equal(now.Truncate(time.Second)) {
		t.Fatalf("-anchor now: %v %v", got, err)
	}
	if _, err := parseAnchor("yesterday", now); err == nil {
		t.Fatal("-anchor yesterday accepted")
	}
}

// TestIngestAndTiers ingests the committed file as the README does, into
// the embedded store: every line is accepted, but for the re-sent older
// page, which is superseded. Each agent then has the tier its profile
// says, when the scores are computed at the anchor and 30 days later (the
// README's promise), on a clock of the test's own, so that the test means
// the same whatever day it runs.
func TestIngestAndTiers(t *testing.T) {
	ctx := context.Background()
	anchor := anchorOf(t)
	path := filepath.Join(t.TempDir(), "swarmscore.db")
	var stdout, stderr bytes.Buffer
	code := cli.Run(ctx, []string{"ingest", committed, "--db", "sqlite:" + path, "--json"}, cli.Process{
		Stdout: &stdout, Stderr: &stderr, Drivers: cli.Drivers{"sqlite": {Open: cli.Opener(sqlite.Open), File: sqlite.Path}},
	})
	var sum struct {
		Accepted, Duplicates, Superseded int
		Rejected                         []any
	}
	if code != 0 || json.Unmarshal(stdout.Bytes(), &sum) != nil {
		t.Fatalf("ingest: exit %d %s %s", code, stdout.String(), stderr.String())
	}
	raw, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	resent := 0
	for _, p := range profiles {
		_, rs := agentLines(p, anchor)
		resent += len(rs)
	}
	lines := bytes.Count(raw, []byte("\n"))
	if len(sum.Rejected) != 0 || sum.Duplicates != 0 || sum.Superseded != resent || resent == 0 || sum.Accepted != lines-resent {
		t.Fatalf("ingest of %d lines with %d re-sent: %+v", lines, resent, sum)
	}

	st, err := sqlite.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, later := range []time.Duration{0, 30 * 24 * time.Hour} {
		at := anchor.Add(later)
		u := service.New(st, service.Config{Now: func() time.Time { return at }})
		for _, p := range profiles {
			s, err := u.Certificates.AgentScore(ctx, p.ID, at)
			if err != nil {
				t.Fatalf("%s as of %s: %v", p.ID, at, err)
			}
			r := s.Entry.Result
			c := r.Counts
			if r.Tier != p.Tier {
				t.Errorf("%s (%s) as of %s: %s %d, want %s (conduit %d/%d, AP2 %d/%d)", p.ID, p.Kind, at, r.Tier, r.Score, p.Tier,
					c.ConduitSuccess, c.ConduitTotal, c.AP2Success, c.AP2Total)
			}
			var ok bool
			switch p.Kind {
			case dormant:
				ok = r.Score == 0 && c.ConduitTotal == 0 && c.AP2Total == 0
			case newcomer:
				ok = later > 0 || c.ConduitTotal > 0 && c.ConduitTotal+c.AP2Total <= 10
			case failing:
				ok = c.ConduitSuccess*10 < c.ConduitTotal*7
			case disputed:
				ok = c.AP2Total >= 30 && c.AP2Success*10 < c.AP2Total*7
			case building:
				ok = later > 0 || r.Score > 100
			case standard: // held back by its success rates, not its volume
				ok = r.Score < score.EliteScore && c.ConduitSuccess*10 < c.ConduitTotal*9 && c.AP2Success*10 < c.AP2Total*9
			case elite:
				ok = c.ConduitTotal >= score.EliteConduit && c.AP2Total >= score.EliteAP2
			}
			if !ok {
				t.Errorf("%s as of %s does not show what a %s agent shows: score %d, conduit %d/%d, AP2 %d/%d", p.ID, at, p.Kind, r.Score,
					c.ConduitSuccess, c.ConduitTotal, c.AP2Success, c.AP2Total)
			}
		}
	}
	// The disputes are on record, not only refunds.
	u := service.New(st, service.Config{Now: func() time.Time { return anchor }})
	rec, err := u.Rights.Records(ctx, service.OperatorCaller("example"), "shadow-reseller", anchor)
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[ledger.Status]int{}
	for _, e := range rec.Events {
		statuses[e.Status]++
	}
	if statuses[ledger.Disputed] == 0 || statuses[ledger.Refunded] == 0 || statuses[ledger.Settled] == 0 {
		t.Errorf("shadow-reseller's AP2 outcomes: %v", statuses)
	}
}
