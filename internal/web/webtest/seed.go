// Package webtest holds the ledger that the web pages' tests, browser tests
// and screenshots show, so that all of them show the same agents.
package webtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
)

// Operator is the operator the seeded events are reported by.
const Operator = "market-1"

// Seed records, through u and relative to now:
//
//   - agent-7: 80 Conduit sessions (76 verified) and 40 AP2 transactions
//     (38 settled) spread over the last 83 days, so its score climbs to
//     760 STANDARD today (the README's example);
//   - elite-1: 120/118 and 60/59 over 60 days, 983 ELITE;
//   - newbie: 3/2 and 1/1, NONE;
//   - shy-agent: 100/100 and 50/50 over 30 days, 1000 ELITE, but unlisted:
//     never shown publicly;
//   - fill-00 … fill-27: small scores (68 to 112), so that the
//     leaderboard has two pages.
//
// 1,168 events in all, every one accepted. Errors are u's.
func Seed(ctx context.Context, u *service.UseCases, now time.Time) error {
	var b strings.Builder
	ev := func(kind, id, agent, status string, end time.Time) {
		start := end.Add(-time.Hour).Format(time.RFC3339)
		switch kind {
		case "c":
			fmt.Fprintf(&b, `{"type":"conduit_session","id":%q,"agent_id":%q,"status":%q,"started_at":%q,"completed_at":%q}`+"\n",
				id, agent, status, start, end.Format(time.RFC3339))
		case "t":
			fmt.Fprintf(&b, `{"type":"ap2_transaction","id":%q,"provider_id":%q,"buyer_id":"buyer-1","status":%q,"escrow_amount_cents":125000,"started_at":%q,"settled_at":%q}`+"\n",
				id, agent, status, start, end.Format(time.RFC3339))
		}
	}
	// spread marks n of total positions, evenly: exactly n are marked.
	spread := func(i, n, total int) bool { return (i+1)*n/total != i*n/total }
	// dims reports ct sessions (cs verified) and at transactions (as
	// settled) ending at even steps over span before now.
	dims := func(agent string, ct, cs, at, as int, span time.Duration) {
		for i := range ct {
			st := "VERIFIED"
			if spread(i, ct-cs, ct) {
				st = "FAILED"
			}
			ev("c", fmt.Sprintf("%s-c%d", agent, i), agent, st, now.Add(-span*time.Duration(i)/time.Duration(ct)))
		}
		for i := range at {
			st := "SETTLED"
			if spread(i, at-as, at) {
				st = "DISPUTED"
			}
			ev("t", fmt.Sprintf("%s-t%d", agent, i), agent, st, now.Add(-span*time.Duration(i)/time.Duration(at)).Add(-time.Minute))
		}
	}
	dims("agent-7", 80, 76, 40, 38, 83*24*time.Hour)
	dims("elite-1", 120, 118, 60, 59, 60*24*time.Hour)
	dims("newbie", 3, 2, 1, 1, 2*24*time.Hour)
	dims("shy-agent", 100, 100, 50, 50, 30*24*time.Hour)
	for i := range 28 {
		dims(fmt.Sprintf("fill-%02d", i), 10+i, 9+i/2, 2, 2, 20*24*time.Hour)
	}
	rep, err := u.Ingest.IngestEvents(ctx, Operator, strings.NewReader(b.String()))
	if err != nil {
		return err
	}
	if len(rep.Rejected) != 0 {
		return fmt.Errorf("seed: %d events rejected, the first: %v", len(rep.Rejected), rep.Rejected[0].Err)
	}
	_, err = u.Rights.SetVisibility(ctx, service.OperatorCaller(Operator), "shy-agent", ledger.VisibilityUnlisted)
	return err
}

// Rejected is a batch of two events the ledger rejects (an unknown status,
// a fraction of a cent), for the console's list of rejections.
func Rejected(now time.Time) string {
	day := now.Add(-24 * time.Hour).Format(time.DateOnly)
	return fmt.Sprintf(`{"type":"conduit_session","id":"s-bad","agent_id":"agent-7","status":"DONE","started_at":"%sT10:00:00Z"}
{"type":"ap2_transaction","id":"t-bad","provider_id":"agent-7","buyer_id":"buyer-1","status":"SETTLED","escrow_amount_cents":99.5,"started_at":"%sT08:00:00Z","settled_at":"%sT09:00:00Z"}
`, day, day, day)
}

