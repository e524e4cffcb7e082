package service

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// countingStore counts the store calls a certificate request makes. It
// offers the inner store's CacheWatch, or watch when set.
type countingStore struct {
	Backend
	watch                     ledger.CacheWatch
	stamps, cached, refreshed atomic.Int64
	counts, passports         atomic.Int64
	// The other reads of the certificates' and publication's ports
	// (CertificateStore, ConsentReader): agents, records, appeals,
	// consent, listings.
	others atomic.Int64
	// delay slows every RefreshScore down; the first fail of them fail.
	delay time.Duration
	fail  atomic.Int64
}

func (s *countingStore) CacheStamp(ctx context.Context, agentID string) (ledger.ScoreStamp, error) {
	s.stamps.Add(1)
	return s.Backend.CacheStamp(ctx, agentID)
}

func (s *countingStore) Counts(ctx context.Context, agentID string, asOf time.Time) (score.Counts, error) {
	s.counts.Add(1)
	return s.Backend.Counts(ctx, agentID, asOf)
}

func (s *countingStore) Passport(ctx context.Context, id string) (ledger.IssuedPassport, error) {
	s.passports.Add(1)
	return s.Backend.Passport(ctx, id)
}

func (s *countingStore) Agent(ctx context.Context, agentID string) (ledger.AgentInfo, error) {
	s.others.Add(1)
	return s.Backend.Agent(ctx, agentID)
}

func (s *countingStore) Records(ctx context.Context, agentID string, asOf time.Time) ([]ledger.StoredEvent, error) {
	s.others.Add(1)
	return s.Backend.Records(ctx, agentID, asOf)
}

func (s *countingStore) AppealSummaries(ctx context.Context) ([]appeal.Appeal, error) {
	s.others.Add(1)
	return s.Backend.AppealSummaries(ctx)
}

func (s *countingStore) Consent(ctx context.Context, agentID string) (ledger.Consent, error) {
	s.others.Add(1)
	return s.Backend.Consent(ctx, agentID)
}

func (s *countingStore) ChangedSince(ctx context.Context, agentID string, asOf, issuedAt time.Time) ([]ledger.EventKey, score.Counts, error) {
	s.others.Add(1)
	return s.Backend.ChangedSince(ctx, agentID, asOf, issuedAt)
}

func (s *countingStore) ListScores(ctx context.Context, q ledger.ListQuery) ([]ledger.ScoreEntry, error) {
	s.others.Add(1)
	return s.Backend.ListScores(ctx, q)
}

// queries is how many of the counted reads the store has served: every
// read of the ports Certificates, Verifier and the publication rule hold.
func (s *countingStore) queries() int64 {
	return s.stamps.Load() + s.cached.Load() + s.refreshed.Load() + s.counts.Load() + s.passports.Load() + s.others.Load()
}

func (s *countingStore) CachedScore(ctx context.Context, agentID string, asOf time.Time) (ledger.ScoreEntry, bool, error) {
	s.cached.Add(1)
	return s.Backend.CachedScore(ctx, agentID, asOf)
}

func (s *countingStore) RefreshScore(ctx context.Context, agentID string, asOf time.Time, issue ledger.IssueFunc) (ledger.ScoreEntry, error) {
	s.refreshed.Add(1)
	time.Sleep(s.delay)
	if s.fail.Add(-1) >= 0 {
		return ledger.ScoreEntry{}, errors.New("injected refresh failure")
	}
	return s.Backend.RefreshScore(ctx, agentID, asOf, issue)
}

func (s *countingStore) CacheWatch() ledger.CacheWatch {
	if s.watch != nil {
		return s.watch
	}
	if w, ok := s.Backend.(CacheWatcher); ok {
		return w.CacheWatch()
	}
	return nil
}

// fakeWatch is a CacheWatch the test drives: it learns of nothing by
// itself. Every invalidation gets the next number; an agent's slot holds
// the number of the last one that named it.
type fakeWatch struct {
	down  atomic.Bool
	mu    sync.Mutex
	seq   uint64
	all   uint64
	last  map[string]uint64
	wrote [][]string
}

func newFakeWatch() *fakeWatch { return &fakeWatch{last: map[string]uint64{}} }

func (w *fakeWatch) Mark() (uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq, !w.down.Load()
}

