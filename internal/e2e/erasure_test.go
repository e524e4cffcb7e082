package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/client"
)

// dumpDatabase returns every row of every table of dsn's database as text,
// one row a line prefixed by its table.
func dumpDatabase(t *testing.T, dsn string) string {
	t.Helper()
	ctx := context.Background()
	pg := strings.HasPrefix(dsn, "postgres")
	driver, source := "sqlite", strings.TrimPrefix(dsn, "sqlite:")+"?_pragma=busy_timeout(10000)"
	tables := `SELECT name FROM sqlite_master WHERE type = 'table'`
	if pg {
		driver, source = "pgx", dsn
		tables = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
	}
	db, err := sql.Open(driver, source)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, tables)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	rows.Close()
	var b strings.Builder
	for _, table := range names {
		q := `SELECT * FROM "` + table + `"`
		if pg {
			q = `SELECT t::text FROM "` + table + `" t`
		}
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			b.WriteString(table + ":")
			for _, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, " %v", v)
			}
			b.WriteByte('\n')
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return b.String()
}

// victimEvents are an agent's events whose ids do not contain its id, so
// that a dump naming the id after its erasure means it was left behind.
func victimEvents(agent, prefix string) []client.Event {
	var evs []client.Event
	for i := range 20 {
		st := "VERIFIED"
		if i%5 == 4 {
			st = "FAILED"
		}
		evs = append(evs, client.ConduitSession(fmt.Sprintf("%s-c%d", prefix, i), agent, st, t0, t0.Add(time.Minute)))
	}
	for i := range 10 {
		evs = append(evs, client.AP2Transaction(fmt.Sprintf("%s-t%d", prefix, i), agent, "buyer-1", "SETTLED", 5000, t0, t0.Add(time.Minute)))
	}
	return evs
}

