package webtest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/score"
)

// TestSeed checks the ledger the pages' tests rely on: the scores and tiers
// its comment promises, the unlisted agent, and two rejections.
func TestSeed(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "seed.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)
	u := service.New(st, service.Config{Now: func() time.Time { return now }})
	if err := Seed(ctx, u, now); err != nil {
		t.Fatal(err)
	}
	newbie, err := score.Compute(score.Counts{ConduitTotal: 3, ConduitSuccess: 2, AP2Total: 1, AP2Success: 1})
	if err != nil {
		t.Fatal(err)
	}
	for agent, want := range map[string]struct {
		score int
		tier  score.Tier
	}{"agent-7": {760, score.TierStandard}, "elite-1": {983, score.TierElite}, "newbie": {newbie.Score, score.TierNone}, "shy-agent": {1000, score.TierElite}} {
		e, err := u.Certificates.Score(ctx, agent)
		if err != nil {
			t.Fatal(err)
		}
		if e.Result.Score != want.score || e.Result.Tier != want.tier {
			t.Errorf("%s: %d %s, want %d %s", agent, e.Result.Score, e.Result.Tier, want.score, want.tier)
		}
	}
	if c, err := st.Consent(ctx, "shy-agent"); err != nil || c.Visibility != ledger.VisibilityUnlisted {
		t.Errorf("shy-agent is not unlisted: %+v %v", c, err)
	}
	rep, err := u.Ingest.IngestEvents(ctx, Operator, strings.NewReader(Rejected(now)))
	if err != nil || len(rep.Rejected) != 2 || rep.Accepted != 0 {
		t.Errorf("Rejected: %+v %v", rep, err)
	}
}
