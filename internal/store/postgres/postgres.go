// Package postgres is the PostgreSQL back end (pgx/v5 pool) of the storage
// ports internal/service declares: the production and multi-replica store: several processes may share one
// database, and every guarantee of those ports holds across them.
//
// Per-agent hash-chain appends are serialised by locking the agents rows of
// a batch FOR UPDATE, in id order, before head_seq is read; cache
// invalidation happens in the ingest transaction; RecomputeAll is one
// INSERT … SELECT … GROUP BY … ON CONFLICT DO UPDATE statement that takes
// no lock Ingest waits for, because cache entries are versioned by the
// agent's terminal_seq. See internal/store/store.go for the model this
// package mirrors.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/store"
)

// Schemes are the DSN schemes this back end serves, for store.Backends.
var Schemes = []string{"postgres", "postgresql"}

// Store is the PostgreSQL back end. It is safe for concurrent use by
// goroutines and by several processes sharing the database.
type Store struct {
	pool  *pgxpool.Pool
	watch watchState // CacheWatch (watch.go)
	log   *slog.Logger
	// replica and gate are set by AttachReplica (replica.go).
	replica *replica
	gate    *readGate
}

// SetLogger sends what the store has to say about its connections (the
// cache listener losing and regaining its connection, once each) to l.
// Call it before the first CacheWatch; without it nothing is logged.
func (s *Store) SetLogger(l *slog.Logger) { s.log = l }

// DefaultConnectTimeout bounds a connection attempt when the DSN sets no
// connect_timeout.
const DefaultConnectTimeout = 5 * time.Second

// Open connects to the database named by dsn (a postgres:// or
// postgresql:// URL, or a keyword/value string; pgxpool's pool_* parameters
// are honoured) and checks that it answers. It does not migrate. A malformed
// DSN is errkind.ErrInvalid; an unreachable server errkind.ErrUnavailable.
// Errors never contain the password.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx quotes the DSN with only some of its secrets hidden.
		return nil, fmt.Errorf("%w: database: %s", errkind.ErrInvalid, Scrub(err.Error(), dsn))
	}
	rp := cfg.ConnConfig.RuntimeParams
	if _, ok := rp["application_name"]; !ok {
		rp["application_name"] = "swarmscore"
	}
	// Times are compared and stored as instants; a UTC session zone only
	// keeps anything printed by the server (logs, psql) in UTC too.
	rp["timezone"] = "UTC"
	// The pool dials new connections in the background, where no request's
	// deadline reaches: without a bound, a partition holds them until it
	// heals.
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	if !strings.Contains(dsn, "pool_max_conn_idle_time") {
		cfg.MaxConnIdleTime = 5 * time.Minute
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open %s: %w", Redact(dsn), scrubbed(classify(err), dsn))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect to %s: %w", Redact(dsn), scrubbed(classify(err), dsn))
	}
	return &Store{pool: pool}, nil
}

// Pool exposes the connection pool, for benchmarks and operational tools
// that need raw access (COPY, sizes).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Migrate applies every pending migration and returns their names; see
// service.Database.
func (s *Store) Migrate(ctx context.Context) ([]string, error) {
	applied, err := migrate(ctx, s.pool)
	if err != nil {
		return nil, classify(err)
	}
	// A migration that moved rows (00020's partitions) leaves tables no
	// statistics, and nothing else may ever gather them (autovacuum off,
	// and autovacuum never analyses a partitioned table's parent).
	if len(applied) > 0 {
		if err := s.Analyze(ctx); err != nil {
			return applied, fmt.Errorf("postgres: migrations applied, but analysing the tables failed: %w", err)
		}
	}
	return applied, nil
}

// analyzed are the tables whose statistics the reads over the whole ledger
// (recompute, signals, pages) plan with. ANALYZE of a partitioned table
// covers its partitions too.
const analyzed = "agents, conduit_sessions, ap2_transactions, task_offers, ledger_records, swarmscore_cache"

// Analyze brings the planner's statistics of the ledger's tables up to
// date (ANALYZE samples a bounded number of rows per table: seconds at
// most). Ingest does not need it (see keyPlans); the service calls it
// after a bulk load. Errors: ErrUnavailable, or an internal error.
func (s *Store) Analyze(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, "ANALYZE "+analyzed); err != nil {
		return fmt.Errorf("postgres: analyze: %w", classify(err))
	}
	return nil
}

