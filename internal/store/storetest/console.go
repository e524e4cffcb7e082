package storetest

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// testRoles: a token keeps its role; no role is the default; an agent's
// token has none; an unknown role is refused.
func testRoles(t *testing.T, h Harness) {
	s := h.Open(t)
	for i, r := range []auth.Role{auth.Viewer, auth.Operator, auth.Admin, ""} {
		secret := "role-token-" + string(rune('a'+i))
		id := "tok-r" + string(rune('a'+i))
		if err := s.CreateToken(ctx(t), auth.Token{ID: id, Operator: "op-a", Role: r, SHA256: sha256.Sum256([]byte(secret)), CreatedAt: base}); err != nil {
			t.Fatal(err)
		}
		want := r
		if want == "" {
			want = auth.DefaultRole
		}
		if tok, err := s.Authenticate(ctx(t), sha256.Sum256([]byte(secret))); err != nil || tok.Role != want {
			t.Errorf("role %q: Authenticate = %+v, %v", r, tok, err)
		}
	}
	// The same token with another role is another token.
	wantKind(t, s.CreateToken(ctx(t), auth.Token{ID: "tok-ra", Operator: "op-a", Role: auth.Admin,
		SHA256: sha256.Sum256([]byte("role-token-a")), CreatedAt: base}), errkind.Conflict)
	wantKind(t, s.CreateToken(ctx(t), auth.Token{ID: "tok-rz", Operator: "op-a", Role: "root",
		SHA256: sha256.Sum256([]byte("role-token-z")), CreatedAt: base}), errkind.Invalid)
	ingest(t, s, "op-a", conduit("c-1", "agent-7", ledger.Verified, base.Add(-time.Hour), base.Add(-time.Minute)))
	if err := s.CreateToken(ctx(t), auth.Token{ID: "tok-ag", Operator: "op-a", AgentID: "agent-7", Role: auth.Admin,
		SHA256: sha256.Sum256([]byte("agent-token")), CreatedAt: base}); err != nil {
		t.Fatal(err)
	}
	if tok, err := s.Authenticate(ctx(t), sha256.Sum256([]byte("agent-token"))); err != nil || tok.Role != "" {
		t.Errorf("an agent's token: %+v, %v", tok, err)
	}
	list, err := s.ListTokens(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]auth.Role{}
	for _, tok := range list {
		roles[tok.ID] = tok.Role
	}
	if roles["tok-ra"] != auth.Viewer || roles["tok-rc"] != auth.Admin || roles["tok-rd"] != auth.Operator || roles["tok-ag"] != "" {
		t.Errorf("ListTokens roles %v", roles)
	}
}

