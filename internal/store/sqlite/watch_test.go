package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/internal/store/storetest"
)

func TestCacheWatch(t *testing.T) {
	open := func(t *testing.T, path string) *sqlite.Store {
		s, err := sqlite.Open(t.Context(), "sqlite:"+path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		return s
	}
	storetest.RunWatch(t, storetest.WatchHarness{
		Open: func(t *testing.T) service.Backend {
			s := open(t, filepath.Join(t.TempDir(), "watch.db"))
			t.Cleanup(func() { s.Close() })
			return s
		},
		Reopen: func(t *testing.T, s service.Backend) service.Backend { return open(t, s.(*sqlite.Store).File()) },
	})
}

// TestCacheWatchForeignWriter writes with a plain connection that knows
// nothing of the store (another program on the same file): the watch sees
// the commit before the write returns.
func TestCacheWatchForeignWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "foreign.db")
	s, err := sqlite.Open(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	w := s.CacheWatch()
	if w == nil {
		t.Fatal("no watch")
	}
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 50 {
		m, ok := w.Mark()
		if !ok {
			t.Fatal("no mark")
		}
		if !w.Unchanged("x", m) {
			t.Fatalf("write %d: changed before the write", i)
		}
		if _, err := db.ExecContext(context.Background(), `INSERT INTO operators (id, created_at) VALUES (?, 0)`, "op-"+string(rune('a'+i%26))+string(rune('a'+i/26))); err != nil {
			t.Fatal(err)
		}
		if w.Unchanged("x", m) {
			t.Fatalf("write %d: unchanged after a foreign commit", i)
		}
	}
}

// BenchmarkCacheWatch compares what a cached certificate request may pay to
// learn that nothing changed: the watch (the WAL index header), SQLite's
// own change counter (PRAGMA data_version, a read transaction), and the
// stamp read it replaces.
func BenchmarkCacheWatch(b *testing.B) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Ingest(ctx, ledger.Batch{Operator: "op", Events: benchEvents("w", 10, 1)}); err != nil {
		b.Fatal(err)
	}
	b.Run("watch", func(b *testing.B) {
		w := s.CacheWatch()
		m, _ := w.Mark()
		for b.Loop() {
			if !w.Unchanged("agent-000000", m) {
				b.Fatal("changed")
			}
		}
	})
	b.Run("data_version", func(b *testing.B) {
		db, err := sql.Open("sqlite", s.File())
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		conn, err := db.Conn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		st, err := conn.PrepareContext(ctx, "PRAGMA data_version")
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		var v int64
		for b.Loop() {
			if err := st.QueryRowContext(ctx).Scan(&v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stamp", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.CacheStamp(ctx, "agent-000000"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
