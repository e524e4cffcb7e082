package service

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/internal/tlog"
	"github.com/swarmscore/swarmscore/passport"
)

// BenchmarkLogMillion times the transparency log at 1,000,000 leaves on
// both back ends (SWARMSCORE_BIG_BENCH=1; run with -benchtime 1x): the
// first checkpoint note (integrating every subtree hash, as after a
// backfill), a note after 1000 more leaves (what a schedule pays), a
// consistency proof between 500,000 and the end, and a tile. The leaves
// are loaded by one SQL statement, outside the timings.
func BenchmarkLogMillion(b *testing.B) {
	if os.Getenv("SWARMSCORE_BIG_BENCH") == "" {
		b.Skip("set SWARMSCORE_BIG_BENCH=1")
	}
	const n = 1_000_000
	ctx := context.Background()
	seed := sha256.Sum256([]byte("log bench key"))
	key, _ := passport.NewEd25519Key(ed25519.NewKeyFromSeed(seed[:]))
	key, _ = key.WithID("bench-key")
	for _, backend := range []string{"sqlite", "postgres"} {
		var st Backend
		var fill func(from, to int)
		if backend == "sqlite" {
			path := filepath.Join(b.TempDir(), "log.db")
			s, err := sqlite.Open(ctx, "sqlite:"+path)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			raw, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			st, fill = s, func(from, to int) {
				if _, err := raw.Exec(`WITH RECURSIVE c(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)
					INSERT INTO log_leaves (idx, hash, seq) SELECT i, randomblob(32), 1 + i % 100 FROM c`, from, to); err != nil {
					b.Fatal(err)
				}
			}
		} else {
			dsn := pgtest.NewDatabase(b)
			s, err := postgres.Open(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			raw, err := sql.Open("pgx", dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			st, fill = s, func(from, to int) {
				if _, err := raw.Exec(`INSERT INTO log_leaves (idx, hash, seq)
					SELECT g, sha256(g::text::bytea), 1 + g % 100 FROM generate_series($1::bigint, $2::bigint - 1) g`, from, to); err != nil {
					b.Fatal(err)
				}
				if _, err := raw.Exec(`UPDATE log_state SET size = $1`, to); err != nil {
					b.Fatal(err)
				}
			}
		}
		u := New(st, Config{Key: key, LogOrigin: "bench.example/swarmscore"})
		fill(0, n)
		timed := func(name string, f func()) {
			b.Run(backend+"/"+name, func(b *testing.B) {
				for range b.N {
					f()
				}
			})
		}
		timed("first-note", func() {
			if _, _, err := u.Log.Checkpoint(ctx); err != nil {
				b.Fatal(err)
			}
		})
		size := n
		timed("note-after-1000", func() {
			fill(size, size+1000)
			size += 1000
			start := time.Now()
			if _, _, err := u.Log.Checkpoint(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(time.Since(start).Microseconds()), "µs-note")
		})
		timed("consistency-proof", func() {
			p, err := u.Log.ConsistencyProof(ctx, n/2, int64(size))
			if err != nil || len(p) == 0 {
				b.Fatal(err)
			}
		})
		timed("tile", func() {
			if _, _, err := u.Log.Tile(ctx, "tile/0/x001/234"); err != nil {
				b.Fatal(err)
			}
		})
		_ = tlog.TileWidth
	}
}
