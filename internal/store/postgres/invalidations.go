package postgres

import (
	"hash/maphash"
	"sync/atomic"
)

// invalidationSlots is the size of an invalidations table: 32 KiB, and a
// collision rate low enough that an invalidation of one agent touches few
// others even with thousands of agents in use.
const invalidationSlots = 4096

// invalidations is the bookkeeping of a notified CacheWatch: it numbers
// invalidations and remembers, for each agent (hashed into a fixed table,
// so memory stays constant however many agents there are), the number of
// the last one that named it. A collision only reports a change for an
// agent nothing happened to, never the reverse. Create it with
// newInvalidations; it is safe for concurrent use.
type invalidations struct {
	seed  maphash.Seed
	seq   atomic.Uint64 // the number of the last invalidation
	all   atomic.Uint64 // the number of the last invalidation of every agent
	slots [invalidationSlots]atomic.Uint64
}

// newInvalidations returns an empty table.
func newInvalidations() *invalidations { return &invalidations{seed: maphash.MakeSeed()} }

// Mark is the number of the last invalidation: an invalidation recorded
// after Mark returns gets a larger number.
func (v *invalidations) Mark() uint64 { return v.seq.Load() }

// Agents records one invalidation naming every agent in ids.
func (v *invalidations) Agents(ids []string) {
	if len(ids) == 0 {
		return
	}
	n := v.seq.Add(1)
	for _, id := range ids {
		raise(&v.slots[maphash.String(v.seed, id)%invalidationSlots], n)
	}
}

// All records an invalidation of every agent.
func (v *invalidations) All() { raise(&v.all, v.seq.Add(1)) }

// Unchanged reports whether no invalidation recorded after mark named
// agentID (or every agent).
func (v *invalidations) Unchanged(agentID string, mark uint64) bool {
	return v.all.Load() <= mark && v.slots[maphash.String(v.seed, agentID)%invalidationSlots].Load() <= mark
}

// raise sets x to n unless it is already larger: concurrent invalidations
// may finish out of order, and a slot must never move back below a number
// that was already recorded in it.
func raise(x *atomic.Uint64, n uint64) {
	for {
		old := x.Load()
		if old >= n || x.CompareAndSwap(old, n) {
			return
		}
	}
}
