// Package sqlite is the embedded back end on modernc.org/sqlite
// (pure Go): the default, a single file beside the working directory, so a
// fresh clone runs with nothing installed.
//
// One connection writes (SQLite allows one writer at a time; making it
// explicit turns lock contention into a queue instead of SQLITE_BUSY), every
// write transaction starts with BEGIN IMMEDIATE so it holds the write lock
// before it reads, and a pool of query-only connections reads concurrently
// under WAL. Commits are synchronous=FULL: an ingest that returned success
// survives a power cut.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DefaultPath is the database file used for the DSN "sqlite:".
const DefaultPath = "swarmscore.db"

// Store is the SQLite back end. Obtain one from Open.
type Store struct {
	path string
	w    *sql.DB          // exactly one connection; transactions are BEGIN IMMEDIATE
	r    *sql.DB          // query-only pool
	rp   *prepared        // hot-path reads on r, prepared once
	now  func() time.Time // created_at/updated_at bookkeeping only, never scoring

	watch watchState // CacheWatch (watch.go)
}

// Path parses a DSN of the form sqlite:PATH (or sqlite://PATH) and returns
// the file path; "sqlite:" alone is DefaultPath. Query parameters are not
// accepted: the pragmas are fixed. Errors match errkind.ErrInvalid.
func Path(dsn string) (string, error) {
	rest, ok := strings.CutPrefix(dsn, "sqlite:")
	if !ok {
		return "", fmt.Errorf("%w: database %q is not an sqlite: DSN", errkind.ErrInvalid, dsn)
	}
	rest = strings.TrimPrefix(rest, "//")
	switch {
	case rest == "":
		return DefaultPath, nil
	case strings.ContainsAny(rest, "?#"):
		return "", fmt.Errorf("%w: database %q: the path must not contain '?' or '#' (pragmas are fixed)", errkind.ErrInvalid, dsn)
	case rest == ":memory:" || strings.HasPrefix(rest, "file:"):
		return "", fmt.Errorf("%w: database %q: give a file path (in-memory databases cannot be shared by the reader pool)", errkind.ErrInvalid, dsn)
	}
	return rest, nil
}

// Open opens (creating if needed) the database file named by dsn. It does
// not migrate: call Migrate. Errors: ErrInvalid for a bad DSN,
// ErrUnavailable when the file cannot be opened.
func Open(ctx context.Context, dsn string) (*Store, error) {
	path, err := Path(dsn)
	if err != nil {
		return nil, err
	}
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	pragmas := "_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)&_pragma=journal_mode(WAL)&_pragma=cache_size(-65536)"
	name := path // modernc passes the part before '?' to sqlite3_open verbatim
	w, err := sql.Open("sqlite", name+"?"+pragmas+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %v", errkind.ErrUnavailable, path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("%w: open %s: %v", errkind.ErrUnavailable, path, err)
	}
	r, err := sql.Open("sqlite", name+"?"+pragmas+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("%w: open %s: %v", errkind.ErrUnavailable, path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	s := &Store{path: path, w: w, r: r, rp: newPrepared(r), now: time.Now}
	return s, nil
}

// createPrivate creates the database file, if it does not exist yet,
// readable and writable by its owner only: it holds token hashes and the
// ledger. SQLite gives the -wal and -shm files it creates beside it the
// same mode. An existing file keeps the mode its owner gave it.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil
	case err != nil:
		return fmt.Errorf("%w: create %s: %v", errkind.ErrUnavailable, path, unwrapPath(err))
	}
	return f.Close()
}

// unwrapPath drops the path and operation an *fs.PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// File is the database file's path.
func (s *Store) File() string { return s.path }

func (s *Store) migrator(db *sql.DB) (*goose.Provider, error) {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectSQLite3, db, sub, goose.WithDisableGlobalRegistry(true))
}

// Migrate applies pending migrations over a dedicated connection (goose
// mixes transactions and plain queries, which would deadlock on the single
// writer connection) and returns the file names of those it applied.
func (s *Store) Migrate(ctx context.Context) ([]string, error) {
	db, err := sql.Open("sqlite", s.path+"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, fmt.Errorf("%w: migrate %s: %v", errkind.ErrUnavailable, s.path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	p, err := s.migrator(db)
	if err != nil {
		return nil, fmt.Errorf("sqlite: prepare migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: sqlite: apply migrations to %s: %v", errkind.ErrUnavailable, s.path, err)
	}
	names := make([]string, 0, len(results))
	for _, r := range results {
		names = append(names, filepath.Base(r.Source.Path))
	}
	return names, nil
}

// Ready checks that the database answers and every migration is applied.
func (s *Store) Ready(ctx context.Context) error {
	if err := s.r.PingContext(ctx); err != nil {
		return fmt.Errorf("%w: sqlite %s: %v", errkind.ErrUnavailable, s.path, err)
	}
	p, err := s.migrator(s.r)
	if err != nil {
		return fmt.Errorf("sqlite: prepare migrations: %w", err)
	}
	current, target, err := p.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("%w: sqlite %s: migrations not applied (run swarmscore migrate): %v", errkind.ErrUnavailable, s.path, err)
	}
	if current != target {
		return fmt.Errorf("%w: sqlite %s: schema version %d, want %d (run swarmscore migrate)", errkind.ErrUnavailable, s.path, current, target)
	}
	return nil
}

// Close closes both pools.
func (s *Store) Close() error {
	return errors.Join(s.watch.close(), s.rp.Close(), s.w.Close(), s.r.Close())
}

// dbErr classifies a driver error: busy/locked/IO conditions are
// ErrUnavailable, context errors pass through, the rest stays internal.
func dbErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL,
			sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("%w: sqlite: %s: %v", errkind.ErrUnavailable, op, err)
		}
	}
	if errors.Is(err, sql.ErrConnDone) {
		return fmt.Errorf("%w: sqlite: %s: %v", errkind.ErrUnavailable, op, err)
	}
	return fmt.Errorf("sqlite: %s: %w", op, err)
}

// micros converts a time to the stored representation.
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros converts a stored time back to UTC.
func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func nullMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMicros(v.Int64)
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return micros(t)
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// dialect is how SQLite writes the SQL both back ends generate.
var dialect = store.Dialect{
	Param:    store.NumberedParam,
	Contains: func(s, sub string) string { return "instr(" + s + ", " + sub + ") > 0" },
	Text:     func(c string) string { return c },
	Bytewise: func(e string) string { return e },
}

// storeTx is a transaction as store.Tx.
type storeTx struct {
	ctx context.Context
	tx  *sql.Tx
}

func txOf(ctx context.Context, tx *sql.Tx) store.Tx { return storeTx{ctx, tx} }

func (t storeTx) Query(q string, args ...any) (store.Rows, error) {
	rows, err := t.tx.QueryContext(t.ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return storeRows{rows}, nil
}

func (t storeTx) Exec(q string, args ...any) error {
	_, err := t.tx.ExecContext(t.ctx, q, args...)
	return err
}

// storeRows is rows as store.Rows.
type storeRows struct{ *sql.Rows }

func (r storeRows) Close() { r.Rows.Close() }
