package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// cliRandom are the values that differ from run to run in --json output,
// replaced by a placeholder numbered by first appearance.
var cliRandom = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}` +
	`|apl-[0-9a-f]{16}|cor-[0-9a-f]{24}|erasure-[0-9a-f]{16}|erased-[0-9a-f]{16}|"salt":"[0-9a-f]{32}"|"identity":"[0-9a-f]{64}"` +
	`|"signature":"[A-Za-z0-9_-]{20,}"`)

// TestJSONTranscript runs every command whose --json output is an API shape
// at a fixed clock and compares what it prints byte for byte with
// testdata/json-transcript.txt (-update rewrites it).
func TestJSONTranscript(t *testing.T) {
	dir := t.TempDir()
	c := &correctionsCLI{t: t, dir: dir, db: "sqlite:" + filepath.Join(dir, "w.db"), now: time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)}
	c.env = map[string]string{"SWARMSCORE_DB": c.db, "SWARMSCORE_SIGNING_KEY": cliSigningKey}
	end := c.now.Add(-24 * time.Hour)
	f := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	events := strings.Join([]string{
		`{"type":"conduit_session","id":"s-1","agent_id":"agent-1","buyer_id":"b-1","status":"VERIFIED","started_at":"` + f(end.Add(-time.Hour)) + `","completed_at":"` + f(end.Add(123456*time.Microsecond)) + `"}`,
		`{"type":"conduit_session","id":"s-2","agent_id":"agent-1","status":"FAILED","started_at":"` + f(end.Add(-time.Hour)) + `","completed_at":"` + f(end) + `"}`,
		`{"type":"conduit_session","id":"s-3","agent_id":"agent-1","status":"DONE","started_at":"` + f(end.Add(-time.Hour)) + `"}`,
		`{"type":"ap2_transaction","id":"t-1","provider_id":"agent-1","buyer_id":"b-1","status":"SETTLED","escrow_amount_cents":100000,"started_at":"` + f(end.Add(-time.Hour)) + `","settled_at":"` + f(end) + `"}`,
		`{"type":"ap2_transaction","id":"t-2","provider_id":"agent-2","buyer_id":"b-1","status":"SETTLED","escrow_amount_cents":100000,"started_at":"` + f(end.Add(-time.Hour)) + `","settled_at":"` + f(end) + `"}`,
	}, "\n") + "\n"
	file := filepath.Join(dir, "events.ndjson")
	if err := os.WriteFile(file, []byte(events), 0o600); err != nil {
		t.Fatal(err)
	}
	fix := filepath.Join(dir, "fix.json")
	os.WriteFile(fix, []byte(`[{"event_type":"conduit_session","event_id":"s-2","action":"status","status":"VERIFIED"}]`), 0o600)

	seen := map[string]string{}
	var out bytes.Buffer
	appealID, passportID := "", ""
	step := func(args ...string) string {
		t.Helper()
		for i, a := range args {
			args[i] = strings.NewReplacer("{appeal}", appealID, "{passport}", passportID).Replace(a)
		}
		var stdout, stderr bytes.Buffer
		code := Run(t.Context(), args, Process{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
			Getenv: func(k string) string { return c.env[k] }, Drivers: testDrivers, Now: func() time.Time { return c.now }})
		r := result{stdout.String(), stderr.String(), code}
		norm := func(s string) string {
			return cliRandom.ReplaceAllStringFunc(s, func(s string) string {
				if p, ok := seen[s]; ok {
					return p
				}
				p := fmt.Sprintf("<random-%d>", len(seen)+1)
				if i := strings.Index(s, ":"); i > 0 && s[0] == '"' {
					p = s[:i+1] + `"` + p + `"`
				}
				seen[s] = p
				return p
			})
		}
		fmt.Fprintf(&out, "$ %s -> %d\n%s", norm(strings.ReplaceAll(strings.Join(args, " "), dir, "$DIR")), r.code, norm(r.stdout))
		c.now = c.now.Add(time.Minute)
		return r.stdout
	}
	step("ingest", file, "--json")
	step("correct", "conduit_session", "s-1", "--status", "FAILED", "--reason", "forged proof", "--json")
	if m := regexp.MustCompile(`"agent_passport_id":"([^"]+)"`).FindStringSubmatch(step("agent", "records", "agent-1", "--json")); m != nil {
		passportID = m[1]
	}
	a := step("appeal", "file", "--passport", "{passport}", "--grounds", "incorrect_status", "--event", "conduit_session:s-2",
		"--statement", "s-2 was delivered", "--operator", "market-1", "--json")
	if m := regexp.MustCompile(`"id":"(apl-[^"]+)"`).FindStringSubmatch(a); m != nil {
		appealID = m[1]
	}
	step("appeal", "list", "--json")
	step("appeal", "ack", "{appeal}", "--operator", "ops", "--json")
	step("appeal", "uphold", "{appeal}", "--reason", "confirmed", "--corrections", fix, "--operator", "ops", "--json")
	step("appeal", "escalate", "{appeal}", "--reason", "more", "--json")
	step("appeal", "show", "{appeal}", "--json")
	step("agent", "consent", "agent-1", "--json")
	step("agent", "consent", "agent-1", "--record", "--json")
	step("agent", "visibility", "agent-1", "unlisted", "--json")
	step("agent", "records", "agent-1", "--json")
	step("agent", "signals", "agent-1", "--json")
	step("agent", "signals", "--flagged", "--signal-min-events", "1", "--json")
	step("agent", "disclosure", "--json")
	step("agent", "erase", "agent-2", "--reason", "agent-2 asked", "--json")
	step("agent", "erasures", "--json")

	golden := filepath.Join("testdata", "json-transcript.txt")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(out.String(), "\n")
	for i := range max(len(wl), len(gl)) {
		w, g := "", ""
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			t.Fatalf("%s:%d differs (-update rewrites it):\nwant %s\ngot  %s", golden, i+1, w, g)
		}
	}
}