func (w *fakeWatch) Unchanged(agentID string, m uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.down.Load() && w.all <= m && w.last[agentID] <= m
}

func (w *fakeWatch) Wrote(ids []string) {
	w.mu.Lock()
	w.wrote = append(w.wrote, ids)
	w.mu.Unlock()
	w.learn(ids)
}

// learn models a notification of another process's commit naming ids.
func (w *fakeWatch) learn(ids []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	for _, id := range ids {
		w.last[id] = w.seq
	}
}

// setDown models the listener going away and coming back, which forgets
// every mark, as the real watches do.
func (w *fakeWatch) setDown(down bool) {
	w.mu.Lock()
	w.seq++
	w.all = w.seq
	w.mu.Unlock()
	w.down.Store(down)
}

// twoInstances opens two stores on one database with open (its own
// connections each, as two processes have), migrates it and returns UseCases
// on each sharing clock c; B's store counts its calls.
func twoInstances(t *testing.T, open func(context.Context, string) (Backend, error), dsn string, c *testClock) (a, b *UseCases, sb *countingStore) {
	t.Helper()
	opened := func() Backend {
		s, err := open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if _, err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s
	}
	key, err := passport.NewKey([]byte(testKey))
	if err != nil {
		t.Fatal(err)
	}
	sb = &countingStore{Backend: opened()}
	a = New(opened(), Config{Now: c.now, Key: key, Platform: "test.example"})
	b = New(sb, Config{Now: c.now, Key: key, Platform: "test.example"})
	return a, b, sb
}

// TestCertificateTwoInstances runs two UseCases instances, as two `serve`
// processes would, on one SQLite file: B serves its in-memory copy while
// nothing changes, and sees every write A makes on its very next request.
func TestCertificateTwoInstances(t *testing.T) {
	ctx := context.Background()
	c := &testClock{t0.Add(10 * 24 * time.Hour)}
	a, b, sb := twoInstances(t, func(ctx context.Context, dsn string) (Backend, error) { return sqlite.Open(ctx, dsn) }, "sqlite:"+filepath.Join(t.TempDir(), "shared.db"), c)
	cert := func(api *UseCases, name string, issued bool) Certificate {
		t.Helper()
		got, err := api.Certificates.Certificate(ctx, "agent-1")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Issued != issued {
			t.Fatalf("%s: issued %v, want %v", name, got.Issued, issued)
		}
		return got
	}
	reads := func(name string, cached, refreshed int64) {
		t.Helper()
		if c, r := sb.cached.Load(), sb.refreshed.Load(); c != cached || r != refreshed {
			t.Fatalf("%s: B read %d passports and refreshed %d times, want %d and %d", name, c, r, cached, refreshed)
		}
	}

	ingest(t, a, append(conduit("agent-1", "c", 80, 76, t0), ap2("agent-1", "t", 40, 38, t0)...))
	b1 := cert(b, "B's first", true)
	reads("B's first", 0, 1)
	c.t = c.t.Add(time.Hour)
	for i := range 3 {
		if got := cert(b, "B again", false); !bytes.Equal(got.Passport, b1.Passport) || !got.ExpiresAt.Equal(b1.ExpiresAt) || !got.ComputedAt.Equal(b1.ComputedAt) {
			t.Fatalf("B again (%d): a different certificate", i)
		}
	}
	reads("B from memory", 0, 1) // no passport read from the database
	// B's own refresh moved the WAL index, so the first "again" read the
	// stamp once; the others were served with no query at all.
	if n := sb.stamps.Load(); n != 2 {
		t.Fatalf("B read %d stamps for 4 requests, want 2", n)
	}
	if got := cert(a, "A, same entry", false); !bytes.Equal(got.Passport, b1.Passport) {
		t.Fatal("A serves a different certificate than B for the same entry")
	}

	// A terminal report ingested by A: B's very next certificate is new.
	ingest(t, a, conduit("agent-1", "late", 1, 0, c.t.Add(-time.Minute)))
	b2 := cert(b, "B after A's ingest", true)
	if bytes.Equal(b2.Passport, b1.Passport) {
		t.Fatal("B served its old certificate after A's ingest")
	}
	if p := verifyOK(t, a, b2.Passport, "agent-1"); p.Counts().ConduitTotal != 81 {
		t.Fatalf("B's new certificate counts %+v", p.Counts())
	}
	// A holds the old one in memory; the stamp names B's new one.
	if got := cert(a, "A after B's refresh", false); !bytes.Equal(got.Passport, b2.Passport) {
		t.Fatal("A served its remembered certificate after B issued a new one")
	}

	// A issues a newer certificate: B serves it, read once, then remembered.
	c.t = c.t.Add(time.Minute)
	ingest(t, a, conduit("agent-1", "later", 1, 1, c.t.Add(-time.Second)))
	a3 := cert(a, "A after its ingest", true)
	reads("before B reads A's certificate", 0, 2)
	for range 2 {
		if got := cert(b, "B after A's certificate", false); !bytes.Equal(got.Passport, a3.Passport) {
			t.Fatal("B did not serve A's new certificate")
		}
	}
	reads("B after A's certificate", 1, 2)

	// A recompute drops the stored passports: a new one is issued, the
	// remembered one is not served.
	c.t = c.t.Add(time.Minute)
	if _, err := a.store.RecomputeAll(ctx, c.now(), false); err != nil {
		t.Fatal(err)
	}
	if got := cert(b, "B after a recompute", true); bytes.Equal(got.Passport, a3.Passport) {
		t.Fatal("B served a passport the cache no longer holds")
	}

	// Expiry: past valid_until the remembered copy is not served either.
	b4 := cert(b, "B before expiry", false)
	c.t = b4.ExpiresAt
	if got := cert(b, "B at expiry", true); bytes.Equal(got.Passport, b4.Passport) {
		t.Fatal("B served an expired certificate")
	}
}

