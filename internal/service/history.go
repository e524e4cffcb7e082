package service

import (
	"sync"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// historyMemoSize bounds the agents whose past days a process remembers:
// about 3 KB each, so at most ≈ 3 MB.
const historyMemoSize = 1024

// historyMemo remembers, per agent, the counts as of the end of each past
// day of its history, valid for one chain head: any accepted report moves
// the head, and nothing else changes what a past day counts. A day's
// counts are kept by day number, so the days still in the history survive
// midnight. The zero value is ready to use and safe for concurrent use.
type historyMemo struct {
	mu sync.Mutex
	m  map[string]*pastDays
}

// pastDays holds counts[i] for day newest−i (days since the Unix epoch)
// when known[i].
type pastDays struct {
	head   ledger.Hash
	newest int64
	counts [HistoryDays - 1]score.Counts
	known  [HistoryDays - 1]bool
	// days are the past days as a history lists them (oldest first), all
	// of them known: what a profile asked for again on the same day
	// copies.
	days []DayScore
}

// past returns the agent's past days at head, as a history lists them,
// when all of newest's are remembered. The slice is shared: copy it.
func (h *historyMemo) past(agentID string, head ledger.Hash, newest int64) ([]DayScore, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.m[agentID]
	if p == nil || p.head != head || p.newest != newest || p.days == nil {
		return nil, false
	}
	return p.days, true
}

// load copies into dst, aligned so that dst[i] is day newest−i, the
// remembered counts of the agent at head, and says which it had.
func (h *historyMemo) load(agentID string, head ledger.Hash, newest int64, dst *[HistoryDays - 1]score.Counts) (known [HistoryDays - 1]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.m[agentID]
	if p == nil || p.head != head {
		return known
	}
	shift := newest - p.newest // days since p was stored
	if shift < 0 || shift >= HistoryDays-1 {
		return known
	}
	for i := int(shift); i < HistoryDays-1; i++ {
		if p.known[i-int(shift)] {
			dst[i], known[i] = p.counts[i-int(shift)], true
		}
	}
	return known
}

// store remembers a complete set of past days, their counts and as a
// history lists them. When the memo is full an arbitrary agent (Go's map
// order) is forgotten: it costs that agent one recount, and needs no
// bookkeeping on the read path.
func (h *historyMemo) store(agentID string, head ledger.Hash, newest int64, counts *[HistoryDays - 1]score.Counts, days []DayScore) {
	p := &pastDays{head: head, newest: newest, counts: *counts, days: days}
	for i := range p.known {
		p.known[i] = true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]*pastDays)
	}
	if _, ok := h.m[agentID]; !ok && len(h.m) >= historyMemoSize {
		for k := range h.m {
			delete(h.m, k)
			break
		}
	}
	h.m[agentID] = p
}

// forget drops the agent's past days (an erasure: nothing of the erased id
// may stay in memory).
func (h *historyMemo) forget(agentID string) {
	h.mu.Lock()
	delete(h.m, agentID)
	h.mu.Unlock()
}
