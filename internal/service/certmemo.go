package service

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// certMemoSize bounds the certificates a process keeps: about 1 KB each,
// so at most ≈ 10 MB however many agents are asked about.
const certMemoSize = 10_000

// maxTrust bounds how long a remembered certificate is served on the
// store's word (ledger.CacheWatch) before its stamp is read again. The watch
// alone is exact for every write that goes through the store or its
// triggers; this bound also covers writes that bypass them (a restore with
// triggers disabled, a hand edit), at the cost of one stamp read per agent
// per maxTrust.
const maxTrust = time.Second

// certMemo keeps, per agent, the last certificate this process served, so
// that a request is answered without reading the passport from the
// database, and usually without any query at all:
//
//   - An entry is served only while it answers now (computed_at <= now <
//     valid_until, the stamp's validity, which ends no later than the
//     passport's expires_at): expiry and the window's edges are enforced in
//     memory.
//   - It is served with no query while the store's watch vouches that
//     nothing that could change the agent's stamp was committed since the
//     stamp read that validated it (the watch's mark, taken before that
//     read), and that read is less than maxTrust old.
//   - Otherwise the stamp is read (Backend.CacheStamp) and the entry is
//     served if the stamp still names it (same computed_at and signature),
//     and trusted again with the mark taken before that read.
//
// The zero value is ready to use and safe for concurrent use.
type certMemo struct {
	max int // certMemoSize when zero
	mu  sync.RWMutex
	m   map[string]*memoCert

	// watcher is the back end's, when it has one (New). watchOnce starts
	// its watch on the first certificate request or StartCacheWatch, so
	// processes that serve none (the CLI) open no listener; watch is nil
	// until then, and after when the store has none.
	watcher   CacheWatcher
	watchOnce sync.Once
	watch     atomic.Pointer[watchRef]

	// issuing holds the passports being issued now, one per agent at most
	// (Certificates.issueOnce).
	issuing singleflight.Group

	// What CertificateStats reports.
	fromMemory, stampReads, passportReads atomic.Uint64
}

type watchRef struct{ w ledger.CacheWatch }

// memoCert is a served certificate. It is never modified once remembered
// (a revalidation remembers a copy), so readers need no lock; passport is
// shared by every request that serves it.
type memoCert struct {
	passport              []byte
	signature             string
	kid                   string // the key that signed it ("" for Config.Key)
	digest                [sha256.Size]byte
	passportID            string       // its agent_passport_id
	result                score.Result // the entry's score: the passport's counts
	computedAt, expiresAt time.Time
	validUntil            time.Time // the stamp's: the first instant it may be wrong

	// trusted: mark is a position of the watch taken before the stamp read
	// (or the write) that established this entry, at checked.
	trusted bool
	mark    uint64
	checked time.Time // with a monotonic reading
}

// check records where a stamp read starts: the watch's mark, taken first so
// that anything committed after it invalidates what the read returns.
type check struct {
	mark    uint64
	trusted bool
	at      time.Time
}

// cacheWatch returns the store's watch, started on the first call; nil when
// the store has none.
func (m *certMemo) cacheWatch() ledger.CacheWatch {
	m.watchOnce.Do(func() {
		if m.watcher != nil {
			m.watch.Store(&watchRef{m.watcher.CacheWatch()})
		}
	})
	return m.startedWatch()
}

// startedWatch returns the store's watch if it was started, else nil. Writes made before then need not be reported to
// it: nothing remembered predates it.
func (m *certMemo) startedWatch() ledger.CacheWatch {
	if r := m.watch.Load(); r != nil {
		return r.w
	}
	return nil
}

// begin takes a check before a stamp read or a refresh.
func (m *certMemo) begin(w ledger.CacheWatch) check {
	c := check{at: time.Now()}
	if w != nil {
		c.mark, c.trusted = w.Mark()
	}
	return c
}

// serve returns the remembered certificate of agentID if it can be served
// as of now with no query: it answers now and the watch vouches for it.
func (m *certMemo) serve(w ledger.CacheWatch, agentID string, now time.Time) (*memoCert, bool) {
	if w == nil {
		return nil, false
	}
	m.mu.RLock()
	c := m.m[agentID]
	m.mu.RUnlock()
	if c == nil || !c.trusted || !c.answers(now) || time.Since(c.checked) >= maxTrust || !w.Unchanged(agentID, c.mark) {
		return nil, false
	}
	return c, true
}

func (c *memoCert) answers(now time.Time) bool {
	return !now.Before(c.computedAt) && now.Before(c.validUntil) && now.Before(c.expiresAt)
}

// lookup returns the remembered certificate of agentID if st, a stamp read
// after ck was taken, names it: current, with the same computed_at and
// signature. The entry is remembered again as validated by ck.
func (m *certMemo) lookup(agentID string, st ledger.ScoreStamp, ck check) (*memoCert, bool) {
	if !st.Current || st.Signature == "" {
		return nil, false
	}
	m.mu.RLock()
	c := m.m[agentID]
	m.mu.RUnlock()
	if c == nil || !c.computedAt.Equal(st.ComputedAt) ||
		subtle.ConstantTimeCompare([]byte(c.signature), []byte(st.Signature)) != 1 {
		return nil, false
	}
	v := *c
	v.validUntil = st.ValidUntil
	v.trusted, v.mark, v.checked = ck.trusted, ck.mark, ck.at
	m.put(agentID, &v)
	return &v, true
}