// TestCertificateWatch drives the memo with a fake watch: while it vouches,
// a remembered certificate costs no query; a change it reports, its being
// down, maxTrust, expiry and this process's own ingest each send the
// request back to the store.
// A burst of first requests for an agent signs one passport, and every
// request serves it; if the request signing it fails, the waiting ones sign
// their own rather than fail with it.
func TestCertificateFirstBurst(t *testing.T) {
	ctx := context.Background()
	for _, fail := range []bool{false, true} {
		a, c := newUseCases(t)
		cs := &countingStore{Backend: a.store, delay: 50 * time.Millisecond}
		if fail {
			cs.fail.Store(1)
		}
		b := New(cs, Config{Now: c.now, Key: a.cfg.Key, Platform: a.cfg.Platform})
		ingest(t, a, conduit("agent-1", "c", 80, 76, t0))
		const n = 8
		certs, errs := make([]Certificate, n), make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { certs[i], errs[i] = b.Certificates.Certificate(ctx, "agent-1") })
		}
		wg.Wait()
		var failed, issued int
		var served []byte
		for i := range n {
			if errs[i] != nil {
				failed++
				continue
			}
			if certs[i].Issued {
				issued++
			}
			if served == nil {
				served = certs[i].Passport
			}
			if !fail && !bytes.Equal(certs[i].Passport, served) {
				t.Fatalf("request %d served another passport:\n%s\n%s", i, certs[i].Passport, served)
			}
		}
		if !fail && (failed != 0 || issued != 1 || cs.refreshed.Load() != 1) {
			t.Fatalf("%d failed, %d issued, %d refreshes; want 0, 1, 1", failed, issued, cs.refreshed.Load())
		}
		if fail && (failed != 1 || issued < 1) {
			t.Fatalf("with the first refresh failing: %d failed, %d issued; want 1 and at least 1", failed, issued)
		}
		// Whatever happened, the route now serves one stored passport.
		got, err := b.Certificates.Certificate(ctx, "agent-1")
		if err != nil || got.Issued {
			t.Fatalf("after the burst: issued %v, %v", got.Issued, err)
		}
	}
}

