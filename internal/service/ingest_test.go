package service

import (
	"context"
	"errors"
	"fmt"
	"github.com/swarmscore/swarmscore/api"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
)

var ledgerNow = time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)

func newLedger(t *testing.T) *UseCases {
	t.Helper()
	st, err := sqlite.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return New(st, Config{Now: func() time.Time { return ledgerNow }})
}

const ndjson = `{"type":"conduit_session","id":"s-1","agent_id":"agent-1","status":"VERIFIED","started_at":"2026-03-16T10:00:00Z","completed_at":"2026-03-16T10:05:00Z"}
not json
{"type":"conduit_session","id":"s-2","agent_id":"agent-1","status":"FAILED","started_at":"2026-03-16T10:00:00Z","completed_at":"2026-03-16T12:05:00+01:00"}

{"type":"ap2_transaction","id":"t-1","provider_id":"agent-1","buyer_id":"b","status":"SETTLED","escrow_amount_cents":5000,"started_at":"2026-03-16T10:00:00Z","settled_at":"2026-03-17T10:00:00Z"}
{"type":"conduit_session","id":"s-1","agent_id":"agent-1","status":"VERIFIED","started_at":"2026-03-16T10:00:00Z","completed_at":"2026-03-16T10:05:00Z"}
{"type":"conduit_session","id":"s-1","agent_id":"agent-2","status":"VERIFIED","started_at":"2026-03-16T10:00:00Z","completed_at":"2026-03-16T10:05:00Z"}
{"type":"conduit_session","id":"s-3","agent_id":"agent-1","status":"VERIFIED","started_at":"2026-03-16T10:00:00Z"}
`

func TestIngestStream(t *testing.T) {
	for _, batch := range []int{1, 2, 1000} {
		l := newLedger(t)
		var progress []Progress
		rep, err := l.Ingest.IngestStream(t.Context(), "op", strings.NewReader(ndjson), batch, func(p Progress) { progress = append(progress, p) })
		if err != nil {
			t.Fatal(err)
		}
		if rep.Accepted != 3 || rep.Duplicates != 1 || len(rep.Rejected) != 3 {
			t.Fatalf("batch %d: report %+v", batch, rep)
		}
		wantLines := []int{2, 7, 8}
		wantKinds := []errkind.Kind{errkind.Invalid, errkind.Conflict, errkind.Invalid}
		for i, r := range rep.Rejected {
			if r.Line != wantLines[i] || errkind.Of(r.Err) != wantKinds[i] {
				t.Errorf("batch %d: rejection %d = line %d %v, want line %d %v", batch, i, r.Line, r.Err, wantLines[i], wantKinds[i])
			}
		}
		if len(progress) == 0 || progress[len(progress)-1].Lines != 8 || progress[len(progress)-1].Accepted != 3 {
			t.Errorf("batch %d: progress %+v", batch, progress)
		}
		s, err := l.Certificates.AgentScore(t.Context(), "agent-1", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if c := s.Entry.Result.Counts; c.ConduitTotal != 2 || c.ConduitSuccess != 1 || c.AP2Total != 1 || c.AP2Success != 1 {
			t.Errorf("counts %+v", c)
		}
	}
	l := newLedger(t)
	if _, err := l.Ingest.IngestStream(t.Context(), "op", strings.NewReader(ndjson), api.MaxEvents+1, nil); errkind.Of(err) != errkind.Invalid {
		t.Errorf("oversized batch: %v", err)
	}
	if _, err := l.Ingest.IngestStream(t.Context(), "bad op", strings.NewReader(ndjson), 0, nil); errkind.Of(err) != errkind.Invalid {
		t.Errorf("bad operator: %v", err)
	}
	if _, err := l.Ingest.Ingest(t.Context(), "op", make([]ledger.Event, api.MaxEvents+1)); errkind.Of(err) != errkind.Invalid {
		t.Errorf("oversized Ingest: %v", err)
	}
}

// failingReader fails after its content, like a broken pipe.
type failingReader struct{ r *strings.Reader }

func (f failingReader) Read(p []byte) (int, error) {
	if f.r.Len() == 0 {
		return 0, errors.New("disk on fire")
	}
	return f.r.Read(p)
}

func TestIngestStreamReadError(t *testing.T) {
	l := newLedger(t)
	rep, err := l.Ingest.IngestStream(t.Context(), "op", failingReader{strings.NewReader(ndjson)}, 2, nil)
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("error %v", err)
	}
	// Batches committed before the failure are reported.
	if rep.Accepted == 0 {
		t.Errorf("report %+v", rep)
	}
}

