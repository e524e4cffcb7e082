package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestNewDatabaseIsFreshAndDropped(t *testing.T) {
	var dsn string
	t.Run("create", func(t *testing.T) {
		dsn = NewDatabase(t)
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Fatalf("connect to new database: %v", err)
		}
		defer conn.Close(context.Background())
		var n int
		if err := conn.QueryRow(context.Background(),
			"SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("new database has %d tables, want 0", n)
		}
	})
	if dsn == "" {
		return // skipped: server unreachable outside CI
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), AdminDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(context.Background(),
		"SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", cfg.Database).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatalf("database %s still exists after its test ended", cfg.Database)
	}
}

func TestDSNFor(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "postgres://postgres@127.0.0.1:5432/x?sslmode=disable"},
		{"postgresql://u:p@h/db", "postgresql://u:p@h/x"},
		{"host=h user=u dbname=postgres", "host=h user=u dbname=postgres dbname=x"},
	} {
		if got := dsnFor(tc.in, "x"); got != tc.want {
			t.Errorf("dsnFor(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedact(t *testing.T) {
	if got := redact("postgres://u:secret@h/db"); got != "postgres://u:xxxxx@h/db" {
		t.Errorf("redact URL = %q", got)
	}
	if got := redact("host=h password=secret"); got == "host=h password=secret" {
		t.Errorf("redact keyword/value leaked the password: %q", got)
	}
}

func TestKeywordDSNOverride(t *testing.T) {
	cfg, err := pgx.ParseConfig(dsnFor("host=127.0.0.1 user=postgres dbname=postgres", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Database != "x" {
		t.Fatalf("database = %q, want x: a later dbname must override", cfg.Database)
	}
}

func TestAdmin(t *testing.T) {
	ctx := context.Background()
	dsn := NewDatabase(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "pgtest-admin"
	connect := func() (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, cfg) }
	conn, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	admin := NewAdmin(t, dsn)
	if n := admin.Sessions("pgtest-admin"); n != 1 {
		t.Fatalf("%d sessions, want 1", n)
	}
	admin.AllowConnections(false)
	t.Cleanup(func() { admin.AllowConnections(true) })
	if c, err := connect(); err == nil {
		c.Close(ctx)
		t.Fatal("a database refusing connections accepted one")
	}
	admin.Terminate("pgtest-admin")
	if err := conn.Ping(ctx); err == nil {
		t.Fatal("a terminated session still answers")
	}
	admin.AllowConnections(true)
	c, err := connect()
	if err != nil {
		t.Fatalf("connections allowed again: %v", err)
	}
	c.Close(ctx)
}
