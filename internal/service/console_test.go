package service

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// The use cases that change something record it under the actor in the
// context, with the outcome; without an actor nothing is recorded.
func TestActionLog(t *testing.T) {
	a, _ := newUseCases(t)
	ctx := context.Background()
	if _, err := a.Ingest.Ingest(ctx, "acme", conduit("agent-1", "c", 2, 1, t0)); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Console.Actions(ctx, auth.ActionQuery{}); len(got) != 0 {
		t.Fatalf("recorded without an actor: %+v", got)
	}
	api := WithActor(ctx, Actor{Operator: "acme", TokenID: "tok-1", Role: auth.Operator, Via: auth.ViaAPI, Client: "192.0.2.1"})
	if _, err := a.Ingest.IngestEvents(api, "acme", strings.NewReader(`{"type":"conduit_session","id":"x-1","agent_id":"agent-1","status":"VERIFIED","started_at":"2026-01-01T00:00:00Z","completed_at":"2026-01-01T00:01:00Z"}
{"type":"conduit_session","id":"x-2","agent_id":"agent-1","status":"DONE","started_at":"2026-01-01T00:00:00Z","completed_at":"2026-01-01T00:01:00Z"}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Corrections.Correct(api, ledger.CorrectionRequest{EventType: ledger.ConduitSession, EventID: "c-0",
		Action: ledger.ActionStatus, Status: ledger.Failed, Reason: "the buyer's logs", By: "acme"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Corrections.Correct(api, ledger.CorrectionRequest{EventType: ledger.ConduitSession, EventID: "nope",
		Action: ledger.ActionStatus, Status: ledger.Failed, Reason: "r", By: "acme"}); !errors.Is(err, errkind.ErrNotFound) {
		t.Fatalf("correcting an unknown event: %v", err)
	}
	cli := WithActor(ctx, Actor{Operator: "cli", Role: auth.Admin, Via: auth.ViaCLI})
	nt, err := a.Tokens.CreateToken(cli, "ops", auth.Viewer)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Tokens.RevokeToken(cli, nt.ID); err != nil {
		t.Fatal(err)
	}
	got, err := a.Console.Actions(ctx, auth.ActionQuery{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		kind             auth.ActionKind
		op, agent        string
		outcome          auth.Outcome
		code, detailPart string
	}
	want := []row{
		{auth.ActTokenRevoke, "cli", "", auth.OK, "", ""},
		{auth.ActTokenCreate, "cli", "", auth.OK, "", "for operator ops with role viewer"},
		{auth.ActCorrection, "acme", "", auth.Failed, "not-found", "conduit_session nope: to FAILED (r)"},
		{auth.ActCorrection, "acme", "agent-1", auth.OK, "", "conduit_session c-0: VERIFIED → FAILED (the buyer's logs)"},
		{auth.ActIngest, "acme", "", auth.OK, "", "2 events: 1 accepted, 0 duplicates, 0 superseded, 1 rejected"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries: %+v", len(got), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Kind != w.kind || g.Operator != w.op || g.AgentID != w.agent || g.Outcome != w.outcome || g.Code != w.code ||
			!strings.Contains(g.Detail, w.detailPart) || g.At.IsZero() {
			t.Errorf("entry %d: %+v, want %+v", i, g, w)
		}
	}
	if got[4].Client != "192.0.2.1" || got[4].TokenID != "tok-1" || got[4].Via != auth.ViaAPI || got[4].Role != auth.Operator {
		t.Errorf("the ingest's actor: %+v", got[4])
	}
}

// An entry that cannot be written is logged with what it says, and the
// action stands.
func TestActionLogFailureLogged(t *testing.T) {
	var logs bytes.Buffer
	l := &actionLog{store: failingActions{}, clock: func() time.Time { return t0 }, log: slog.New(slog.NewTextHandler(&logs, nil))}
	l.record(WithActor(context.Background(), Actor{Operator: "acme", Via: auth.ViaAPI}), auth.ActIngest, "agent-1", "", "1 event", nil)
	if !strings.Contains(logs.String(), "the action log could not record an action") || !strings.Contains(logs.String(), "operator=acme") {
		t.Fatalf("log: %s", logs.String())
	}
}

type failingActions struct{ ActionStore }

func (failingActions) AppendAction(context.Context, auth.Action) (int64, error) {
	return 0, errors.New("disk full")
}

// A console session: started by a token, found by its cookie, touched at
// most once a minute, ended by sign-out, revocation, idleness, age or its
// token's revocation.
func TestConsoleSessions(t *testing.T) {
	a, c := newUseCases(t)
	ctx := context.Background()
	p := SessionPolicy{Idle: 30 * time.Minute, Lifetime: 12 * time.Hour}
	admin, err := a.Tokens.CreateToken(ctx, "root", auth.Admin)
	if err != nil {
		t.Fatal(err)
	}
	viewer, err := a.Tokens.CreateToken(ctx, "watcher", auth.Viewer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Console.SignIn(ctx, "sst_wrong", "192.0.2.9", "curl", p); !errors.Is(err, errkind.ErrUnauthorized) {
		t.Fatalf("a wrong token: %v", err)
	}
	s1, err := a.Console.SignIn(ctx, admin.Secret, "192.0.2.1", "Firefox\x00/140", p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s1.ID, admin.Secret) || len(s1.ID) != 43 || s1.Session.Browser != "Firefox/140" {
		t.Fatalf("session %+v", s1)
	}
	s2, err := a.Console.SignIn(ctx, viewer.Secret, "192.0.2.2", "Chrome", p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Console.Session(ctx, s1.ID, p)
	if err != nil || got.Operator != "root" || got.Role != auth.Admin || got.TokenID != admin.ID {
		t.Fatalf("session %+v %v", got, err)
	}
	if _, err := a.Console.Session(ctx, s1.ID+"x", p); !errors.Is(err, errkind.ErrUnauthorized) {
		t.Fatalf("unknown cookie: %v", err)
	}
	// Used within the idle time, it lives on; unused past it, it ends.
	c.t = c.t.Add(20 * time.Minute)
	if _, err := a.Console.Session(ctx, s1.ID, p); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(20 * time.Minute)
	if _, err := a.Console.Session(ctx, s1.ID, p); err != nil {
		t.Fatalf("used 20 minutes ago: %v", err)
	}
	if _, err := a.Console.Session(ctx, s2.ID, p); !errors.Is(err, errkind.ErrUnauthorized) {
		t.Fatalf("idle 40 minutes: %v", err)
	}
	list, err := a.Console.Sessions(ctx, p)
	if err != nil || len(list) != 1 || list[0].TokenID != admin.ID {
		t.Fatalf("live sessions %+v %v", list, err)
	}
	// Revoked by an admin: ended, and recorded.
	s3, _ := a.Console.SignIn(ctx, viewer.Secret, "192.0.2.2", "Chrome", p)
	adminCtx := WithActor(ctx, Actor{Operator: "root", TokenID: admin.ID, Role: auth.Admin, Via: auth.ViaConsole})
	if err := a.Console.RevokeSession(adminCtx, s3.Session.Ref()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Console.Session(ctx, s3.ID, p); !errors.Is(err, errkind.ErrUnauthorized) {
		t.Fatalf("revoked: %v", err)
	}
	if err := a.Console.RevokeSession(adminCtx, "zz"); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("a malformed ref: %v", err)
	}
	// Its token revoked: ended.
	if err := a.Tokens.RevokeToken(ctx, admin.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Console.Session(ctx, s1.ID, p); !errors.Is(err, errkind.ErrUnauthorized) {
		t.Fatalf("its token revoked: %v", err)
	}
	// Signed out.
	s4, _ := a.Console.SignIn(ctx, viewer.Secret, "192.0.2.2", "Chrome", p)
	if err := a.Console.SignOut(WithActor(ctx, Actor{Operator: "watcher", Via: auth.ViaConsole}), s4.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Console.Session(ctx, s4.ID, p); !errors.Is(err, errkind.ErrUnauthorized) {
		t.Fatalf("signed out: %v", err)
	}
	// Too old, however busy.
	s5, _ := a.Console.SignIn(ctx, viewer.Secret, "192.0.2.2", "Chrome", p)
	for range 13 {
		c.t = c.t.Add(time.Hour - time.Minute)
		if _, err := a.Console.Session(ctx, s5.ID, p); err != nil {
			break
		}
	}
	if _, err := a.Console.Session(ctx, s5.ID, p); !errors.Is(err, errkind.ErrUnauthorized) {
		t.Fatalf("13 hours old: %v", err)
	}
	// The log: sign-ins (one refused), a revocation, a sign-out.
	acts, _ := a.Console.Actions(ctx, auth.ActionQuery{Kind: auth.ActSignIn})
	if len(acts) != 6 || acts[5].Outcome != auth.Denied || acts[5].Operator != "" || acts[5].Client != "192.0.2.9" || acts[4].Operator != "root" {
		t.Fatalf("sign-ins %+v", acts)
	}
	if acts, _ := a.Console.Actions(ctx, auth.ActionQuery{Kind: auth.ActSessionRevoke}); len(acts) != 2 || acts[1].Operator != "root" || acts[0].Outcome != auth.Failed {
		t.Fatalf("revocations %+v", acts)
	}
	if acts, _ := a.Console.Actions(ctx, auth.ActionQuery{Kind: auth.ActSignOut}); len(acts) != 1 || acts[0].Operator != "watcher" {
		t.Fatalf("sign-outs %+v", acts)
	}
}
