package store_test

import (
	"database/sql"
	"fmt"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/swarmscore/swarmscore/internal/store"
	"github.com/swarmscore/swarmscore/score"
)

// TestScoreSQL evaluates the SQL formula for every count pair up to past
// both volume targets and compares it with score.Compute.
func TestScoreSQL(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conduit, ap2, total, tier, mod := store.ScoreSQL("ct", "cs", "at", "asx")
	// Every conduit pair up to 120 sessions, crossed with AP2 pairs around
	// the tier and volume thresholds.
	q := fmt.Sprintf(`WITH RECURSIVE n(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM n WHERE v < 120),
	  c AS (SELECT a.v AS ct, b.v AS cs FROM n a, n b WHERE b.v <= a.v),
	  t(at) AS (VALUES (0), (1), (24), (25), (26), (49), (50), (51), (77)),
	  d(k) AS (VALUES (0), (1), (3), (9)),
	  a AS (SELECT DISTINCT at, MAX(at - k, 0) AS asx FROM t, d)
	  SELECT ct, cs, at, asx, %s, %s, %s, %s, %s FROM c, a`, conduit, ap2, total, store.TierNameSQL(tier), mod)
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	tiers := map[string]int{}
	for rows.Next() {
		var c score.Counts
		var cc, ac, s, m int
		var tr string
		if err := rows.Scan(&c.ConduitTotal, &c.ConduitSuccess, &c.AP2Total, &c.AP2Success, &cc, &ac, &s, &tr, &m); err != nil {
			t.Fatal(err)
		}
		r, err := score.Compute(c)
		if err != nil {
			t.Fatal(err)
		}
		if cc != r.ConduitContribution || ac != r.AP2Contribution || s != r.Score || tr != r.Tier.String() || m != int(r.Escrow) {
			t.Fatalf("%+v: SQL %d %d %d %s %d, Go %+v", c, cc, ac, s, tr, m, r)
		}
		n++
		tiers[tr]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 100000 || len(tiers) != 3 {
		t.Fatalf("only %d combinations checked, tiers %v", n, tiers)
	}
}
