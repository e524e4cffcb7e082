package service

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
)

var ledgerNow = time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)

func newLedger(t *testing.T) *Ledger {
	t.Helper()
	st, err := sqlite.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return &Ledger{Store: st, Now: func() time.Time { return ledgerNow }}
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
		rep, err := l.IngestStream(t.Context(), "op", strings.NewReader(ndjson), batch, func(p Progress) { progress = append(progress, p) })
		if err != nil {
			t.Fatal(err)
		}
		if rep.Accepted != 3 || rep.Duplicates != 1 || len(rep.Rejected) != 3 {
			t.Fatalf("batch %d: report %+v", batch, rep)
		}
		wantLines := []int{2, 7, 8}
		wantKinds := []errkind.Kind{errkind.Invalid, errkind.Conflict, errkind.Invalid}
		for i, r := range rep.Rejected {
			if r.Index != wantLines[i] || errkind.Of(r.Err) != wantKinds[i] {
				t.Errorf("batch %d: rejection %d = line %d %v, want line %d %v", batch, i, r.Index, r.Err, wantLines[i], wantKinds[i])
			}
		}
		if len(progress) == 0 || progress[len(progress)-1].Lines != 8 || progress[len(progress)-1].Accepted != 3 {
			t.Errorf("batch %d: progress %+v", batch, progress)
		}
		s, err := l.AgentScore(t.Context(), "agent-1", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if c := s.Entry.Result.Counts; c.ConduitTotal != 2 || c.ConduitSuccess != 1 || c.AP2Total != 1 || c.AP2Success != 1 {
			t.Errorf("counts %+v", c)
		}
	}
	l := newLedger(t)
	if _, err := l.IngestStream(t.Context(), "op", strings.NewReader(ndjson), MaxBatchSize+1, nil); errkind.Of(err) != errkind.Invalid {
		t.Errorf("oversized batch: %v", err)
	}
	if _, err := l.IngestStream(t.Context(), "bad op", strings.NewReader(ndjson), 0, nil); errkind.Of(err) != errkind.Invalid {
		t.Errorf("bad operator: %v", err)
	}
	if _, err := l.Ingest(t.Context(), "op", make([]ledger.Event, MaxBatchSize+1)); errkind.Of(err) != errkind.Invalid {
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
	rep, err := l.IngestStream(t.Context(), "op", failingReader{strings.NewReader(ndjson)}, 2, nil)
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
	if _, err := l.IngestStream(t.Context(), "op", strings.NewReader(ndjson), 0, nil); err != nil {
		t.Fatal(err)
	}
	first, err := l.AgentScore(t.Context(), "agent-1", time.Time{})
	if err != nil || first.Cache != CacheRefreshed {
		t.Fatalf("first: %v %v", first.Cache, err)
	}
	second, err := l.AgentScore(t.Context(), "agent-1", time.Time{})
	if err != nil || second.Cache != CacheHit || second.Entry.Result != first.Entry.Result {
		t.Fatalf("second: %v %v", second.Cache, err)
	}
	// History: before the cached entry, computed from the ledger.
	past, err := l.AgentScore(t.Context(), "agent-1", ledgerNow.Add(-30*time.Hour))
	if err != nil || past.Cache != CacheBypassed || past.Entry.Result.Counts.ConduitTotal != 0 {
		t.Fatalf("past: %+v %v", past, err)
	}
	if e, ok, _ := l.Store.CachedScore(t.Context(), "agent-1", ledgerNow); !ok || !e.ComputedAt.Equal(ledgerNow) {
		t.Error("a historical query replaced the current cache entry")
	}
	if _, err := l.AgentScore(t.Context(), "nobody", time.Time{}); !errors.Is(err, errkind.ErrNotFound) {
		t.Errorf("unknown agent: %v", err)
	}
	if _, err := l.AgentScore(t.Context(), "bad id", time.Time{}); !errors.Is(err, errkind.ErrInvalid) {
		t.Errorf("bad id: %v", err)
	}
	b, err := json.Marshal(second)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"agent_id", "score", "tier", "conduit", "ap2", "escrow_modifier",
		"qualification_gaps", "formula_version", "as_of", "computed_at", "expires_at", "valid_until", "cache"} {
		if _, ok := v[k]; !ok {
			t.Errorf("JSON view lacks %q: %s", k, b)
		}
	}
	if v["cache"] != "hit" || v["score"].(float64) != float64(second.Entry.Result.Score) {
		t.Errorf("JSON view %s", b)
	}
	if info, err := l.Agent(t.Context(), "agent-1"); err != nil || info.ChainLength != 3 {
		t.Errorf("Agent: %+v %v", info, err)
	}
	if r, err := l.VerifyLedger(t.Context()); err != nil || len(r.Broken) != 0 || r.Records != 3 {
		t.Errorf("VerifyLedger: %+v %v", r, err)
	}
	if n, err := l.RecomputeAll(t.Context(), false); err != nil || n != 1 {
		t.Errorf("RecomputeAll: %d %v", n, err)
	}
}