// Ready reports whether the database answers and is fully migrated.
func (s *Store) Ready(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: database unreachable: %w", classify(err))
	}
	ok, err := migrationsCurrent(ctx, s.pool)
	if err != nil {
		return classify(err)
	}
	if !ok {
		return fmt.Errorf("%w: postgres: migrations pending (run `swarmscore migrate`)", errkind.ErrUnavailable)
	}
	return nil
}

// Close releases the pool; later calls fail.
func (s *Store) Close() error {
	s.watch.close()
	if s.replica != nil {
		s.replica.pool.Close()
	}
	s.pool.Close()
	return nil
}

// classify maps an error from pgx to the store's error kinds: context ends
// are returned as they are, connection failures wrap errkind.ErrUnavailable,
// and anything else (a bug or a constraint the store should have checked
// first) is returned unchanged, i.e. errkind.Unknown.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errkind.Of(err) != errkind.Unknown {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if unavailableCode(pgErr.Code) {
			return fmt.Errorf("%w: %w", errkind.ErrUnavailable, err)
		}
		return err
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || pgconn.SafeToRetry(err) {
		return fmt.Errorf("%w: %w", errkind.ErrUnavailable, err)
	}
	return err
}

// unavailableCode reports whether a SQLSTATE says the database cannot be
// reached or used right now, as opposed to a bug: a lost connection, a
// refused login, a database that does not exist or does not accept
// connections, a server shutting down or out of resources, a statement
// cancelled by its timeout, or a read-only standby.
func unavailableCode(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"), // connection exception
		strings.HasPrefix(code, "28"),  // invalid authorization: wrong password, no such role
		strings.HasPrefix(code, "53"),  // insufficient resources: disk full, too many connections
		strings.HasPrefix(code, "57P"): // admin shutdown, crash shutdown, cannot connect now
		return true
	}
	switch code {
	case "3D000", // database does not exist
		"55000", // database is not accepting connections (ALLOW_CONNECTIONS false)
		"57014", // statement cancelled by statement_timeout
		"25006": // read-only transaction: a standby
		return true
	}
	return false
}

// retryable reports whether a transaction failed only because of a
// concurrent one and may simply be run again: a serialization failure, a
// deadlock, or a unique violation on an event id that another agent's batch
// inserted between our read and our write.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "40001", "40P01":
		return true
	case "23505":
		return partitionedTable(pgErr.TableName, "conduit_sessions") || partitionedTable(pgErr.TableName, "ap2_transactions") ||
			partitionedTable(pgErr.TableName, "task_offers") || pgErr.TableName == "agents" || pgErr.TableName == "operators"
	}
	return false
}

// maxAttempts bounds how often a transaction is retried after a retryable
// conflict with a concurrent one.
const maxAttempts = 8

// inTx runs fn in a transaction, committing if it returns nil, and runs it
// again (from scratch) when the transaction lost a race with a concurrent
// one.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = pgx.BeginFunc(ctx, s.pool, fn)
		if err == nil || !retryable(err) || attempt == maxAttempts || ctx.Err() != nil {
			break
		}
		// Back off a little so the winner can finish.
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt) * time.Millisecond):
		}
	}
	return classify(err)
}

// utc returns t in UTC; pgx decodes TIMESTAMPTZ in the local zone.
func utc(t time.Time) time.Time { return t.UTC() }

// timeOrZero is *t in UTC, or the zero time for SQL NULL (nil).
func timeOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// dialect is how PostgreSQL writes the SQL both back ends generate.
var dialect = store.Dialect{
	Param:    store.DollarParam,
	Contains: func(s, sub string) string { return "strpos(" + s + ", " + sub + ") > 0" },
	Text:     func(c string) string { return c + "::text" },
	Bytewise: func(e string) string { return e + ` COLLATE "C"` },
}

// storeTx is a transaction as store.Tx.
type storeTx struct {
	ctx context.Context
	tx  pgx.Tx
}

func txOf(ctx context.Context, tx pgx.Tx) store.Tx { return storeTx{ctx, tx} }

func (t storeTx) Query(q string, args ...any) (store.Rows, error) {
	return t.tx.Query(t.ctx, q, args...)
}

func (t storeTx) Exec(q string, args ...any) error {
	_, err := t.tx.Exec(t.ctx, q, args...)
	return err
}