func TestAgentScoreCacheStates(t *testing.T) {
	l := newLedger(t)
	if _, err := l.Ingest.IngestStream(t.Context(), "op", strings.NewReader(ndjson), 0, nil); err != nil {
		t.Fatal(err)
	}
	first, err := l.Certificates.AgentScore(t.Context(), "agent-1", time.Time{})
	if err != nil || first.Cache != CacheRefreshed {
		t.Fatalf("first: %v %v", first.Cache, err)
	}
	second, err := l.Certificates.AgentScore(t.Context(), "agent-1", time.Time{})
	if err != nil || second.Cache != CacheHit || second.Entry.Result != first.Entry.Result {
		t.Fatalf("second: %v %v", second.Cache, err)
	}
	// History: before the cached entry, computed from the ledger.
	past, err := l.Certificates.AgentScore(t.Context(), "agent-1", ledgerNow.Add(-30*time.Hour))
	if err != nil || past.Cache != CacheBypassed || past.Entry.Result.Counts.ConduitTotal != 0 {
		t.Fatalf("past: %+v %v", past, err)
	}
	if e, ok, _ := l.store.CachedScore(t.Context(), "agent-1", ledgerNow); !ok || !e.ComputedAt.Equal(ledgerNow) {
		t.Error("a historical query replaced the current cache entry")
	}
	if _, err := l.Certificates.AgentScore(t.Context(), "nobody", time.Time{}); !errors.Is(err, errkind.ErrNotFound) {
		t.Errorf("unknown agent: %v", err)
	}
	if _, err := l.Certificates.AgentScore(t.Context(), "bad id", time.Time{}); !errors.Is(err, errkind.ErrInvalid) {
		t.Errorf("bad id: %v", err)
	}
	if info, err := l.Certificates.Agent(t.Context(), "agent-1"); err != nil || info.ChainLength != 3 {
		t.Errorf("Agent: %+v %v", info, err)
	}
	if r, err := l.Signals.VerifyLedger(t.Context()); err != nil || len(r.Broken) != 0 || r.Records != 3 {
		t.Errorf("VerifyLedger: %+v %v", r, err)
	}
	if n, err := l.Certificates.RecomputeAll(t.Context(), false); err != nil || n != 1 {
		t.Errorf("RecomputeAll: %d %v", n, err)
	}
}