func TestCertificateWatch(t *testing.T) {
	ctx := context.Background()
	a, c := newUseCases(t)
	fw := newFakeWatch()
	cs := &countingStore{Backend: a.store, watch: fw}
	b := New(cs, Config{Now: c.now, Key: a.cfg.Key, Platform: a.cfg.Platform})
	ingest(t, a, append(conduit("agent-1", "c", 80, 76, t0), ap2("agent-1", "t", 40, 38, t0)...))
	ingest(t, a, conduit("agent-2", "d", 10, 10, t0))

	calls := func(name string, n int, wantStamps int64, wantIssued bool) Certificate {
		t.Helper()
		before := cs.stamps.Load()
		var got Certificate
		for i := range n {
			var err error
			got, err = b.Certificates.Certificate(ctx, "agent-1")
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got.Issued != (wantIssued && i == 0) {
				t.Fatalf("%s, call %d: issued %v", name, i, got.Issued)
			}
			if got.Digest != sha256.Sum256(got.Passport) {
				t.Fatalf("%s: digest is not the passport's", name)
			}
		}
		if d := cs.stamps.Load() - before; d != wantStamps {
			t.Fatalf("%s: %d calls read %d stamps, want %d", name, n, d, wantStamps)
		}
		return got
	}
	first := calls("first", 1, 1, true)
	calls("vouched", 20, 0, false)

	// A change the watch reports: one stamp read, then memory again.
	fw.learn([]string{"agent-2"})
	calls("another agent changed", 5, 0, false)
	fw.learn([]string{"agent-1"})
	calls("agent changed, nothing new", 5, 1, false)

	// While the watch is down, every request reads the stamp.
	fw.setDown(true)
	calls("watch down", 4, 4, false)
	fw.setDown(false)
	calls("watch back", 4, 1, false)

	// A write the watch never reports (a fake watch learns of nothing) is
	// still seen once the entry's trust runs out: maxTrust bounds it.
	ingest(t, a, conduit("agent-1", "x", 1, 1, c.t.Add(-time.Minute)))
	if got := calls("unreported write", 3, 0, false); !bytes.Equal(got.Passport, first.Passport) {
		t.Fatal("control: the unreported write was seen within maxTrust")
	}
	b.Certificates.certs.age("agent-1", maxTrust)
	second := calls("past maxTrust", 3, 1, true)
	if bytes.Equal(second.Passport, first.Passport) {
		t.Fatal("the unreported write was not seen past maxTrust")
	}

	// This process's own ingest: reported with Wrote before it returns,
	// so the very next request is fresh; only accepted events count.
	out, err := b.Ingest.Ingest(ctx, "op-1", append(conduit("agent-1", "y", 1, 1, c.t.Add(-time.Minute)),
		ledger.Event{Type: ledger.ConduitSession, ID: "y-0", AgentID: "agent-2", Status: ledger.Verified, StartedAt: t0, EndedAt: t0}))
	if err != nil || out[0].Status != ledger.OutcomeAccepted || out[1].Status != ledger.OutcomeRejected {
		t.Fatalf("ingest: %+v %v", out, err)
	}
	if got := fw.wrote[len(fw.wrote)-1]; len(got) != 1 || got[0] != "agent-1" {
		t.Fatalf("Wrote(%v), want [agent-1]", got)
	}
	third := calls("after own ingest", 3, 1, true)
	if p := verifyOK(t, a, third.Passport, "agent-1"); p.Counts().ConduitTotal != 82 {
		t.Fatalf("counts %+v", p.Counts())
	}
	// A failed ingest may have committed: every agent in it counts.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Ingest.Ingest(cctx, "op-1", conduit("agent-3", "z", 1, 1, t0)); err == nil {
		t.Fatal("ingest with a cancelled context succeeded")
	}
	if got := fw.wrote[len(fw.wrote)-1]; len(got) != 1 || got[0] != "agent-3" {
		t.Fatalf("failed ingest: Wrote(%v), want [agent-3]", got)
	}

	// Past its validity the remembered certificate is not served, however
	// much the watch vouches.
	calls("vouched again", 3, 0, false)
	c.t = third.ExpiresAt
	if got := calls("at expiry", 1, 1, true); bytes.Equal(got.Passport, third.Passport) {
		t.Fatal("an expired certificate was served")
	}
}

// statsWatch is a fake watch that reports its state, as a watch holding
// a connection does.
type statsWatch struct {
	*fakeWatch
	stats ledger.WatchStats
}

func (w *statsWatch) Stats() ledger.WatchStats { return w.stats }

