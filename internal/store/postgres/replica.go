package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/singleflight"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Read replicas. With AttachReplica, the public reads (an agent's cache
// stamp and cached entry, its counts, its profile and consent, the
// ranking, an issued passport) go to a streaming replica, and everything
// else, writes and the operators' reads, to the primary.
//
// What a reader sees under replica lag: a replica is behind its primary by
// whatever WAL it has not replayed yet, so an entry read there may be one
// the primary has already invalidated. A process never serves such an
// entry once it has seen the invalidation: every invalidation it learns
// of (a notification on the primary's cache channel, a write of its own,
// a reconnection of its listener, which stands for every agent) is tied to
// an LSN of the primary at or after the invalidating commit, and a read
// for an agent goes to the replica only when the replica has replayed past
// the LSN of that agent's (and of every agent's) last such invalidation;
// otherwise it goes to the primary. Until that LSN is known (it is read on
// the listener's connection after each notification and at each
// heartbeat) the agent reads from the primary. Reads go to the replica only
// while the listener is connected; a replica that fails a read is left
// for the primary for that read. So a certificate is never older than the
// primary's last invalidation this process has seen, and an operator's
// write is read back by the next request through the same process.

// lsn is a WAL position.
type lsn uint64

// parseLSN reads PostgreSQL's text form of an LSN ("16/B374D848"); NULL
// (the empty string) is 0.
func parseLSN(s string) (lsn, error) {
	if s == "" {
		return 0, nil
	}
	hi, lo, ok := strings.Cut(s, "/")
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("postgres: malformed LSN %q", s)
	}
	return lsn(h<<32 | l), nil
}

func (l lsn) String() string { return fmt.Sprintf("%X/%X", uint64(l)>>32, uint64(l)&0xFFFFFFFF) }

// unknownLSN stands for an invalidation whose LSN is not known yet: no
// replica position satisfies it.
const unknownLSN = lsn(1<<64 - 1)

// readGate holds, per agent, the primary LSN a replica must have replayed
// before it may answer a read about the agent.
type readGate struct {
	mu sync.Mutex
	// pending are invalidations seen whose LSN is not known yet, each with
	// the generation (gen) it was last seen at: an agent stays pending until
	// an LSN read after that generation settles it.
	gen        uint64
	pending    map[string]uint64
	pendingAll uint64 // 0: none
	// need[agent] and needAll are the known LSNs; maxNeed is the largest
	// of them (a read about no single agent needs it).
	need             map[string]lsn
	needAll, maxNeed lsn
}

func newReadGate() *readGate {
	// Nothing is known before the listener first subscribes.
	return &readGate{gen: 1, pending: map[string]uint64{}, pendingAll: 1, need: map[string]lsn{}}
}

// saw records invalidations of agents (of every agent when all).
func (g *readGate) saw(agents []string, all bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gen++
	if all {
		g.pendingAll = g.gen
		return
	}
	for _, a := range agents {
		g.pending[a] = g.gen
	}
}

// mark returns the generation up to which what is pending now will be
// settled by an LSN read after this call, and whether anything is pending.
func (g *readGate) mark() (gen uint64, any bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gen, len(g.pending) > 0 || g.pendingAll != 0
}

// settle records that the invalidations seen up to generation gen were
// committed at or before the primary's LSN at; they stop being pending.
// Those seen later stay pending: their commit may be after at.
func (g *readGate) settle(gen uint64, at lsn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pendingAll != 0 && g.pendingAll <= gen {
		g.pendingAll = 0
		g.needAll = max(g.needAll, at)
	}
	for a, seen := range g.pending {
		if seen <= gen {
			delete(g.pending, a)
			g.need[a] = max(g.need[a], at)
		}
	}
	g.maxNeed = max(g.maxNeed, at)
}

// required is the LSN a replica must have replayed to answer a read about
// agent ("" for a read about several agents).
func (g *readGate) required(agent string) lsn {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pendingAll != 0 {
		return unknownLSN
	}
	if agent == "" {
		if len(g.pending) > 0 {
			return unknownLSN
		}
		return g.maxNeed
	}
	if _, ok := g.pending[agent]; ok {
		return unknownLSN
	}
	return max(g.needAll, g.need[agent])
}

// forget drops the per-agent LSNs a replica has replayed past.
func (g *readGate) forget(replayed lsn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for a, l := range g.need {
		if l <= replayed {
			delete(g.need, a)
		}
	}
}

// replica is an attached read replica.
type replica struct {
	pool     *pgxpool.Pool
	replayed atomic.Uint64 // a lower bound of the replica's replay LSN
	refresh  singleflight.Group
	// Counters for ReplicaStats.
	reads, lagged, failed, missed atomic.Uint64
}

// ReplicaStats reports where the public reads went since AttachReplica;
// ok is false when no replica is attached.
func (s *Store) ReplicaStats() (st ledger.ReplicaStats, ok bool) {
	if s.replica == nil {
		return st, false
	}
	r := s.replica
	return ledger.ReplicaStats{Replica: r.reads.Load(), Lagged: r.lagged.Load(), Failed: r.failed.Load(), Missed: r.missed.Load()}, true
}

