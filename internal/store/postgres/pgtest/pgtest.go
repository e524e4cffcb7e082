// Package pgtest gives each test its own throw-away PostgreSQL database, so
// tests that need PostgreSQL can run in parallel (and alongside other
// engineers' runs on the same server) without seeing each other's rows.
//
// The server is found through SWARMSCORE_TEST_POSTGRES (a DSN of a database
// the test user may run CREATE DATABASE from), defaulting to the local
// trust-auth cluster. When the server cannot be reached the test fails under
// CI=true (so a broken CI database never turns into a green run) and is
// skipped with the reason otherwise.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the environment variable that overrides DefaultDSN.
const EnvDSN = "SWARMSCORE_TEST_POSTGRES"

// DefaultDSN is the administrative database used to create test databases
// when EnvDSN is unset.
const DefaultDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// NamePrefix starts the name of every database this package creates, so
// leftovers of killed runs are easy to find and drop by hand.
const NamePrefix = "swarmscore_test_"

// AdminDSN is the DSN test databases are created from.
func AdminDSN() string {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		return dsn
	}
	return DefaultDSN
}

// NewDatabase creates an empty database, drops it (terminating leftover
// connections) when the test ends, and returns its DSN. It fails the test
// under CI=true and skips it otherwise when the server is unreachable; any
// other failure fails the test.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	dsn, drop, err := Create(context.Background())
	var unreachable *UnreachableError
	if errors.As(err, &unreachable) {
		Unreachable(tb, unreachable.Err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := drop(); err != nil {
			tb.Error(err)
		}
	})
	return dsn
}

// UnreachableError is Create's error when the server cannot be reached.
type UnreachableError struct{ Err error }

func (e *UnreachableError) Error() string { return "pgtest: server unreachable: " + e.Err.Error() }
func (e *UnreachableError) Unwrap() error { return e.Err }

// Create makes an empty database and returns its DSN and a function that
// drops it, for databases that outlive one test (a benchmark fixture shared
// by several runs). Prefer NewDatabase. An unreachable server is an
// *UnreachableError.
func Create(ctx context.Context) (dsn string, drop func() error, err error) {
	return create(ctx, "template0")
}

// CopyDatabase makes a new database as a copy of the one dsn names (CREATE
// DATABASE … TEMPLATE: a file copy, far faster than loading it again),
// dropped when the test ends; nothing may be connected to the original
// while it is copied. Failures fail the test.
func CopyDatabase(tb testing.TB, dsn string) string {
	tb.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	copied, drop, err := create(context.Background(), cfg.Database)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := drop(); err != nil {
			tb.Error(err)
		}
	})
	return copied
}

// create makes a database from template and returns its DSN and a
// function that drops it.
func create(ctx context.Context, template string) (dsn string, drop func() error, err error) {
	admin := AdminDSN()
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		return "", nil, fmt.Errorf("pgtest: %s is not a valid DSN: %w", EnvDSN, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return "", nil, &UnreachableError{err}
	}
	// A copy of a large database takes a while.
	ctx, cancelCopy := context.WithTimeout(ctx, 10*time.Minute)
	defer cancelCopy()
	defer conn.Close(context.Background())

	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, fmt.Errorf("pgtest: random name: %w", err)
	}
	name := NamePrefix + hex.EncodeToString(b[:])
	// TEMPLATE template0 with UTF8 keeps the test database independent of
	// whatever was installed into template1.
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+pgx.Identifier{template}.Sanitize()+" ENCODING 'UTF8'"); err != nil {
		return "", nil, fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	drop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return fmt.Errorf("pgtest: drop database %s: %w", name, err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("pgtest: drop database %s: %w", name, err)
		}
		return nil
	}
	return dsnFor(admin, name), drop, nil
}

// Unreachable ends the test because the server could not be reached: Fatal
// under CI=true, Skip otherwise. It is exported for tests that reach the
// server by other means (e.g. a helper process).
func Unreachable(tb testing.TB, err error) {
	tb.Helper()
	msg := fmt.Sprintf("PostgreSQL unreachable at %s (set %s, or start it with `pg_ctlcluster --skip-systemctl-redirect 15 main start`): %v", redact(AdminDSN()), EnvDSN, err)
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// dsnFor returns dsn with its database replaced by name. Both DSN forms pgx
// accepts are handled: URLs, and keyword/value strings (where a later
// keyword overrides an earlier one).
func dsnFor(dsn, name string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path = "/" + name
		return u.String()
	}
	return strings.TrimSpace(dsn) + " dbname=" + name
}

// redact hides a URL DSN's password so it can appear in test output.
func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		return u.String()
	}
	if strings.Contains(dsn, "password") {
		return "(keyword/value DSN, password hidden)"
	}
	return dsn
}
