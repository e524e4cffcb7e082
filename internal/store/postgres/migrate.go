package postgres

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockID is the advisory lock goose holds while migrating, so that
// several replicas starting at once apply each migration exactly once. It is
// distinct from goose's default to avoid contending with another application
// that migrates the same database with goose.
const migrationLockID int64 = 0x5357_4152_4d53_4331 // "SWARMSC1"

// newMigrator returns a goose provider over the embedded PostgreSQL
// migrations, reaching the database through db. The provider's *sql.DB shares
// nothing with the pool but the server, and must be closed by the caller.
func newMigrator(pool *pgxpool.Pool) (*goose.Provider, *sql.DB, error) {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, nil, err
	}
	// Poll for the lock every second, for up to five minutes: a replica that
	// starts while another migrates waits for it instead of failing.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID), lock.WithLockTimeout(1, 300))
	if err != nil {
		return nil, nil, err
	}
	db := stdlib.OpenDBFromPool(pool)
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub,
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return p, db, nil
}

// migrate applies every pending migration and returns the names of those
// it applied. It is safe to run from several processes at once.
func migrate(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	p, db, err := newMigrator(pool)
	if err != nil {
		return nil, fmt.Errorf("postgres: prepare migrations: %w", err)
	}
	defer db.Close()
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: apply migrations: %w", err)
	}
	return appliedNames(results), nil
}

// appliedNames lists the file names of applied migrations.
func appliedNames(results []*goose.MigrationResult) []string {
	names := make([]string, 0, len(results))
	for _, r := range results {
		names = append(names, filepath.Base(r.Source.Path))
	}
	return names
}

// migrationsCurrent reports whether every embedded migration has been
// applied. A database never migrated reports false, not an error.
func migrationsCurrent(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('goose_db_version') IS NOT NULL").Scan(&exists); err != nil {
		return false, fmt.Errorf("postgres: migration status: %w", err)
	}
	if !exists {
		return false, nil
	}
	p, db, err := newMigrator(pool)
	if err != nil {
		return false, fmt.Errorf("postgres: migration status: %w", err)
	}
	defer db.Close()
	pending, err := p.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("postgres: migration status: %w", err)
	}
	return !pending, nil
}
