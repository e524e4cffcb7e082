package service

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// pageMemo remembers what an agent's public page reads besides its
// certificate, consent, history and window counts (which have memos of
// their own): the agent's ledger row (PublicProfile) and its open appeals
// (ProfileWindow), so that a page served again makes no query. Both are
// trusted as the certificate memo's entries are: while the store's cache
// watch vouches that nothing was committed for the agent since the mark
// taken before they were read, and for at most maxTrust.
//
// What the watch reports is every commit that may change the agent's cache
// stamp (a terminal report, a correction, a passport), its consent, and
// (PostgreSQL: CreateAppeal and SaveAppeal notify the agent; SQLite: every
// commit) its appeals. A report that moves the agent's chain head without a
// terminal status (PENDING, RUNNING, a task offer) is not reported on
// PostgreSQL, so the remembered row may name the previous head for up to
// maxTrust; the page uses the head only to key the history and window
// counts, which such a report does not change.
type pageMemo struct {
	agents  watchedMemo[ledger.AgentInfo]
	appeals watchedMemo[[]OpenAppeal]
}

// forget drops what the memo holds of the agent (an erasure).
func (m *pageMemo) forget(agentID string) {
	m.agents.forget(agentID)
	m.appeals.forget(agentID)
}

// watchedMemo remembers one value per agent with the watch's mark taken
// before it was read. The zero value is ready and safe for concurrent use;
// values are never modified once remembered.
type watchedMemo[T any] struct {
	mu sync.RWMutex
	m  map[string]watched[T]
}

type watched[T any] struct {
	v       T
	mark    uint64
	checked time.Time // with a monotonic reading
}

// serve returns the agent's value while w vouches for it.
func (m *watchedMemo[T]) serve(w ledger.CacheWatch, agentID string) (T, bool) {
	var zero T
	if w == nil {
		return zero, false
	}
	m.mu.RLock()
	e, ok := m.m[agentID]
	m.mu.RUnlock()
	if !ok || time.Since(e.checked) >= maxTrust || !w.Unchanged(agentID, e.mark) {
		return zero, false
	}
	return e.v, true
}

// put remembers v, read after ck was taken; nothing when the watch could
// not vouch for ck. When full, an arbitrary agent is forgotten.
func (m *watchedMemo[T]) put(agentID string, v T, ck check) {
	if !ck.trusted {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = make(map[string]watched[T])
	}
	if _, ok := m.m[agentID]; !ok && len(m.m) >= certMemoSize {
		for k := range m.m {
			delete(m.m, k)
			break
		}
	}
	m.m[agentID] = watched[T]{v: v, mark: ck.mark, checked: ck.at}
}

func (m *watchedMemo[T]) forget(agentID string) {
	m.mu.Lock()
	delete(m.m, agentID)
	m.mu.Unlock()
}

// agent is store.Agent through the page memo.
func (u *Certificates) agent(ctx context.Context, agentID string) (ledger.AgentInfo, error) {
	w := u.certs.cacheWatch()
	if info, ok := u.pages.agents.serve(w, agentID); ok {
		return info, nil
	}
	ck := u.certs.begin(w)
	info, err := u.store.Agent(ctx, agentID)
	if err != nil {
		return info, err
	}
	u.pages.agents.put(agentID, info, ck)
	return info, nil
}

// openAppeals is the agent's appeals not decided, or escalated, oldest
// first, through the page memo. The returned slice is shared and must not
// be modified.
func (u *Certificates) openAppeals(ctx context.Context, agentID string) ([]OpenAppeal, error) {
	w := u.certs.cacheWatch()
	if open, ok := u.pages.appeals.serve(w, agentID); ok {
		return open, nil
	}
	ck := u.certs.begin(w)
	appeals, err := u.store.AppealSummaries(ctx)
	if err != nil {
		return nil, fmt.Errorf("agent %q's appeals: %w", agentID, err)
	}
	var open []OpenAppeal
	for _, a := range appeals {
		if a.AgentID != agentID {
			continue
		}
		switch a.State {
		case appeal.Submitted, appeal.Acknowledged, appeal.Escalated:
			open = append(open, OpenAppeal{ID: a.ID, State: a.State, FiledAt: a.FiledAt})
		}
	}
	u.pages.appeals.put(agentID, open, ck)
	return open, nil
}
