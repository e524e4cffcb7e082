package sqlite_test

import (
	"errors"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
)

// TestPreparedBeforeMigration: a read before the schema exists cannot be
// prepared; it must fail cleanly, and must not poison the statement cache
// for the same query once the schema is there.
func TestPreparedBeforeMigration(t *testing.T) {
	s, err := sqlite.Open(t.Context(), "sqlite:"+t.TempDir()+"/fresh.db")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.CachedScore(t.Context(), "agent-1", time.Now()); err == nil {
		t.Fatal("CachedScore before migration succeeded")
	}
	if _, err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second call runs the now-prepared statement
		if _, _, err := s.CachedScore(t.Context(), "agent-1", time.Now()); !errors.Is(err, errkind.ErrNotFound) {
			t.Fatalf("after migration: %v, want not found", err)
		}
	}
}