// TestCertificateStats counts how certificates were served, and reports
// the watch's state only once a certificate request started a watch that
// offers it.
func TestCertificateStats(t *testing.T) {
	ctx := context.Background()
	a, c := newUseCases(t)
	sw := &statsWatch{fakeWatch: newFakeWatch(), stats: ledger.WatchStats{Live: true, Connects: 3, Disconnects: 2, MissedHeartbeats: 5}}
	b := New(&countingStore{Backend: a.store, watch: sw}, Config{Key: a.cfg.Key, Platform: a.cfg.Platform, Now: c.now})
	ingest(t, a, conduit("agent-1", "c", 80, 76, t0))
	ingest(t, b, conduit("agent-1", "d", 1, 1, t0))
	if s := b.Certificates.CertificateStats(); s != (CertificateStats{}) {
		t.Fatalf("before any certificate: %+v (an ingest must not start the watch)", s)
	}
	if _, err := a.Certificates.Certificate(ctx, "agent-1"); err != nil { // issued by the other instance
		t.Fatal(err)
	}
	for range 3 {
		if _, err := b.Certificates.Certificate(ctx, "agent-1"); err != nil {
			t.Fatal(err)
		}
	}
	s := b.Certificates.CertificateStats()
	if s.StampReads != 1 || s.PassportReads != 1 || s.FromMemory != 2 {
		t.Errorf("counters %+v, want 1 stamp read, 1 passport read, 2 from memory", s)
	}
	if s.Watch == nil || *s.Watch != sw.stats {
		t.Errorf("watch stats %+v, want %+v", s.Watch, sw.stats)
	}
	// A server starts its watch before the first request.
	e := New(&countingStore{Backend: a.store, watch: sw}, Config{Now: c.now})
	e.Certificates.StartCacheWatch()
	if s := e.Certificates.CertificateStats(); s.Watch == nil || s.StampReads != 0 {
		t.Errorf("after StartCacheWatch: %+v", s)
	}
	// A watch that reports nothing: no state.
	fw := newFakeWatch()
	d := New(&countingStore{Backend: a.store, watch: fw}, Config{Key: a.cfg.Key, Now: c.now})
	if _, err := d.Certificates.Certificate(ctx, "agent-1"); err != nil {
		t.Fatal(err)
	}
	if s := d.Certificates.CertificateStats(); s.Watch != nil || s.StampReads != 1 {
		t.Errorf("plain watch: %+v", s)
	}
}

// TestCertificateLeaderPanics: when the request signing a passport panics,
// that request panics, and the requests waiting for it issue their own
// instead of failing or crashing the process.
func TestCertificateLeaderPanics(t *testing.T) {
	ctx := context.Background()
	a, c := newUseCases(t)
	ingest(t, a, conduit("agent-1", "c", 80, 76, t0))
	ps := &panickingStore{countingStore: countingStore{Backend: a.store, delay: 50 * time.Millisecond}}
	ps.panics.Store(1)
	b := New(ps, Config{Key: a.cfg.Key, Platform: a.cfg.Platform, Now: c.now})
	const n = 6
	var panicked, served atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			defer func() {
				if recover() != nil {
					panicked.Add(1)
				}
			}()
			if _, err := b.Certificates.Certificate(ctx, "agent-1"); err == nil {
				served.Add(1)
			}
		})
	}
	wg.Wait()
	if panicked.Load() != 1 || served.Load() != n-1 {
		t.Fatalf("%d panicked, %d served; want 1 and %d", panicked.Load(), served.Load(), n-1)
	}
}

// panickingStore panics in the first panics calls of RefreshScore.
type panickingStore struct {
	countingStore
	panics atomic.Int64
}

func (s *panickingStore) RefreshScore(ctx context.Context, agentID string, asOf time.Time, issue ledger.IssueFunc) (ledger.ScoreEntry, error) {
	time.Sleep(s.delay)
	if s.panics.Add(-1) >= 0 {
		panic("injected refresh panic")
	}
	return s.Backend.RefreshScore(ctx, agentID, asOf, issue)
}