// AppealStatement is the statement of the appeal SeedAppeal files.
const AppealStatement = "Session agent-7-c19 was verified by the buyer the same day; the ledger counts it as failed. Transaction agent-7-t19 was settled, not disputed."

// SeedAppeal files, through u as the operator Operator, an appeal of
// agent-7's current passport (issuing it if need be) on incorrect_status
// grounds, disputing its session agent-7-c19 and its transaction
// agent-7-t19, and returns it. Seed must have run.
func SeedAppeal(ctx context.Context, u *service.UseCases) (service.AppealStatus, error) {
	c, err := u.Certificates.Certificate(ctx, "agent-7")
	if err != nil {
		return service.AppealStatus{}, err
	}
	var doc struct {
		ID string `json:"agent_passport_id"`
	}
	if err := json.Unmarshal(c.Passport, &doc); err != nil {
		return service.AppealStatus{}, fmt.Errorf("seed: reading agent-7's passport: %w", err)
	}
	return u.Corrections.FileAppeal(ctx, service.OperatorCaller(Operator), service.AppealFiling{
		PassportID: doc.ID, Grounds: appeal.IncorrectStatus, Statement: AppealStatement,
		Events: []ledger.EventKey{{Type: ledger.ConduitSession, ID: "agent-7-c19"}, {Type: ledger.AP2Transaction, ID: "agent-7-t19"}},
	})
}

// LongID is an agent id as long as the id rules allow (128 bytes), which
// SeedLong gives an agent: the pages must show it without pushing their
// figures out of sight.
var LongID = "agent-" + strings.Repeat("0123456789abcdef", 7) + "0123456789"

// LongStatement is a statement as long as an appeal's may be (appeal.MaxTextLen),
// with a long unbroken word in it.
var LongStatement = func() string {
	s := "The buyer's logs at https://logs.example/" + strings.Repeat("x", 180) + " show the session verified. "
	for len(s) < appeal.MaxTextLen-80 {
		s += "Every line of this statement is a reason the ledger is wrong about the session. "
	}
	return s
}()

// SeedLong gives LongID 60 sessions (57 verified) and 30 transactions (29
// settled) ending before now, and files an appeal of its passport with
// LongStatement.
func SeedLong(ctx context.Context, u *service.UseCases, now time.Time) (service.AppealStatus, error) {
	var b strings.Builder
	for i := range 60 {
		st := "VERIFIED"
		if i%20 == 19 {
			st = "FAILED"
		}
		end := now.Add(-time.Duration(i+1) * time.Hour)
		fmt.Fprintf(&b, `{"type":"conduit_session","id":"long-c%d","agent_id":%q,"status":%q,"started_at":%q,"completed_at":%q}`+"\n",
			i, LongID, st, end.Add(-time.Hour).Format(time.RFC3339), end.Format(time.RFC3339))
	}
	for i := range 30 {
		st := "SETTLED"
		if i == 29 {
			st = "DISPUTED"
		}
		end := now.Add(-time.Duration(i+1) * time.Hour)
		fmt.Fprintf(&b, `{"type":"ap2_transaction","id":"long-t%d","provider_id":%q,"buyer_id":"buyer-1","status":%q,"escrow_amount_cents":125000,"started_at":%q,"settled_at":%q}`+"\n",
			i, LongID, st, end.Add(-time.Hour).Format(time.RFC3339), end.Format(time.RFC3339))
	}
	if _, err := u.Ingest.IngestEvents(ctx, Operator, strings.NewReader(b.String())); err != nil {
		return service.AppealStatus{}, err
	}
	c, err := u.Certificates.Certificate(ctx, LongID)
	if err != nil {
		return service.AppealStatus{}, err
	}
	var doc struct {
		ID string `json:"agent_passport_id"`
	}
	if err := json.Unmarshal(c.Passport, &doc); err != nil {
		return service.AppealStatus{}, fmt.Errorf("seed: reading %s's passport: %w", LongID, err)
	}
	return u.Corrections.FileAppeal(ctx, service.OperatorCaller(Operator), service.AppealFiling{
		PassportID: doc.ID, Grounds: appeal.IncorrectStatus, Statement: LongStatement,
		Events: []ledger.EventKey{{Type: ledger.ConduitSession, ID: "long-c19"}, {Type: ledger.AP2Transaction, ID: "long-t29"}},
	})
}
