package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// HistoryDays is the number of daily points in a score history: one for
// each day of the 90-day window.
const HistoryDays = 90

// Profile is what anyone may be shown about an agent: its current
// certificate, the score that certificate carries and, when asked for, the
// score's daily history.
type Profile struct {
	Info        ledger.AgentInfo
	Certificate Certificate
	// Result is the certificate's score: its counts through the formula,
	// so a page, a badge and the downloaded passport never disagree.
	Result score.Result
	// Valid reports whether the certificate verifies now against this
	// server's key (passport.Verify, L1); Problems says why not.
	Valid    bool
	Problems []VerifyError
	// History has HistoryDays points, oldest first, when asked for; nil
	// otherwise.
	History []DayScore
}

// DayScore is an agent's score as of the end of one UTC day.
type DayScore struct {
	// Day is 00:00 UTC of the day.
	Day time.Time
	// AsOf is the instant the score is as of: the day's last microsecond
	// for a past day; for today, now (the certificate's score, which
	// answers now).
	AsOf   time.Time
	Result score.Result
}

// PublicProfile returns the agent's profile for public display (spec
// §11.1: an agent that chose to be unlisted is not displayed, nor, with
// RequireConsent, one that has not consented). It issues
// the certificate if the agent has no current one, exactly as the
// certificate route does. With history, Profile.History holds the score as
// of the end of each of the last HistoryDays−1 UTC days and as of now.
//
// A past day's score depends only on the events recorded for the agent,
// and every accepted report moves the agent's chain head, so the days are
// remembered per agent and chain head: a later call counts only the days it
// has not seen (usually none, one after midnight). The first call counts
// each past day's window once (LedgerStore.Counts, indexed range counts;
// no score is stored or signed).
//
// The agent's ledger row is remembered too (pageMemo), so that a profile
// asked for again, while nothing changed, makes no query.
//
// Errors: ErrInvalid for a malformed id; ErrNotFound, with the same
// message, for an unknown agent and an unlisted one, so that the answer
// does not reveal which; ErrUnavailable.
func (u *Certificates) PublicProfile(ctx context.Context, agentID string, history bool) (Profile, error) {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return Profile{}, err
	}
	if err := u.pubs.public(ctx, Caller{}, agentID); err != nil {
		return Profile{}, err
	}
	info, err := u.agent(ctx, agentID)
	switch {
	case errors.Is(err, errkind.ErrNotFound):
		return Profile{}, notPublic(agentID)
	case err != nil:
		return Profile{}, err
	}
	c, err := u.Certificate(ctx, agentID)
	if errors.Is(err, errkind.ErrNotFound) {
		return Profile{}, notPublic(agentID)
	}
	if err != nil {
		return Profile{}, err
	}
	now := u.clock.now()
	v := u.formulas.Verify(c.Passport, u.keys.current(ctx).keys, now)
	if v.Passport == nil {
		// Certificate returns what this server signed and stored; a
		// document that does not even parse is a fault, not a finding.
		return Profile{}, fmt.Errorf("agent %q's stored certificate does not parse: %v", agentID, v.Errors)
	}
	r, err := score.Compute(v.Passport.Counts())
	if err != nil {
		return Profile{}, fmt.Errorf("agent %q's stored certificate: %w", agentID, err)
	}
	p := Profile{Info: info, Certificate: c, Result: r, Valid: v.Valid, Problems: v.Errors}
	if history {
		if p.History, err = u.history(ctx, info, now, r); err != nil {
			return Profile{}, err
		}
	}
	return p, nil
}

// history is the agent's HistoryDays daily scores ending with today's,
// which is current.
func (u *Certificates) history(ctx context.Context, info ledger.AgentInfo, now time.Time, current score.Result) ([]DayScore, error) {
	today := now.Truncate(24 * time.Hour) // the Unix epoch starts a UTC day
	newest := today.Unix()/secondsPerDay - 1
	out := make([]DayScore, HistoryDays)
	out[HistoryDays-1] = DayScore{Day: today, AsOf: now, Result: current}
	if days, ok := u.histories.past(info.ID, info.ChainHead, newest); ok {
		copy(out, days)
		return out, nil
	}
	var past [HistoryDays - 1]score.Counts
	known := u.histories.load(info.ID, info.ChainHead, newest, &past)
	for i := range past {
		if known[i] {
			continue
		}
		day := today.AddDate(0, 0, -1-i)
		c, err := u.store.Counts(ctx, info.ID, endOfDay(day))
		if err != nil {
			return nil, err
		}
		past[i], known[i] = c, true
	}
	for i := range past {
		r, err := score.Compute(past[i])
		if err != nil {
			return nil, fmt.Errorf("agent %q: the ledger's counts: %w", info.ID, err)
		}
		day := today.AddDate(0, 0, -1-i)
		out[HistoryDays-2-i] = DayScore{Day: day, AsOf: endOfDay(day), Result: r}
	}
	u.histories.store(info.ID, info.ChainHead, newest, &past, slices.Clone(out[:HistoryDays-1]))
	return out, nil
}

const secondsPerDay = 24 * 60 * 60

// endOfDay is the last instant of day (00:00 UTC) on the ledger's grid.
func endOfDay(day time.Time) time.Time { return day.Add(24*time.Hour - ledger.Resolution) }
