package cli

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/httpapi"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
)

// supersedingStore answers events whose id starts with "old-" as
// superseded, as a back end does for a report of an earlier status than
// the one recorded, and passes the rest on.
type supersedingStore struct{ service.Backend }

func (s supersedingStore) Ingest(ctx context.Context, b ledger.Batch) ([]ledger.Outcome, error) {
	out := make([]ledger.Outcome, len(b.Events))
	var pass []ledger.Event
	var at []int
	for i, e := range b.Events {
		if strings.HasPrefix(e.ID, "old-") {
			out[i].Status = ledger.OutcomeSuperseded
			continue
		}
		pass, at = append(pass, e), append(at, i)
	}
	b.Events = pass
	inner, err := s.Backend.Ingest(ctx, b)
	if err != nil {
		return nil, err
	}
	for k, o := range inner {
		out[at[k]] = o
	}
	return out, nil
}

// TestIngestSuperseded: superseded lines are counted in the summary and,
// like duplicates, are not failures.
func TestIngestSuperseded(t *testing.T) {
	drivers := Drivers{"sqlite": {
		Open: func(ctx context.Context, dsn string) (service.Backend, error) {
			st, err := sqlite.Open(ctx, dsn)
			if err != nil {
				return nil, err
			}
			return supersedingStore{st}, nil
		},
		File: sqlite.Path,
	}}
	in := `{"type":"conduit_session","id":"s-1","agent_id":"agent-1","status":"RUNNING","started_at":"2026-03-16T10:00:00Z"}
{"type":"conduit_session","id":"old-1","agent_id":"agent-1","status":"RUNNING","started_at":"2026-03-16T10:00:00Z"}
`
	var out, errb bytes.Buffer
	code := Run(t.Context(), []string{"ingest", "--db", "sqlite:" + filepath.Join(t.TempDir(), "s.db")},
		Process{Stdin: strings.NewReader(in), Stdout: &out, Stderr: &errb, Drivers: drivers})
	if code != ExitOK || out.String() != "standard input: 1 accepted, 0 duplicates, 1 superseded, 0 rejected\n" || errb.Len() != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
}

// TestIngestSummary: --json prints the summary as one object, and the
// closing line never claims that events were recorded when none were.
func TestIngestSummary(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "s.db")
	good := `{"type":"conduit_session","id":"s-1","agent_id":"agent-1","status":"RUNNING","started_at":"2026-03-16T10:00:00Z"}`
	bad := `{"type":"conduit_session","id":"s-2","agent_id":"agent-1","status":"DONE","started_at":"2026-03-16T10:00:00Z"}`
	run := func(in string, args ...string) result {
		return run(t, strings.NewReader(in), nil, append([]string{"ingest", "--db", db}, args...)...)
	}
	r := run(bad + "\n\n" + bad + "\n")
	if r.code != ExitFailure || r.stderr != "swarmscore: 2 line(s) rejected; nothing was recorded\n" {
		t.Fatalf("all rejected: %+v", r)
	}
	r = run(good+"\n"+bad+"\n", "--json")
	want := `{"accepted":1,"duplicates":0,"superseded":0,"rejected":[{"index":1,"line":2,"id":"s-2","reason":"status: \"DONE\" is not a conduit_session status (want one of PENDING, RUNNING, VERIFIED, FAILED, ERROR, TIMEOUT)"}]}` + "\n"
	if r.code != ExitFailure || r.stdout != want || r.stderr != "swarmscore: 1 line(s) rejected; the other 1 are recorded\n" {
		t.Fatalf("--json: %+v\nwant %s", r, want)
	}
	r = run(good + "\n" + bad + "\n")
	if r.code != ExitFailure || r.stderr != "swarmscore: 1 line(s) rejected; nothing new was recorded (the other 1 were already in the ledger)\n" {
		t.Fatalf("only duplicates: %+v", r)
	}
	if r = run(good+"\n", "--json"); r.code != ExitOK || r.stdout != `{"accepted":0,"duplicates":1,"superseded":0,"rejected":[]}`+"\n" {
		t.Fatalf("clean --json: %+v", r)
	}
}