// TestErasure (GDPR Art. 17, spec §11.4), on both back ends: only an
// operator erases; afterwards the erased id is in no table, the ledger
// verifies, other agents' scores are unchanged (an agent the erased one
// bought from included), the id's score and certificate routes are 404s,
// its token is dead, and its old passport verifies as passport_revoked.
func TestErasure(t *testing.T) {
	backEnds(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		const victim = "victim-q7z3k"
		env := []string{"SWARMSCORE_ADMIN_TOKEN=" + adminToken, "SWARMSCORE_SIGNING_KEY=" + signingKey}
		s := start(t, dsn, env...)
		op, pub := s.client(adminToken), s.client("")
		evs := append(victimEvents(victim, "v"), history("keeper")...)
		// The victim bought from keeper: keeper's chain names it.
		evs = append(evs, client.AP2Transaction("bought-1", "keeper", victim, "SETTLED", 7000, t0, t0.Add(time.Minute)))
		if res, err := op.IngestEvents(ctx, evs); err != nil || res.Accepted != len(evs) {
			t.Fatalf("ingest: %+v %v", res, err)
		}
		old, err := pub.Certificate(ctx, victim)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := pub.Verify(ctx, old.Raw, victim); err != nil || !v.Valid {
			t.Fatalf("the passport before: %+v %v", v, err)
		}
		keeper, err := pub.Score(ctx, "keeper")
		if err != nil {
			t.Fatal(err)
		}
		self, other := agentToken(t, dsn, victim), agentToken(t, dsn, "keeper")
		if !strings.Contains(dumpDatabase(t, dsn), victim) {
			t.Fatal("the dump does not show the agent before its erasure: it cannot prove it gone after")
		}

		for _, c := range []struct {
			name, token string
			want        int
		}{{"the agent itself", self, http.StatusForbidden}, {"another agent", other, http.StatusForbidden}, {"anonymous", "", http.StatusUnauthorized}} {
			if code, b := s.call("POST", "/swarmscore/"+victim+"/erase", c.token, ""); code != c.want {
				t.Errorf("erase by %s: %d %s", c.name, code, b)
			}
			if code, b := s.call("GET", "/swarmscore/erasures", c.token, ""); code != c.want {
				t.Errorf("erasures by %s: %d %s", c.name, code, b)
			}
		}
		if code, b := s.call("POST", "/swarmscore/ghost-1/erase", adminToken, ""); code != http.StatusNotFound {
			t.Errorf("erasing an unknown agent: %d %s", code, b)
		}

		code, b := s.call("POST", "/swarmscore/"+victim+"/erase", adminToken, `{"reason":"asked by the agent's owner"}`)
		if code != http.StatusCreated || strings.Contains(string(b), victim) {
			t.Fatalf("erase: %d %s", code, b)
		}
		var e struct {
			Pseudonym string `json:"pseudonym"`
			Identity  string `json:"identity"`
			Opening   struct{ Salt string }
		}
		if err := json.Unmarshal(b, &e); err != nil || !regexp.MustCompile(`^erased-[0-9a-f]{16}$`).MatchString(e.Pseudonym) || len(e.Opening.Salt) != 32 {
			t.Fatalf("erasure %s: %v", b, err)
		}

		if dump := dumpDatabase(t, dsn); strings.Contains(dump, victim) {
			var lines []string
			for _, l := range strings.Split(dump, "\n") {
				if strings.Contains(l, victim) {
					lines = append(lines, l)
				}
			}
			t.Errorf("the erased id is still stored:\n%s", strings.Join(lines, "\n"))
		}
		if code, out, errOut := run(t, env, "", "ledger", "verify", "--db", dsn); code != 0 || !strings.Contains(out, "every chain is intact") {
			t.Fatalf("ledger verify: %d %s %s", code, out, errOut)
		}
		if now, err := pub.Score(ctx, "keeper"); err != nil || now.Result != keeper.Result {
			t.Errorf("keeper's score: %+v %v, was %+v", now, err, keeper)
		}
		for _, tok := range []string{"", adminToken} {
			for _, path := range []string{"/swarmscore/" + victim, "/swarmscore/" + victim + "/certificate"} {
				if code, b := s.call("GET", path, tok, ""); code != http.StatusNotFound {
					t.Errorf("%s (token %t): %d %s", path, tok != "", code, b)
				}
			}
		}
		if code, _ := s.call("GET", "/swarmscore/"+victim+"/consent", self, ""); code != http.StatusUnauthorized {
			t.Errorf("the erased agent's token: %d", code)
		}
		v, err := pub.Verify(ctx, old.Raw, "")
		if err != nil || v.Valid || !hasCode(v, client.ErrorPassportRevoked) || v.DetectedTampering || v.Checks.Result("ledger") != client.CheckRevoked {
			t.Errorf("the old passport: %+v %v", v, err)
		}
		if raw, _ := json.Marshal(v); strings.Contains(string(raw), e.Pseudonym) {
			t.Errorf("the verification names the pseudonym: %s", raw)
		}
		// The pseudonym is unlisted: the public does not see it either.
		if code, _ := s.call("GET", "/swarmscore/"+e.Pseudonym, "", ""); code != http.StatusNotFound {
			t.Errorf("the pseudonym's public score: %d", code)
		}

		if es, err := op.Erasures(ctx); err != nil || len(es) != 1 || es[0].Pseudonym != e.Pseudonym || es[0].Identity != e.Identity || es[0].Opening != nil {
			t.Errorf("erasures through the client: %+v %v", es, err)
		}
		if _, err := op.EraseAgent(ctx, victim, ""); !client.IsProblem(err, client.ProblemNotFound) {
			t.Errorf("erasing it again through the client: %v", err)
		}
		code, out, errOut := run(t, env, "", "agent", "erasures", "--db", dsn, "--json")
		if code != 0 || !strings.Contains(out, e.Pseudonym) || !strings.Contains(out, e.Identity) || strings.Contains(out, e.Opening.Salt) {
			t.Errorf("agent erasures: %d %s %s", code, out, errOut)
		}
		if code, out, errOut := run(t, env, "", "agent", "erase", victim, "--db", dsn); code != 3 || strings.Count(errOut, "\n") != 1 || out != "" {
			t.Errorf("erasing it again: %d %q %q", code, out, errOut)
		}
		// The pseudonym's audit bundle, and that of keeper, whose chain
		// holds a record the erasure sealed, verify offline.
		for _, agent := range []string{e.Pseudonym, "keeper"} {
			code, bundle, errOut := run(t, env, "", "audit", "export", agent, "--db", dsn)
			if code != 0 || strings.Contains(bundle, victim) {
				t.Fatalf("audit export %s: %d %s", agent, code, errOut)
			}
			file := filepath.Join(t.TempDir(), agent+".audit.json")
			if err := os.WriteFile(file, []byte(bundle), 0o600); err != nil {
				t.Fatal(err)
			}
			if code, out, errOut := run(t, env, "", "audit", "verify", file); code != 0 || !strings.Contains(out, "every check passed") || !strings.Contains(out, "sealed:") {
				t.Errorf("audit verify %s: %d %s %s", agent, code, out, errOut)
			}
		}
		s.stop()
	})
}