func TestCertMemo(t *testing.T) {
	at := t0
	entry := func(sig string) *ledger.ScoreEntry {
		return &ledger.ScoreEntry{Passport: []byte(`{"s":"` + sig + `"}`), Signature: sig, ComputedAt: at,
			ExpiresAt: at.Add(time.Hour), ValidUntil: at.Add(time.Hour)}
	}
	current := func(sig string) ledger.ScoreStamp {
		return ledger.ScoreStamp{Current: true, ComputedAt: at, ValidUntil: at.Add(time.Hour), Signature: sig}
	}
	fw := newFakeWatch()
	var m certMemo
	ck := m.begin(fw)
	if _, ok := m.lookup("a", current("s1"), ck); ok {
		t.Fatal("hit in an empty memo")
	}
	m.remember("a", entry("s1"), ck)
	m.remember("e", &ledger.ScoreEntry{Signature: "no passport", ValidUntil: at.Add(time.Hour)}, ck)
	if m.len() != 1 {
		t.Fatalf("a certificate without a passport was kept: %d entries", m.len())
	}
	if got, ok := m.lookup("a", current("s1"), ck); !ok || string(got.passport) != `{"s":"s1"}` {
		t.Fatalf("lookup: %v %s", ok, got.passport)
	}
	if _, ok := m.serve(fw, "a", at); !ok {
		t.Fatal("not served from memory while the watch vouches")
	}
	for name, now := range map[string]time.Time{"before computed_at": at.Add(-time.Second), "at valid_until": at.Add(time.Hour)} {
		if _, ok := m.serve(fw, "a", now); ok {
			t.Errorf("%s: served from memory", name)
		}
	}
	if _, ok := m.serve(nil, "a", at); ok {
		t.Error("served from memory without a watch")
	}
	for name, st := range map[string]ledger.ScoreStamp{
		"another signature":  current("s2"),
		"no passport":        current(""),
		"not current":        {ComputedAt: at, ValidUntil: at.Add(time.Hour), Signature: "s1"},
		"another computedAt": {Current: true, ComputedAt: at.Add(time.Second), ValidUntil: at.Add(time.Hour), Signature: "s1"},
	} {
		if _, ok := m.lookup("a", st, ck); ok {
			t.Errorf("%s: served the remembered certificate", name)
		}
	}
	if _, ok := m.lookup("b", current("s1"), ck); ok {
		t.Error("another agent's certificate served")
	}
	// A lookup validated while the watch could not vouch is served, but
	// not trusted for the next request.
	fw.setDown(true)
	if _, ok := m.lookup("a", current("s1"), m.begin(fw)); !ok {
		t.Fatal("lookup while the watch is down")
	}
	fw.setDown(false)
	if _, ok := m.serve(fw, "a", at); ok {
		t.Error("an entry validated while the watch was down is trusted")
	}

	// Bounded: the newest is always kept, replacing an entry never evicts.
	small := certMemo{max: 3}
	for i := range 10 {
		small.remember(fmt.Sprint("agent-", i), entry(fmt.Sprint("s", i)), ck)
		if small.len() > 3 {
			t.Fatalf("%d entries, bound 3", small.len())
		}
		if _, ok := small.lookup(fmt.Sprint("agent-", i), current(fmt.Sprint("s", i)), ck); !ok {
			t.Fatalf("agent-%d not kept", i)
		}
	}
	small.remember("agent-9", entry("s9b"), ck)
	if small.len() != 3 {
		t.Fatalf("replacing an entry changed the size to %d", small.len())
	}
}

// TestCertMemoConcurrent is for the race detector: lookups, serves,
// invalidations and evictions from several goroutines.
func TestCertMemoConcurrent(t *testing.T) {
	m := certMemo{max: 8}
	fw := newFakeWatch()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				agent := fmt.Sprint("agent-", (i*7+g)%20)
				if got, ok := m.serve(fw, agent, t0); ok && string(got.passport) != agent {
					t.Errorf("%s: served %s", agent, got.passport)
					return
				}
				ck := m.begin(fw)
				if got, ok := m.lookup(agent, ledger.ScoreStamp{Current: true, ComputedAt: t0, ValidUntil: t0.Add(time.Hour), Signature: agent}, ck); ok && string(got.passport) != agent {
					t.Errorf("%s: got %s", agent, got.passport)
					return
				}
				m.remember(agent, &ledger.ScoreEntry{Passport: []byte(agent), Signature: agent, ComputedAt: t0,
					ExpiresAt: t0.Add(time.Hour), ValidUntil: t0.Add(time.Hour)}, ck)
				if i%50 == 0 {
					fw.Wrote([]string{agent})
				}
			}
		}()
	}
	wg.Wait()
	if n := m.len(); n > 8 {
		t.Fatalf("%d entries, bound 8", n)
	}
}

func (m *certMemo) len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.m)
}

// age makes the agent's entry look validated d ago.
func (m *certMemo) age(agentID string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.m[agentID]; c != nil {
		v := *c
		v.checked = v.checked.Add(-d)
		m.m[agentID] = &v
	}
}