// testActions: the action log appends in order, reads newest first with
// filters and pages, refuses malformed entries, and refuses to change or
// drop an entry.
func testActions(t *testing.T, h Harness) {
	s := h.Open(t)
	entries := []auth.Action{
		{At: base, Operator: "", Via: auth.ViaConsole, Client: "192.0.2.9", Kind: auth.ActSignIn, Outcome: auth.Denied, Code: "unauthorized"},
		{At: base.Add(time.Second), Operator: "op-a", TokenID: "tok-1", Role: auth.Admin, Via: auth.ViaConsole, Client: "192.0.2.1",
			Kind: auth.ActSignIn, Target: "session", Outcome: auth.OK},
		{At: base.Add(2 * time.Second), Operator: "op-a", TokenID: "tok-1", Role: auth.Admin, Via: auth.ViaAPI, Client: "192.0.2.1",
			Kind: auth.ActIngest, Detail: "12 events: 12 accepted", Outcome: auth.OK},
		{At: base.Add(3 * time.Second), Operator: "op-b", TokenID: "tok-2", Role: auth.Viewer, Via: auth.ViaAPI, Client: "192.0.2.2",
			Kind: auth.ActDenied, Target: "POST /swarmscore/agent-7/erase", AgentID: "agent-7", Outcome: auth.Denied, Code: "forbidden_role"},
		{At: base.Add(4 * time.Second), Operator: "cli", Via: auth.ViaCLI, Kind: auth.ActCorrection, AgentID: "agent-7", Target: "cor-1",
			Detail: "agent-7's session c-1 VERIFIED → FAILED: the buyer's logs", Outcome: auth.OK},
	}
	var last int64
	for i, a := range entries {
		seq, err := s.AppendAction(ctx(t), a)
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if seq <= last {
			t.Fatalf("seq %d after %d", seq, last)
		}
		last = seq
		entries[i].Seq = seq
	}
	for _, bad := range []auth.Action{
		{Via: auth.ViaAPI, Kind: auth.ActIngest, Outcome: auth.OK},
		{At: base, Via: auth.ViaAPI, Outcome: auth.OK},
		{At: base, Via: "smtp", Kind: auth.ActIngest, Outcome: auth.OK},
		{At: base, Via: auth.ViaAPI, Kind: auth.ActIngest, Outcome: "maybe"},
	} {
		_, err := s.AppendAction(ctx(t), bad)
		wantKind(t, err, errkind.Invalid)
	}
	all, err := s.Actions(ctx(t), auth.ActionQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(entries) {
		t.Fatalf("%d entries, want %d", len(all), len(entries))
	}
	for i, got := range all {
		want := entries[len(entries)-1-i]
		if !got.At.Equal(want.At) {
			t.Errorf("entry %d at %v, want %v", i, got.At, want.At)
		}
		got.At = want.At
		if got != want {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
	for _, c := range []struct {
		q    auth.ActionQuery
		want []int // indexes into entries, newest first
	}{
		{auth.ActionQuery{Limit: 2}, []int{4, 3}},
		{auth.ActionQuery{Before: entries[3].Seq, Limit: 2}, []int{2, 1}},
		{auth.ActionQuery{Operator: "op-a"}, []int{2, 1}},
		{auth.ActionQuery{Kind: auth.ActSignIn}, []int{1, 0}},
		{auth.ActionQuery{AgentID: "agent-7"}, []int{4, 3}},
		{auth.ActionQuery{AgentID: "agent-7", Kind: auth.ActDenied}, []int{3}},
	} {
		got, err := s.Actions(ctx(t), c.q)
		if err != nil {
			t.Fatal(err)
		}
		var seqs, want []int64
		for _, a := range got {
			seqs = append(seqs, a.Seq)
		}
		for _, i := range c.want {
			want = append(want, entries[i].Seq)
		}
		if len(seqs) != len(want) || (len(want) > 0 && !equalInts(seqs, want)) {
			t.Errorf("%+v: %v, want %v", c.q, seqs, want)
		}
	}
	// Append-only: the database itself refuses to change or drop one.
	for _, stmt := range []string{
		"UPDATE operator_actions SET outcome = 'ok' WHERE outcome = 'denied'",
		"UPDATE operator_actions SET operator_id = 'someone-else'",
		"DELETE FROM operator_actions",
	} {
		if err := h.Tamper.Guarded(t, s, stmt); err == nil {
			t.Errorf("%s: the action log allowed it", stmt)
		}
	}
	if got, _ := s.Actions(ctx(t), auth.ActionQuery{}); len(got) != len(entries) || got[4].Outcome != auth.Denied {
		t.Errorf("after the refused changes: %+v", got)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// testSessions: a session is found by the SHA-256 of its cookie with its
// token's operator and role, touched, listed while live, revoked once,
// and ends with its token.
func testSessions(t *testing.T, h Harness) {
	s := h.Open(t)
	for _, tok := range []auth.Token{
		{ID: "tok-1", Operator: "op-a", Role: auth.Admin, SHA256: sha256.Sum256([]byte("t1")), CreatedAt: base},
		{ID: "tok-2", Operator: "op-b", Role: auth.Viewer, SHA256: sha256.Sum256([]byte("t2")), CreatedAt: base},
	} {
		if err := s.CreateToken(ctx(t), tok); err != nil {
			t.Fatal(err)
		}
	}
	a := auth.Session{IDSum: sha256.Sum256([]byte("cookie-a")), TokenID: "tok-1", CreatedAt: base, SeenAt: base,
		Client: "192.0.2.1", Browser: "Firefox/140.0"}
	b := auth.Session{IDSum: sha256.Sum256([]byte("cookie-b")), TokenID: "tok-2", CreatedAt: base.Add(time.Minute), SeenAt: base.Add(time.Minute),
		Client: "2001:db8::1", Browser: "Chrome/141"}
	for _, sess := range []auth.Session{a, b} {
		if err := s.CreateSession(ctx(t), sess, base.Add(-24*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	wantKind(t, s.CreateSession(ctx(t), a, base.Add(-24*time.Hour)), errkind.Conflict)
	wantKind(t, s.CreateSession(ctx(t), auth.Session{IDSum: sha256.Sum256([]byte("c")), TokenID: "tok-9", CreatedAt: base, SeenAt: base},
		base.Add(-24*time.Hour)), errkind.NotFound)
	got, err := s.Session(ctx(t), a.IDSum)
	if err != nil || got.Operator != "op-a" || got.Role != auth.Admin || got.Client != "192.0.2.1" || got.Browser != "Firefox/140.0" ||
		!got.CreatedAt.Equal(base) || got.Revoked() || got.Ref() != a.Ref() {
		t.Fatalf("Session = %+v, %v", got, err)
	}
	_, err = s.Session(ctx(t), sha256.Sum256([]byte("nope")))
	wantKind(t, err, errkind.NotFound)
	// Touched forward only.
	if err := s.TouchSession(ctx(t), a.IDSum, base.Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchSession(ctx(t), a.IDSum, base.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Session(ctx(t), a.IDSum); !got.SeenAt.Equal(base.Add(10 * time.Minute)) {
		t.Fatalf("seen at %v", got.SeenAt)
	}
	list, err := s.Sessions(ctx(t), base, base)
	if err != nil || len(list) != 2 || list[0].TokenID != "tok-1" || list[1].Operator != "op-b" {
		t.Fatalf("Sessions = %+v, %v", list, err)
	}
	if list, _ := s.Sessions(ctx(t), base.Add(2*time.Minute), base); len(list) != 1 || list[0].TokenID != "tok-1" {
		t.Fatalf("seen since: %+v", list)
	}
	if list, _ := s.Sessions(ctx(t), base, base.Add(time.Second)); len(list) != 1 || list[0].TokenID != "tok-2" {
		t.Fatalf("created since: %+v", list)
	}
	// Revoked once; the first revocation is kept.
	if err := s.RevokeSession(ctx(t), b.IDSum, base.Add(time.Hour), "op-a"); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeSession(ctx(t), b.IDSum, base.Add(2*time.Hour), "op-z"); err != nil {
		t.Fatal(err)
	}
	wantKind(t, s.RevokeSession(ctx(t), sha256.Sum256([]byte("nope")), base, "op-a"), errkind.NotFound)
	if got, _ := s.Session(ctx(t), b.IDSum); !got.RevokedAt.Equal(base.Add(time.Hour)) || got.RevokedBy != "op-a" || !got.Revoked() {
		t.Fatalf("revoked: %+v", got)
	}
	// Revoking the token ends its sessions.
	if err := s.RevokeToken(ctx(t), "tok-1", base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Session(ctx(t), a.IDSum); !got.TokenRevoked || !got.Revoked() {
		t.Fatalf("after its token's revocation: %+v", got)
	}
	if list, _ := s.Sessions(ctx(t), base, base); len(list) != 0 {
		t.Fatalf("live sessions: %+v", list)
	}
	// A new session forgets those last seen long ago.
	c := auth.Session{IDSum: sha256.Sum256([]byte("cookie-c")), TokenID: "tok-2", CreatedAt: base.Add(48 * time.Hour),
		SeenAt: base.Add(48 * time.Hour), Client: "192.0.2.3", Browser: strings.Repeat("x", 10)}
	if err := s.CreateSession(ctx(t), c, base.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	_, err = s.Session(ctx(t), a.IDSum)
	wantKind(t, err, errkind.NotFound)
}
