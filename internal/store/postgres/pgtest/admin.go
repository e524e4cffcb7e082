package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Admin acts on one test database from outside it, through a connection to
// the administrative database: it can refuse the database's new connections
// and end or count its sessions by application_name, so that tests can take
// a process's dedicated connections (a listener) away while its pool keeps
// working. Failures fail the test.
type Admin struct {
	tb   testing.TB
	conn *pgx.Conn
	db   string
}

// NewAdmin connects to AdminDSN for the database of dsn; the connection is
// closed when the test ends.
func NewAdmin(tb testing.TB, dsn string) *Admin {
	tb.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), AdminDSN())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close(context.Background()) })
	return &Admin{tb: tb, conn: conn, db: cfg.Database}
}

// AllowConnections lets the database accept new connections, or refuses
// them (established ones are kept).
func (a *Admin) AllowConnections(on bool) {
	a.tb.Helper()
	q := `ALTER DATABASE ` + pgx.Identifier{a.db}.Sanitize() + ` WITH ALLOW_CONNECTIONS false`
	if on {
		q = `ALTER DATABASE ` + pgx.Identifier{a.db}.Sanitize() + ` WITH ALLOW_CONNECTIONS true`
	}
	if _, err := a.conn.Exec(context.Background(), q); err != nil {
		a.tb.Fatal(err)
	}
}

// Sessions counts the database's sessions with this application_name.
func (a *Admin) Sessions(applicationName string) int {
	a.tb.Helper()
	var n int
	if err := a.conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2`,
		a.db, applicationName).Scan(&n); err != nil {
		a.tb.Fatal(err)
	}
	return n
}

// Terminate ends the database's sessions with this application_name.
func (a *Admin) Terminate(applicationName string) {
	a.tb.Helper()
	if _, err := a.conn.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2`,
		a.db, applicationName); err != nil {
		a.tb.Fatal(err)
	}
}
