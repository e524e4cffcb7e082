package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/webhook"
)

func endpoint(id string, events ...webhook.EventType) webhook.Endpoint {
	return webhook.Endpoint{ID: id, URL: "https://hooks.example.com/" + id, Events: events, Secret: webhook.NewSecret(),
		CreatedAt: base, CreatedBy: "op-a"}
}

// messages returns the endpoint's messages, oldest first.
func messages(t *testing.T, s service.Backend, ep string) []webhook.Message {
	t.Helper()
	ms, err := s.WebhookDeliveries(ctx(t), ep, 200)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(ms)
	return ms
}

// errOf drops a result, keeping its error.
func errOf[T any](_ T, err error) error { return err }

func types(ms []webhook.Message) []webhook.EventType {
	var out []webhook.EventType
	for _, m := range ms {
		out = append(out, m.Type)
	}
	return out
}

// testWebhooks: endpoints are stored with their secret and subscription,
// listed until deleted, and refused twice.
func testWebhooks(t *testing.T, h Harness) {
	s := h.Open(t)
	a := endpoint("ep_a", webhook.ScoreChanged, webhook.HoldUpdated)
	if err := s.CreateWebhook(ctx(t), a); err != nil {
		t.Fatal(err)
	}
	wantKind(t, s.CreateWebhook(ctx(t), a), errkind.Conflict)
	b := endpoint("ep_b", webhook.PassportIssued)
	b.CreatedAt = base.Add(time.Second)
	if err := s.CreateWebhook(ctx(t), b); err != nil {
		t.Fatal(err)
	}
	got, err := s.Webhook(ctx(t), "ep_a")
	if err != nil || got.URL != a.URL || !slices.Equal(got.Events, a.Events) || got.Secret.Reveal() != a.Secret.Reveal() ||
		!got.CreatedAt.Equal(base) || got.CreatedBy != "op-a" || !got.DeletedAt.IsZero() {
		t.Fatalf("Webhook = %+v, %v", got, err)
	}
	list, err := s.Webhooks(ctx(t))
	if err != nil || len(list) != 2 || list[0].ID != "ep_a" || list[1].ID != "ep_b" {
		t.Fatalf("Webhooks = %+v, %v", list, err)
	}
	if err := s.DeleteWebhook(ctx(t), "ep_a", base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	wantKind(t, s.DeleteWebhook(ctx(t), "ep_a", base.Add(time.Minute)), errkind.NotFound)
	wantKind(t, errOf(s.Webhook(ctx(t), "ep_a")), errkind.NotFound)
	wantKind(t, errOf(s.Webhook(ctx(t), "ep_nope")), errkind.NotFound)
	wantKind(t, errOf(s.WebhookDeliveries(ctx(t), "ep_nope", 10)), errkind.NotFound)
	if ms, err := s.WebhookDeliveries(ctx(t), "ep_a", 10); err != nil || len(ms) != 0 {
		t.Errorf("a deleted endpoint's deliveries: %v, %v", ms, err)
	}
	if list, _ := s.Webhooks(ctx(t)); len(list) != 1 || list[0].ID != "ep_b" {
		t.Errorf("after delete: %+v", list)
	}
	wantKind(t, s.CreateWebhook(ctx(t), webhook.Endpoint{ID: "ep_c", URL: "https://x.example", Events: a.Events, Secret: a.Secret,
		CreatedAt: base, CreatedBy: "bad operator"}), errkind.Invalid)
}

// testWebhookOutbox: a score refresh writes score.changed, tier.changed
// and passport.issued in its own transaction, for subscribed endpoints
// only, once per change; a refresh that fails writes none; appeals write
// appeal.updated; claims lease, attempts are recorded once, and a
// deleted endpoint's pending messages are cancelled.
func testWebhookOutbox(t *testing.T, h Harness) {
	s := h.Open(t)
	// Nothing is written while no endpoint is subscribed, but the score is
	// remembered as announced.
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	var evs []ledger.Event
	for i := range 60 {
		evs = append(evs, conduit(fmt.Sprintf("c%d", i), "a", ledger.Verified, start, end))
	}
	ingest(t, s, "op-a", evs...)
	if _, err := s.RefreshScore(ctx(t), "a", base, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateWebhook(ctx(t), endpoint("ep_all", webhook.EventTypes...)); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateWebhook(ctx(t), endpoint("ep_tier", webhook.TierChanged)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RefreshScore(ctx(t), "a", base, nil); err != nil {
		t.Fatal(err)
	}
	if ms := messages(t, s, "ep_all"); len(ms) != 0 {
		t.Fatalf("an unchanged score announced: %+v", ms)
	}
	// A failing issue rolls the messages back with the entry.
	var evs2 []ledger.Event
	for i := range 40 {
		evs2 = append(evs2, ap2(fmt.Sprintf("t%d", i), "a", ledger.Settled, start, end))
	}
	ingest(t, s, "op-a", evs2...)
	boom := errors.New("boom")
	if _, err := s.RefreshScore(ctx(t), "a", base, func(*ledger.ScoreEntry) ([]byte, string, error) { return nil, "", boom }); !errors.Is(err, boom) {
		t.Fatalf("refresh with a failing issue: %v", err)
	}
	if ms := messages(t, s, "ep_all"); len(ms) != 0 {
		t.Fatalf("messages of a rolled-back refresh: %+v", ms)
	}
	iss := &issuer{}
	issue := func(e *ledger.ScoreEntry) ([]byte, string, error) {
		e.PassportID, e.KeyID = "p-"+e.AgentID, "k1"
		return iss.issue(e)
	}
	e, err := s.RefreshScore(ctx(t), "a", base, issue)
	if err != nil {
		t.Fatal(err)
	}
	ms := messages(t, s, "ep_all")
	kinds := types(ms)
	slices.Sort(kinds)
	if !slices.Equal(kinds, []webhook.EventType{webhook.PassportIssued, webhook.ScoreChanged, webhook.TierChanged}) {
		t.Fatalf("messages %v", kinds)
	}
	ids := map[string]bool{}
	for _, m := range ms {
		ids[m.ID] = true
		if m.State != webhook.Pending || m.Attempts != 0 || m.AgentID != "a" || !m.CreatedAt.Equal(e.ComputedAt) || !m.NextAttemptAt.Equal(e.ComputedAt) {
			t.Errorf("message %+v", m)
		}
		var p struct {
			Type      webhook.EventType
			Timestamp string
			Data      map[string]any
		}
		if err := json.Unmarshal(m.Payload, &p); err != nil || p.Type != m.Type || p.Data["agent_id"] != "a" {
			t.Errorf("payload %s: %v", m.Payload, err)
		}
		if m.Type == webhook.ScoreChanged && (p.Data["score"] != float64(e.Result.Score) || p.Data["previous_score"] != float64(240) ||
			p.Data["tier"] != e.Result.Tier.String() || p.Data["previous_tier"] != "NONE") {
			t.Errorf("score.changed %s", m.Payload)
		}
		if m.Type == webhook.PassportIssued && (p.Data["passport_id"] != "p-a" || p.Data["kid"] != "k1") {
			t.Errorf("passport.issued %s", m.Payload)
		}
	}
	if len(ids) != 3 {
		t.Errorf("message ids not distinct: %v", ids)
	}
	tier := messages(t, s, "ep_tier")
	if len(tier) != 1 || tier[0].Type != webhook.TierChanged || ids[tier[0].ID] {
		t.Errorf("ep_tier messages %+v", tier)
	}

	// Claims: due messages only, each once until its lease ends.
	lease := base.Add(time.Minute)
	claimed, err := s.ClaimWebhookMessages(ctx(t), base.Add(-time.Second), lease, 10)
	if err != nil || len(claimed) != 0 {
		t.Fatalf("claim before due: %v, %v", claimed, err)
	}
	claimed, err = s.ClaimWebhookMessages(ctx(t), base, lease, 3)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	for _, c := range claimed {
		if c.URL == "" || c.Secret.IsZero() || c.Attempts != 0 {
			t.Errorf("claimed %+v", c)
		}
	}
	more, err := s.ClaimWebhookMessages(ctx(t), base.Add(time.Second), lease, 10)
	if err != nil || len(more) != 1 {
		t.Fatalf("second claim: %d, %v (want the one left)", len(more), err)
	}
	if again, _ := s.ClaimWebhookMessages(ctx(t), base.Add(2*time.Second), lease, 10); len(again) != 0 {
		t.Fatalf("claimed again within the lease: %d", len(again))
	}
	// The message attempted is one of ep_all's, so that ep_tier's stays
	// pending until its endpoint is deleted.
	var c webhook.Claimed
	for _, x := range append(claimed, more...) {
		if x.EndpointID == "ep_all" {
			c = x
			break
		}
	}
	retryAt := base.Add(10 * time.Second)
	fail := webhook.Result{MessageID: c.ID, Attempt: webhook.Attempt{N: 1, At: base, Status: 503, Error: "answered 503", Duration: 1500 * time.Microsecond},
		State: webhook.Pending, NextAttemptAt: retryAt}
	if ok, err := s.RecordWebhookAttempt(ctx(t), fail); !ok || err != nil {
		t.Fatalf("record: %v, %v", ok, err)
	}
	if ok, err := s.RecordWebhookAttempt(ctx(t), fail); ok || err != nil {
		t.Fatalf("the same attempt again: %v, %v", ok, err)
	}
	wantKind(t, errOf(s.RecordWebhookAttempt(ctx(t), webhook.Result{MessageID: c.ID, Attempt: webhook.Attempt{N: 2, At: base}, State: "lost"})), errkind.Invalid)
	if n, err := s.WebhookBacklog(ctx(t)); err != nil || n != 4 {
		t.Errorf("backlog %d, %v", n, err)
	}
	after, err := s.ClaimWebhookMessages(ctx(t), retryAt, retryAt.Add(time.Minute), 10)
	if err != nil || len(after) != 1 || after[0].ID != c.ID || after[0].Attempts != 1 {
		t.Fatalf("claim of the retry: %+v, %v", after, err)
	}
	ok, err := s.RecordWebhookAttempt(ctx(t), webhook.Result{MessageID: c.ID, Attempt: webhook.Attempt{N: 2, At: retryAt, Status: 204}, State: webhook.Delivered})
	if !ok || err != nil {
		t.Fatalf("record delivered: %v, %v", ok, err)
	}
	var got webhook.Message
	for _, m := range messages(t, s, c.EndpointID) {
		if m.ID == c.ID {
			got = m
		}
	}
	if got.State != webhook.Delivered || got.Attempts != 2 || !got.DeliveredAt.Equal(retryAt) || got.LastStatus != 204 || got.LastError != "" ||
		len(got.History) != 2 || got.History[0].Status != 503 || got.History[0].Error != "answered 503" || got.History[0].Duration != 1500*time.Microsecond ||
		got.History[1].N != 2 || !got.History[1].At.Equal(retryAt) {
		t.Errorf("delivered message %+v", got)
	}

	// A deleted endpoint's pending messages are cancelled, the others kept.
	if err := s.DeleteWebhook(ctx(t), "ep_tier", base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if tier := messages(t, s, "ep_tier"); len(tier) != 1 || tier[0].State != webhook.Cancelled {
		t.Errorf("after delete: %+v", tier)
	}
	if again, _ := s.ClaimWebhookMessages(ctx(t), base.Add(48*time.Hour), base.Add(49*time.Hour), 10); len(again) != 2 {
		t.Errorf("claimable after the lease: %d, want the 2 left of ep_all", len(again))
	}
	for _, m := range messages(t, s, "ep_all") {
		if strings.Contains(string(m.Payload), "whsec_") {
			t.Errorf("a payload holds a secret")
		}
	}
}

// testWebhookClaimsConcurrent: dispatchers claiming at once never take
// the same message (PostgreSQL: FOR UPDATE SKIP LOCKED).
func testWebhookClaimsConcurrent(t *testing.T, h Harness) {
	s := h.Open(t)
	if err := s.CreateWebhook(ctx(t), endpoint("ep_p", webhook.PassportIssued)); err != nil {
		t.Fatal(err)
	}
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	iss := &issuer{}
	const agents = 60
	for i := range agents {
		a := fmt.Sprintf("ag-%02d", i)
		ingest(t, s, "op-a", conduit("c-"+a, a, ledger.Verified, start, end))
		if _, err := s.RefreshScore(ctx(t), a, base, func(e *ledger.ScoreEntry) ([]byte, string, error) {
			e.PassportID = "p-" + e.AgentID
			return iss.issue(e)
		}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				cs, err := s.ClaimWebhookMessages(ctx(t), base, base.Add(time.Hour), 7)
				if err != nil {
					t.Error(err)
					return
				}
				if len(cs) == 0 {
					return
				}
				mu.Lock()
				for _, c := range cs {
					seen[c.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != agents {
		t.Errorf("claimed %d distinct messages, want %d", len(seen), agents)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("message %s claimed %d times", id, n)
		}
	}
}

// testWebhookAppeals: filing an appeal and each change of its state
// write appeal.updated in the same transaction, dated at its action.
func testWebhookAppeals(t *testing.T, h Harness) {
	s := h.Open(t)
	if err := s.CreateWebhook(ctx(t), endpoint("ep_ap", webhook.AppealUpdated)); err != nil {
		t.Fatal(err)
	}
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	ingest(t, s, "op-a", conduit("c1", "a", ledger.Failed, start, end))
	iss := &issuer{}
	if _, err := s.RefreshScore(ctx(t), "a", base, func(e *ledger.ScoreEntry) ([]byte, string, error) {
		e.PassportID = "p-a"
		return iss.issue(e)
	}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Passport(ctx(t), "p-a")
	if err != nil {
		t.Fatal(err)
	}
	filed := base.Add(time.Hour)
	a, err := appeal.New(appeal.Filing{ID: "apl-1", PassportID: p.ID, Grounds: appeal.IncorrectStatus, Statement: "c1 was verified",
		Events: []ledger.EventKey{{Type: ledger.ConduitSession, ID: "c1"}}, By: "op-a", At: filed}, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateAppeal(ctx(t), a); err != nil {
		t.Fatal(err)
	}
	ack, _ := appeal.Apply(a, appeal.Ack, "op-a", filed.Add(time.Hour), "")
	if _, err := s.SaveAppeal(ctx(t), ack, appeal.Submitted, nil, nil); err != nil {
		t.Fatal(err)
	}
	// A save refused for a stale state writes nothing.
	if _, err := s.SaveAppeal(ctx(t), ack, appeal.Submitted, nil, nil); errkind.Of(err) != errkind.Conflict {
		t.Fatalf("stale save: %v", err)
	}
	ms := messages(t, s, "ep_ap")
	if len(ms) != 2 {
		t.Fatalf("messages %+v", ms)
	}
	want := []string{`"state":"` + string(appeal.Submitted) + `"`, `"previous_state":"` + string(appeal.Submitted) + `"`}
	if !ms[0].CreatedAt.Equal(filed) || !strings.Contains(string(ms[0].Payload), want[0]) || strings.Contains(string(ms[0].Payload), "previous_state") ||
		!ms[1].CreatedAt.Equal(filed.Add(time.Hour)) || !strings.Contains(string(ms[1].Payload), want[1]) || ms[1].AgentID != "a" {
		t.Errorf("appeal messages:\n%s %s\n%s %s", ms[0].CreatedAt, ms[0].Payload, ms[1].CreatedAt, ms[1].Payload)
	}
}

// testWebhookErasure: an erased agent's messages are renamed with it, its
// announced score deleted: its id is nowhere in the database after.
func testWebhookErasure(t *testing.T, h Harness) {
	s := h.Open(t)
	if err := s.CreateWebhook(ctx(t), endpoint("ep_e", webhook.ScoreChanged, webhook.PassportIssued)); err != nil {
		t.Fatal(err)
	}
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	ingest(t, s, "op-a", conduit("c-v", victim, ledger.Verified, start, end), conduit("c-o", "other", ledger.Verified, start, end))
	iss := &issuer{}
	for i, a := range []string{victim, "other"} {
		if _, err := s.RefreshScore(ctx(t), a, base, func(e *ledger.ScoreEntry) ([]byte, string, error) {
			e.PassportID = fmt.Sprintf("p-%d", i)
			return iss.issue(e)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if ms := messages(t, s, "ep_e"); len(ms) != 4 || !strings.Contains(h.Tamper.Dump(t, s), victim) {
		t.Fatalf("%d messages before the erasure", len(ms))
	}
	const pseudonym = "erased-77aa01"
	if _, err := s.Erase(ctx(t), ledger.ErasureRequest{AgentID: victim, Pseudonym: pseudonym, Identity: identity, ID: "era-w", By: "op-a",
		At: base.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if d := h.Tamper.Dump(t, s); strings.Contains(d, victim) {
		for _, line := range strings.Split(d, "\n") {
			if strings.Contains(line, victim) {
				t.Errorf("left behind: %.200s", line)
			}
		}
	}
	renamed := 0
	for _, m := range messages(t, s, "ep_e") {
		if m.AgentID == pseudonym && strings.Contains(string(m.Payload), `"agent_id":"`+pseudonym+`"`) {
			renamed++
		}
	}
	if renamed != 2 {
		t.Errorf("%d of the agent's 2 messages renamed", renamed)
	}
}
