//go:build unix

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// The WAL index header (https://sqlite.org/walformat.html, "The WAL-Index
// Header"): two copies of a 48-byte header at the start of the -shm file.
// A writer commits by rewriting the second copy, then the first; readers
// take the first, check it against the second, and use the frame count and
// checksums in it to know which commits they see. Every commit therefore
// changes these 96 bytes before it returns, and nothing a reader sees
// changes while they stay the same.
const (
	walHeaderWords = 2 * 48 / 4
	walIndexFormat = 3007000 // iVersion, the first word of each copy
)

// shmWatch is the SQLite ledger.CacheWatch: its mark is the version of the
// WAL index header it last saw, so Unchanged is true exactly while the
// header reads the same as when the mark was taken. It ignores agents: any
// commit to the file changes every mark, which costs each remembered
// certificate one stamp read after a write, a cost paid only after writes.
type shmWatch struct {
	// db holds a connection to the database open for the watch's lifetime:
	// SQLite deletes (and a later opener recreates) the -shm file only
	// when the last connection to the database, in any process, closes, so
	// while this one is open the mapping below is the file writers update.
	db   *sql.DB
	conn *sql.Conn
	mem  []byte // the first bytes of the -shm file, mapped read-only

	mu   sync.Mutex // serialises installing a new snapshot
	snap atomic.Pointer[shmSnapshot]
	dead atomic.Bool // the mapping faulted or the watch closed
}

// shmSnapshot is a header as read, numbered: marks are these numbers.
type shmSnapshot struct {
	header  [walHeaderWords]uint32
	version uint64
}

// openShmWatch maps the WAL index of the database at path, after checking
// through its own connection that the database is in WAL mode.
func openShmWatch(path string) (*shmWatch, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		return nil, fmt.Errorf("sqlite: watch %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	w := &shmWatch{db: db}
	if err := w.open(ctx, path); err != nil {
		w.close()
		return nil, fmt.Errorf("sqlite: watch %s: %w", path, err)
	}
	return w, nil
}

func (w *shmWatch) open(ctx context.Context, path string) error {
	conn, err := w.db.Conn(ctx)
	if err != nil {
		return err
	}
	w.conn = conn
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode %q, not wal", mode)
	}
	// A read transaction opens the WAL index (and creates the -shm file if
	// this is the first connection).
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
		return err
	}
	f, err := os.Open(path + "-shm")
	if err != nil {
		return err
	}
	defer f.Close() // the mapping outlives the descriptor
	if fi, err := f.Stat(); err != nil {
		return err
	} else if fi.Size() < walHeaderWords*4 {
		return fmt.Errorf("WAL index of %d bytes", fi.Size())
	}
	w.mem, err = syscall.Mmap(int(f.Fd()), 0, walHeaderWords*4, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map the WAL index: %w", err)
	}
	var h [walHeaderWords]uint32
	if !w.read(&h) || h[0] != walIndexFormat || h[walHeaderWords/2] != walIndexFormat {
		return errors.New("WAL index header in an unknown format")
	}
	w.snap.Store(&shmSnapshot{header: h, version: 1})
	return nil
}

// read copies the header with word-sized atomic loads (another process
// writes it concurrently). A fault (the file truncated under the mapping,
// which no SQLite process does while a connection is open) kills the watch
// instead of the process.
func (w *shmWatch) read(h *[walHeaderWords]uint32) (ok bool) {
	defer func() {
		if recover() != nil {
			w.dead.Store(true)
			ok = false
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	p := unsafe.Pointer(unsafe.SliceData(w.mem))
	for i := range h {
		h[i] = atomic.LoadUint32((*uint32)(unsafe.Add(p, 4*i)))
	}
	return true
}

// Mark implements ledger.CacheWatch. It is false while a writer is between
// its two header copies.
func (w *shmWatch) Mark() (uint64, bool) {
	if w.dead.Load() {
		return 0, false
	}
	var h [walHeaderWords]uint32
	if !w.read(&h) || [walHeaderWords / 2]uint32(h[:walHeaderWords/2]) != [walHeaderWords / 2]uint32(h[walHeaderWords/2:]) {
		return 0, false
	}
	s := w.snap.Load()
	if s.header == h {
		return s.version, true
	}
	// A header not seen before gets a new number, even if an older one
	// comes back (a reader that read before a commit installs after it):
	// that only makes more marks stale, never an old mark current.
	w.mu.Lock()
	defer w.mu.Unlock()
	if s = w.snap.Load(); s.header != h {
		s = &shmSnapshot{header: h, version: s.version + 1}
		w.snap.Store(s)
	}
	return s.version, true
}

// Unchanged implements ledger.CacheWatch: true while the header is the one
// mark was taken at, whatever the agent.
func (w *shmWatch) Unchanged(_ string, mark uint64) bool {
	v, ok := w.Mark()
	return ok && v == mark
}

// Wrote implements ledger.CacheWatch. This process's commits rewrite the
// header before they return, like anyone's, so a commit needs no report;
// Wrote still numbers the header anew, so that its promise holds whatever
// the caller wrote.
func (w *shmWatch) Wrote([]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.snap.Load()
	w.snap.Store(&shmSnapshot{header: s.header, version: s.version + 1})
}

func (w *shmWatch) close() error {
	w.dead.Store(true)
	var errs []error
	if w.mem != nil {
		errs = append(errs, syscall.Munmap(w.mem))
		w.mem = nil
	}
	if w.conn != nil {
		errs = append(errs, w.conn.Close())
	}
	errs = append(errs, w.db.Close())
	return errors.Join(errs...)
}
