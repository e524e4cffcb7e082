package sqlite

import (
	"sync"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// watchState starts the store's CacheWatch once and stops it on Close.
type watchState struct {
	mu     sync.Mutex
	w      *shmWatch
	tried  bool
	closed bool
}

// CacheWatch implements service.CacheWatcher. The watch reads the database's
// WAL index (the -shm file SQLite keeps beside it in WAL mode), which every
// commit by any connection in any process rewrites before the commit
// returns: while the index's header is unchanged, nothing was committed to
// the file, so a stamp read earlier still holds. Commits are therefore seen
// synchronously; a change that is not a commit (a checkpoint restarting the
// WAL) only costs a stamp read. It is nil when the index cannot be watched
// (not in WAL mode, a platform without shared memory maps, the store
// closed): callers then read stamps.
func (s *Store) CacheWatch() ledger.CacheWatch {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	if !s.watch.tried && !s.watch.closed {
		s.watch.tried = true
		if w, err := openShmWatch(s.path); err == nil {
			s.watch.w = w
		}
	}
	if s.watch.w == nil || s.watch.closed {
		return nil
	}
	return s.watch.w
}

// close stops the watch: from now on it vouches for nothing.
func (ws *watchState) close() error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.closed = true
	if ws.w == nil {
		return nil
	}
	return ws.w.close()
}