// TestIngestClockSkew: an event dated beyond --max-clock-skew past the
// clock is rejected with the reason; one inside it is recorded.
func TestIngestClockSkew(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "s.db")
	soon := time.Now().UTC().Add(2 * time.Minute).Truncate(time.Second).Format(time.RFC3339)
	in := `{"type":"conduit_session","id":"s-soon","agent_id":"agent-1","status":"RUNNING","started_at":"` + soon + `"}
{"type":"conduit_session","id":"s-2031","agent_id":"agent-1","status":"RUNNING","started_at":"2031-01-01T00:00:00Z"}
`
	r := run(t, strings.NewReader(in), nil, "ingest", "--db", db)
	if r.code != ExitFailure || !strings.Contains(r.stdout, "1 accepted") ||
		!strings.Contains(r.stdout, "line 2: started_at: 2031-01-01T00:00:00Z is later than the server's clock") ||
		!strings.Contains(r.stdout, "allowed clock skew of 5m0s") {
		t.Fatalf("default: %+v", r)
	}
	r = run(t, strings.NewReader(strings.ReplaceAll(in, "s-soon", "s-soon-2")), nil, "ingest", "--db", db, "--max-clock-skew", "1m")
	if r.code != ExitFailure || !strings.Contains(r.stdout, "0 accepted") || !strings.Contains(r.stdout, "clock skew of 1m0s") {
		t.Fatalf("one minute: %+v", r)
	}
	if r = run(t, strings.NewReader(in), nil, "ingest", "--db", db, "--max-clock-skew", "0s"); r.code != ExitUsage {
		t.Fatalf("zero allowance: %+v", r)
	}
}

// TestIngestRemote: `ingest --server` through the real HTTP API prints
// what a local ingest prints, numbered by the file's lines, and exits as
// it would; the token never shows.
func TestIngestRemote(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), "sqlite:"+filepath.Join(dir, "remote.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	u := service.New(st, service.Config{})
	tok, err := u.Tokens.CreateToken(t.Context(), "market-1", "")
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(httpapi.New(httpapi.ServicesOf(u), httpapi.Options{}))
	defer ts.Close()

	// One copy of the events for every run: they are dated from the
	// clock, and a second boundary between two copies would make the
	// re-send a conflict.
	events := cliEvents()
	file := filepath.Join(dir, "events.ndjson")
	os.WriteFile(file, []byte(events), 0o600)
	local := run(t, nil, nil, "ingest", "--db", "sqlite:"+filepath.Join(dir, "local.db"), "--operator", "market-1", "--batch-size", "2", file)
	env := map[string]string{"SWARMSCORE_TOKEN": tok.Secret}
	remote := run(t, nil, env, "ingest", file, "--server", ts.URL, "--batch-size", "2")
	if remote.code != ExitFailure || remote.stdout != local.stdout || remote.stderr != local.stderr || !strings.Contains(remote.stdout, "line 3: ") {
		t.Fatalf("remote\n%+v\nlocal\n%+v", remote, local)
	}
	// Again, from a token file and standard input: all duplicates now.
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte(tok.Secret+"\n"), 0o600)
	r := run(t, strings.NewReader(events), nil, "ingest", "-", "--server", ts.URL, "--token-file", tokenFile, "--json")
	if r.code != ExitFailure || !strings.HasPrefix(r.stdout, `{"accepted":0,"duplicates":4,"superseded":0,"rejected":[{"index":2,"line":3,`) {
		t.Fatalf("token file: %+v", r)
	}

	for _, c := range []struct {
		env  map[string]string
		args []string
		code int
		want string
	}{
		{nil, []string{"--server", ts.URL}, ExitUsage, "SWARMSCORE_TOKEN"},
		{env, []string{"--server", "localhost:1"}, ExitUsage, "--server"},
		{env, []string{"--server", ts.URL, "--operator", "x"}, ExitUsage, "--operator"},
		{env, []string{"--server", ts.URL, "--db", "sqlite:x.db"}, ExitUsage, "--db"},
		{env, []string{"--server", ts.URL, "--max-clock-skew", "1m"}, ExitUsage, "--max-clock-skew"},
		{env, []string{"--server", ts.URL, "--attempts", "0"}, ExitUsage, "--attempts"},
		{env, []string{"--token-file", tokenFile}, ExitUsage, "--token-file"},
		{env, []string{"--server", ts.URL, "--token-file", filepath.Join(dir, "missing")}, ExitUsage, "--token-file"},
		{map[string]string{"SWARMSCORE_TOKEN": "sst_wrong-token-0123456789"}, []string{"--server", ts.URL}, ExitDenied, "401 Unauthorized"},
		{env, []string{"--server", "http://127.0.0.1:1", "--attempts", "1"}, ExitUnavailable, "cannot reach http://127.0.0.1:1"},
		{env, []string{"--server", ts.URL + "/nowhere"}, ExitNotFound, "404"},
	} {
		r := run(t, strings.NewReader(events), c.env, append([]string{"ingest"}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stdout+r.stderr, tok.Secret) ||
			strings.Contains(r.stderr, "sst_wrong") {
			t.Errorf("%v: %+v", c.args, r)
		}
	}
}