// remember records the certificate of cache entry e (signed by the key
// e.KeyID), just read or written after ck was taken, and returns it. When
// the memo is full, an arbitrary other agent's certificate is dropped: a
// dropped agent costs one passport read on its next request, nothing else.
func (m *certMemo) remember(agentID string, e *ledger.ScoreEntry, ck check) *memoCert {
	c := &memoCert{passport: e.Passport, signature: e.Signature, kid: e.KeyID, digest: sha256.Sum256(e.Passport),
		passportID: e.PassportID, result: e.Result, computedAt: e.ComputedAt, expiresAt: e.ExpiresAt, validUntil: e.ValidUntil,
		trusted: ck.trusted, mark: ck.mark, checked: ck.at}
	if len(c.passport) > 0 && c.signature != "" {
		m.put(agentID, c)
	}
	return c
}

// remembered returns the agent's remembered certificate, and so its cache
// entry, when it answers now and is still the stored one: from memory while
// the watch vouches for it, else after one stamp read that still names it
// (and trusts it again). ok is false, with no query made, when the process
// remembers nothing for the agent or has no running watch; the caller then
// reads the store as it would without the memo. The score and verify
// routes use it so that an agent whose certificate this process serves
// costs them no query either; the key that signed it does not matter to
// them. Errors: those of CacheStamp (ErrUnavailable).
func (u *Certificates) remembered(ctx context.Context, agentID string, now time.Time) (*memoCert, bool, error) {
	m := u.certs
	w := m.startedWatch()
	if w == nil {
		return nil, false, nil
	}
	if c, ok := m.serve(w, agentID, now); ok {
		return c, true, nil
	}
	m.mu.RLock()
	_, known := m.m[agentID]
	m.mu.RUnlock()
	if !known {
		return nil, false, nil
	}
	ck := m.begin(w)
	m.stampReads.Add(1)
	st, err := u.store.CacheStamp(ctx, agentID)
	if err != nil || !st.Answers(now) {
		return nil, false, err
	}
	c, ok := m.lookup(agentID, st, ck)
	if !ok || !c.answers(now) {
		return nil, false, nil
	}
	return c, true, nil
}

// entry is the cache entry c was served from, as CachedScore returns it.
func (c *memoCert) entry(agentID string) ledger.ScoreEntry {
	return ledger.ScoreEntry{AgentID: agentID, Result: c.result, ComputedAt: c.computedAt, ExpiresAt: c.expiresAt,
		ValidUntil: c.validUntil, Passport: c.passport, Signature: c.signature, PassportID: c.passportID, KeyID: c.kid}
}

// forget drops the agent's certificate (an erasure: the erased id must
// serve nothing from memory).
func (m *certMemo) forget(agentID string) {
	m.mu.Lock()
	delete(m.m, agentID)
	m.mu.Unlock()
}

func (m *certMemo) put(agentID string, c *memoCert) {
	limit := m.max
	if limit <= 0 {
		limit = certMemoSize
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = make(map[string]*memoCert)
	}
	if _, ok := m.m[agentID]; !ok {
		for k := range m.m {
			if len(m.m) < limit {
				break
			}
			delete(m.m, k)
		}
	}
	m.m[agentID] = c
}

// CertificateStats says how this process has answered certificate requests
// since it started, and how the back end's cache watch has fared. The
// counters only grow.
type CertificateStats struct {
	// FromMemory counts certificates served from memory with no query.
	FromMemory uint64
	// StampReads counts cache stamps read to validate a remembered
	// certificate or to find the stored one.
	StampReads uint64
	// PassportReads counts stored passports read from the database: issued
	// by another process, or no longer remembered by this one.
	PassportReads uint64
	// Watch is the state of the back end's cache watch, when the watch
	// reports one (a watch holding a connection offers Stats() WatchStats);
	// nil before the watch starts (StartCacheWatch, or the first
	// certificate request), or when there is none or it reports nothing.
	Watch *ledger.WatchStats
	// Replica counts where the back end sent the reads it may send to a
	// read replica; nil without one (serve --db-read).
	Replica *ledger.ReplicaStats
}

// replicaStats is implemented by back ends that may read from a replica.
type replicaStats interface {
	ReplicaStats() (ledger.ReplicaStats, bool)
}

// watchStats is implemented by watches that hold a connection (the
// PostgreSQL listener).
type watchStats interface {
	Stats() ledger.WatchStats
}

// StartCacheWatch starts the back end's cache watch now instead of on the
// first certificate request, so that a server's watch (PostgreSQL: its
// listener connection) is live by then; it returns at once, and the watch
// connects in the background. Calling it again does nothing. Commands that
// serve no certificate should not call it.
func (u *Certificates) StartCacheWatch() { u.certs.cacheWatch() }

// CertificateStats returns the certificate memo's counters and its watch's
// state (for metrics). It is cheap, never blocks on I/O, and never starts
// the watch.
func (u *Certificates) CertificateStats() CertificateStats {
	s := CertificateStats{
		FromMemory:    u.certs.fromMemory.Load(),
		StampReads:    u.certs.stampReads.Load(),
		PassportReads: u.certs.passportReads.Load(),
	}
	if ws, ok := u.certs.startedWatch().(watchStats); ok {
		st := ws.Stats()
		s.Watch = &st
	}
	if rs, ok := u.store.(replicaStats); ok {
		if st, ok := rs.ReplicaStats(); ok {
			s.Replica = &st
		}
	}
	return s
}
