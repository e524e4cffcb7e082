package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// prepared runs the store's fixed hot-path read queries (cache lookups,
// window counts, token checks) as prepared statements on the read pool. The
// SQLite driver otherwise parses and plans the SQL again on every call,
// which profiling showed to be most of the cost of serving a cached
// certificate. Only constant query strings may be passed: statements are
// kept for the life of the store.
type prepared struct {
	db    *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

func newPrepared(db *sql.DB) *prepared {
	return &prepared{db: db, stmts: make(map[string]*sql.Stmt)}
}

// stmt returns the prepared statement for query, preparing it on first use.
// A query that cannot be prepared yet (its tables do not exist before the
// first migration) is not cached, and the caller falls back to a plain
// query, which reports the real error.
func (p *prepared) stmt(ctx context.Context, query string) *sql.Stmt {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st, ok := p.stmts[query]; ok {
		return st
	}
	st, err := p.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	p.stmts[query] = st
	return st
}

// QueryRowContext implements queryer.
func (p *prepared) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := p.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.db.QueryRowContext(ctx, query, args...)
}

// Close closes every prepared statement.
func (p *prepared) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for q, st := range p.stmts {
		errs = append(errs, st.Close())
		delete(p.stmts, q)
	}
	return errors.Join(errs...)
}
