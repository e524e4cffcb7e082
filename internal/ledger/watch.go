package ledger

// CacheWatch tells, with no database round trip, whether a score stamp read
// earlier still holds. The protocol: take a Mark, then read the stamp (or
// write the entry), and keep the mark with what was read; while
// Unchanged(agent, mark) is true, no commit that changes the agent's stamp
// has become visible to this process since the mark, so what was read may
// be used without reading it again. It is never true for a commit this
// process made and reported with Wrote, nor, once the back end has learnt
// of it, for a commit made by anyone. How soon a back end learns of other
// processes' commits is its documented delay: SQLite sees them
// synchronously (the WAL index changes at commit); PostgreSQL when the
// commit's notification arrives, and vouches for nothing while its
// listener is disconnected or silent. Implementations are safe for
// concurrent use.
type CacheWatch interface {
	// Mark returns the watch's position now. ok is false while the watch
	// cannot vouch for anything; Unchanged is then false for every mark,
	// including this one.
	Mark() (mark uint64, ok bool)
	// Unchanged reports whether no commit that may change agentID's cache
	// stamp has become known since mark was returned. False is always
	// safe: a back end may report a change that did not happen (another
	// agent's write, a hash collision, a reconnection), never the reverse.
	Unchanged(agentID string, mark uint64) bool
	// Wrote records that this process has just committed writes that may
	// have changed these agents' stamps: Unchanged is false for them, for
	// every mark taken before the call, as soon as it returns, without
	// waiting for the database to report the commit.
	Wrote(agentIDs []string)
}

// WatchStats says how a CacheWatch that holds a connection (PostgreSQL's
// listener) has fared since it started. A watch that offers them implements
// Stats() WatchStats.
type WatchStats struct {
	// Live is true while the watch vouches for marks.
	Live bool
	// Connects counts subscriptions: the first and every reconnection.
	Connects uint64
	// Disconnects counts connections lost or abandoned.
	Disconnects uint64
	// MissedHeartbeats counts heartbeats that did not come back in time.
	MissedHeartbeats uint64
}

// ReplicaStats counts where a back end with a read replica sent the reads
// it may send there (postgres.Store.AttachReplica). The counters only grow.
type ReplicaStats struct {
	// Replica counts reads the replica answered.
	Replica uint64
	// Lagged counts reads sent to the primary because the replica had not
	// replayed an invalidation the process had seen, or its listener was
	// down.
	Lagged uint64
	// Failed counts reads the replica failed (down, a query cancelled by a
	// recovery conflict) that the primary then answered.
	Failed uint64
	// Missed counts reads the replica found nothing for (an agent or a
	// passport created since its last replay) that the primary was asked
	// again.
	Missed uint64
}
