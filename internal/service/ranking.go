package service

import (
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// RankingQuery selects agents for marketplace search (spec §4).
type RankingQuery struct {
	MinTier  score.Tier
	MinScore int
	Limit    int
	After    *ledger.Cursor
}

// RankingPage is one page of the ranking, highest score first. Next is the
// cursor of the following page, nil on the last page.
type RankingPage struct {
	Agents []ledger.ScoreEntry
	Next   *ledger.Cursor
}