// TestIngestEvents is the pipeline behind POST /swarmscore/events: a JSON
// array or NDJSON, one batch, every event reported by its position.
func TestIngestEvents(t *testing.T) {
	u := newLedger(t)
	good := `{"type":"conduit_session","id":"s-1","agent_id":"agent-1","status":"RUNNING","started_at":"2026-03-16T10:00:00Z"}`
	changed := `{"type":"conduit_session","id":"s-1","agent_id":"agent-2","status":"RUNNING","started_at":"2026-03-16T10:00:00Z"}`
	noEnd := `{"type":"conduit_session","id":"s-2","agent_id":"agent-1","status":"VERIFIED","started_at":"2026-03-16T10:00:00Z"}`

	rep, err := u.Ingest.IngestEvents(t.Context(), "op", strings.NewReader("["+good+","+noEnd+","+good+","+changed+"]"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Accepted != 1 || rep.Duplicates != 1 || rep.Superseded != 0 || len(rep.Rejected) != 2 {
		t.Fatalf("array: %+v", rep)
	}
	// In input order: the parse failure (naming the event it could read
	// the id of) before the store's conflict.
	if r := rep.Rejected[0]; r.Index != 1 || r.Line != 0 || r.ID != "s-2" || errkind.Of(r.Err) != errkind.Invalid || !strings.Contains(r.Err.Error(), "completed_at") {
		t.Errorf("parse failure %+v", r)
	}
	if r := rep.Rejected[1]; r.Index != 3 || r.ID != "s-1" || errkind.Of(r.Err) != errkind.Conflict {
		t.Errorf("conflict %+v", r)
	}

	rep, err = u.Ingest.IngestEvents(t.Context(), "op", strings.NewReader("\n"+good+"\n\n{nope\n"+changed+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Duplicates != 1 || len(rep.Rejected) != 2 {
		t.Fatalf("ndjson: %+v", rep)
	}
	if r := rep.Rejected[0]; r.Index != 1 || r.Line != 4 {
		t.Errorf("malformed line %+v", r)
	}
	if r := rep.Rejected[1]; r.Index != 2 || r.Line != 5 || r.ID != "s-1" {
		t.Errorf("conflicting line %+v", r)
	}
	if rep, err := u.Ingest.IngestEvents(t.Context(), "op", strings.NewReader(" [ ] ")); err != nil || rep.Accepted+rep.Duplicates+len(rep.Rejected) != 0 {
		t.Errorf("empty array: %+v %v", rep, err)
	}

	many := func(n int, sep, open, close string) string {
		return open + strings.TrimSuffix(strings.Repeat(good+sep, n), sep) + close
	}
	for name, c := range map[string]struct {
		in   string
		want InputProblem
	}{
		"blank":              {" \n\t", InputEmpty},
		"truncated array":    {"[" + good + ",{", InputMalformed},
		"no comma":           {"[" + good + " " + good + "]", InputMalformed},
		"after the array":    {"[" + good + "] x", InputMalformed},
		"second array":       {"[][]", InputMalformed},
		"too many, array":    {many(api.MaxEvents+1, ",", "[", "]"), InputTooLarge},
		"too many, NDJSON":   {many(api.MaxEvents+1, "\n", "", "\n"), InputTooLarge},
		"syntax, first byte": {"[}", InputMalformed},
	} {
		_, err := u.Ingest.IngestEvents(t.Context(), "op", strings.NewReader(c.in))
		var ie *InputError
		if !errors.As(err, &ie) || ie.Problem != c.want || errkind.Of(err) != errkind.Invalid {
			t.Errorf("%s: %v, want problem %d", name, err, c.want)
		}
	}
	if _, err := ReadEvents(strings.NewReader(many(api.MaxEvents, ",", "[", "]"))); err != nil {
		t.Errorf("exactly api.MaxEvents events: %v", err)
	}
	// A failing reader is the reader's error, not the input's.
	for _, in := range []string{"[" + good, good + "\n", "  "} {
		_, err := ReadEvents(failingReader{strings.NewReader(in)})
		var ie *InputError
		if err == nil || errors.As(err, &ie) || !strings.Contains(err.Error(), "disk on fire") {
			t.Errorf("%q then a read error: %v", in, err)
		}
	}
}

// supersedingStore answers events whose id starts with "old-" as
// superseded, as a back end does for a report of an earlier status, and
// passes the rest on.
type supersedingStore struct{ Backend }

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

func TestIngestSuperseded(t *testing.T) {
	u := newLedger(t)
	u = New(supersedingStore{u.store}, u.cfg)
	in := `{"type":"conduit_session","id":"s-1","agent_id":"agent-1","status":"RUNNING","started_at":"2026-03-16T10:00:00Z"}
{"type":"conduit_session","id":"old-1","agent_id":"agent-1","status":"RUNNING","started_at":"2026-03-16T10:00:00Z"}
`
	rep, err := u.Ingest.IngestEvents(t.Context(), "op", strings.NewReader(in))
	if err != nil || rep.Accepted != 1 || rep.Superseded != 1 || rep.Duplicates != 0 || len(rep.Rejected) != 0 {
		t.Fatalf("%+v %v", rep, err)
	}
	total, err := u.Ingest.IngestStream(t.Context(), "op", strings.NewReader(in+in), 1, nil)
	if err != nil || total.Accepted != 0 || total.Duplicates != 2 || total.Superseded != 2 {
		t.Fatalf("stream: %+v %v", total, err)
	}
}

// TestIngestClockSkew: a report dated beyond the allowance past the
// clock is rejected on its own, naming the field; one within it is
// recorded.
func TestIngestClockSkew(t *testing.T) {
	u := newLedger(t) // the clock reads ledgerNow
	ev := func(id string, end time.Time) string {
		return `{"type":"conduit_session","id":"` + id + `","agent_id":"agent-1","status":"VERIFIED","started_at":"2026-03-17T14:00:00Z","completed_at":"` +
			end.Format(time.RFC3339) + `"}`
	}
	in := "[" + ev("soon", ledgerNow.Add(4*time.Minute)) + "," + ev("2031", time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)) + "]"
	rep, err := u.Ingest.IngestEvents(t.Context(), "op", strings.NewReader(in))
	if err != nil || rep.Accepted != 1 || len(rep.Rejected) != 1 {
		t.Fatalf("default allowance: %+v %v", rep, err)
	}
	r := rep.Rejected[0]
	var fe *ledger.FieldError
	if r.ID != "2031" || !errors.As(r.Err, &fe) || fe.Field != "completed_at" || !strings.Contains(r.Err.Error(), "clock skew of 5m0s") {
		t.Fatalf("rejection %+v", r)
	}
	// A narrower allowance refuses what the default let through.
	u.Ingest.horizon.skew = time.Minute
	in = "[" + ev("soon-2", ledgerNow.Add(4*time.Minute)) + "]"
	if rep, err := u.Ingest.IngestEvents(t.Context(), "op", strings.NewReader(in)); err != nil || len(rep.Rejected) != 1 ||
		!strings.Contains(rep.Rejected[0].Err.Error(), "1m0s") {
		t.Fatalf("one minute: %+v %v", rep, err)
	}
	u.Ingest.horizon.skew = -time.Second
	if _, err := u.Ingest.IngestEvents(t.Context(), "op", strings.NewReader(in)); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("negative allowance: %v", err)
	}
}

// TestReadEventsBOM: a byte-order mark before a JSON array or NDJSON is
// not part of the first event, and line numbers still count from it.
func TestReadEventsBOM(t *testing.T) {
	good := `{"type":"conduit_session","id":"s-1","agent_id":"agent-1","status":"RUNNING","started_at":"2026-03-16T10:00:00Z"}`
	for _, in := range []string{bom + "[" + good + "]", bom + good + "\n", bom + "\n" + good, bom + " [" + good + "]"} {
		items, err := ReadEvents(strings.NewReader(in))
		if err != nil || len(items) != 1 || items[0].Err != nil || items[0].Event.ID != "s-1" {
			t.Errorf("%q: %+v %v", in, items, err)
		}
	}
	if items, _ := ReadEvents(strings.NewReader(bom + "\n" + good)); items[0].Line != 2 {
		t.Errorf("line %d, want 2", items[0].Line)
	}
}

// analyzingStore is a back end that counts the statistics refreshes
// IngestStream asks for.
type analyzingStore struct {
	*sqlite.Store
	calls int
	err   error
}

func (s *analyzingStore) Analyze(context.Context) error {
	s.calls++
	return s.err
}

func TestIngestStreamAnalyzesAfterBulkLoad(t *testing.T) {
	st, err := sqlite.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	as := &analyzingStore{Store: st}
	u := New(as, Config{Now: func() time.Time { return ledgerNow }})
	events := func(prefix string, n int) *strings.Reader {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `{"type":"conduit_session","id":"%s-%d","agent_id":"agent-%d","status":"VERIFIED","started_at":"2026-03-16T10:00:00Z","completed_at":"2026-03-16T10:05:00Z"}`+"\n", prefix, i, i%50)
		}
		return strings.NewReader(b.String())
	}
	// Fewer accepted than AnalyzeAfter: no refresh. Re-sent events are
	// duplicates and do not count towards it.
	if _, err := u.Ingest.IngestStream(t.Context(), "op", events("a", AnalyzeAfter-1), 0, nil); err != nil || as.calls != 0 {
		t.Fatalf("small load: %v, %d refreshes", err, as.calls)
	}
	if rep, err := u.Ingest.IngestStream(t.Context(), "op", events("a", AnalyzeAfter), 0, nil); err != nil || rep.Accepted != 1 || as.calls != 0 {
		t.Fatalf("re-sent load: %+v %v, %d refreshes", rep, err, as.calls)
	}
	if rep, err := u.Ingest.IngestStream(t.Context(), "op", events("b", AnalyzeAfter), 0, nil); err != nil || rep.Accepted != AnalyzeAfter || as.calls != 1 {
		t.Fatalf("bulk load: %+v %v, %d refreshes", rep, err, as.calls)
	}
	as.err = fmt.Errorf("%w: the database went away", errkind.ErrUnavailable)
	rep, err := u.Ingest.IngestStream(t.Context(), "op", events("c", AnalyzeAfter), 0, nil)
	if !errors.Is(err, errkind.ErrUnavailable) || !strings.Contains(err.Error(), "events are recorded") || rep.Accepted != AnalyzeAfter {
		t.Fatalf("failed refresh: %+v %v", rep, err)
	}
}