// AttachReplica sends the store's public reads to the streaming replica
// dsn names, as the package's "Read replicas" says, and starts the cache
// watch it relies on. Call it once, before the store is used. The replica
// must be a hot standby of this store's database: a server that is not in
// recovery is refused (ErrInvalid), as is a malformed DSN; an unreachable
// one is ErrUnavailable. Errors never contain the password.
func (s *Store) AttachReplica(ctx context.Context, dsn string) error {
	r, err := Open(ctx, dsn)
	if err != nil {
		return err
	}
	var standby bool
	if err := r.pool.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&standby); err != nil {
		r.Close()
		return fmt.Errorf("postgres: replica %s: %w", Redact(dsn), scrubbed(classify(err), dsn))
	}
	if !standby {
		r.Close()
		return fmt.Errorf("%w: --db-read %s is not a standby (pg_is_in_recovery() is false): reads must go to a replica of the primary", errkind.ErrInvalid, Redact(dsn))
	}
	s.replica = &replica{pool: r.pool}
	s.gate = newReadGate()
	s.CacheWatch()
	return nil
}

// reader returns the pool a public read about agent ("" for several) goes
// to: the replica when one is attached, the listener is live and the
// replica has replayed every invalidation of agent seen so far; else the
// primary.
func (s *Store) reader(ctx context.Context, agent string) (*pgxpool.Pool, bool) {
	r := s.replica
	if r == nil {
		return s.pool, false
	}
	w := s.watch.get()
	if w == nil || !w.live() {
		r.lagged.Add(1)
		return s.pool, false
	}
	need := s.gate.required(agent)
	if need != unknownLSN && lsn(r.replayed.Load()) < need {
		r.refreshReplayed(ctx, s.gate)
	}
	if need == unknownLSN || lsn(r.replayed.Load()) < need {
		r.lagged.Add(1)
		return s.pool, false
	}
	r.reads.Add(1)
	return r.pool, true
}

// refreshReplayed reads the replica's replay position (once for all the
// reads that ask at the same time).
func (r *replica) refreshReplayed(ctx context.Context, g *readGate) {
	r.refresh.Do("", func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		var text *string
		if err := r.pool.QueryRow(ctx, `SELECT pg_last_wal_replay_lsn()::text`).Scan(&text); err != nil || text == nil {
			return nil, err
		}
		l, err := parseLSN(*text)
		if err != nil {
			return nil, err
		}
		for {
			old := r.replayed.Load()
			if uint64(l) <= old || r.replayed.CompareAndSwap(old, uint64(l)) {
				break
			}
		}
		g.forget(l)
		return nil, nil
	})
}

// read runs fn on the pool a public read about agent goes to. When that is
// the replica and fn fails there for a reason other than the answer (the
// replica down, a query cancelled by a recovery conflict), or finds
// nothing (what another process has just created: an agent, a passport),
// it runs fn again on the primary.
func (s *Store) read(ctx context.Context, agent string, fn func(db *pgxpool.Pool) error) error {
	db, onReplica := s.reader(ctx, agent)
	err := fn(db)
	if !onReplica || err == nil || ctx.Err() != nil {
		return err
	}
	switch {
	case errors.Is(err, errkind.ErrNotFound):
		s.replica.missed.Add(1)
	case replicaFault(err):
		s.replica.failed.Add(1)
	default:
		return err
	}
	return fn(s.pool)
}

// wrote holds reads about agents (every agent when none are named) to a
// write of this store that has just committed, like an invalidation seen.
// The use cases tell the watch of most of their writes; these are the
// store's own (a passport issued, an appeal decided).
func (s *Store) wrote(agents ...string) {
	if s.gate != nil {
		s.gate.saw(agents, len(agents) == 0)
	}
}

// replicaFault reports whether a replica's error says nothing about the
// data: the connection failed, or the standby cancelled the query to apply
// WAL (SQLSTATE 40001 there, or 57P01 and friends when it restarts).
func replicaFault(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "40001" {
		return true
	}
	return errors.Is(classify(err), errkind.ErrUnavailable)
}

// settleFromPrimary reads the primary's current WAL position on conn and
// settles with it every invalidation seen before the query was sent. The
// listener calls it after notifications and at each heartbeat.
func settleFromPrimary(ctx context.Context, conn *pgconn.PgConn, g *readGate) error {
	gen, any := g.mark()
	if !any {
		return nil
	}
	res, err := conn.Exec(ctx, `SELECT pg_current_wal_lsn()::text`).ReadAll()
	if err == nil && (len(res) != 1 || res[0].Err != nil || len(res[0].Rows) != 1) {
		err = errors.New("postgres: pg_current_wal_lsn() returned no row")
		if len(res) == 1 && res[0].Err != nil {
			err = res[0].Err
		}
	}
	var at lsn
	if err == nil {
		at, err = parseLSN(string(res[0].Rows[0][0]))
	}
	if err != nil {
		return err // still pending
	}
	g.settle(gen, at)
	return nil
}
