package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// TestSignatureVector: the example of the Standard Webhooks reference
// libraries (standard-webhooks/libraries, the same value npm
// standardwebhooks signs).
func TestSignatureVector(t *testing.T) {
	s, err := ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"test": 2432232314}`)
	const want = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	if got := Signature(s, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body); got != want {
		t.Errorf("Signature = %s, want %s", got, want)
	}
	at := time.Unix(1614265330, 0)
	if !Verify(s, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body, "v1,bogus "+want, at, 5*time.Minute) {
		t.Error("Verify refuses the vector")
	}
	if Verify(s, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body, want, at.Add(10*time.Minute), 5*time.Minute) {
		t.Error("Verify accepts a stale timestamp")
	}
	if Verify(s, "msg_other", 1614265330, body, want, at, 5*time.Minute) {
		t.Error("Verify accepts another id")
	}
}

// TestSecretRedacted: a secret never prints, logs or marshals itself.
func TestSecretRedacted(t *testing.T) {
	s := NewSecret()
	raw := s.Reveal()
	if !strings.HasPrefix(raw, "whsec_") || len(raw) != len("whsec_")+32 {
		t.Fatalf("secret %q", raw)
	}
	if _, err := ParseSecret(raw); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "secret", s, "endpoint", Endpoint{Secret: s})
	j, _ := json.Marshal(Endpoint{Secret: s})
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, Endpoint{Secret: s}, s, s), string(j), logged.String()} {
		if strings.Contains(out, raw[6:]) {
			t.Errorf("the secret leaks: %s", out)
		}
	}
	for _, bad := range []string{"", "whsec_", "whsec_!!", "sk_" + raw[6:], "whsec_" + "AAAA"} {
		if _, err := ParseSecret(bad); errkind.Of(err) != errkind.Invalid || (bad != "" && strings.Contains(err.Error(), bad[min(len(bad), 6):]) && len(bad) > 6) {
			t.Errorf("ParseSecret(%q) = %v", bad, err)
		}
	}
}

func TestParseEvents(t *testing.T) {
	got, err := ParseEvents([]string{"hold.updated", "score.changed"})
	if err != nil || len(got) != 2 || got[0] != ScoreChanged || got[1] != HoldUpdated {
		t.Errorf("ParseEvents = %v, %v", got, err)
	}
	if s := JoinEvents(got); s != " score.changed hold.updated " || len(SplitEvents(s)) != 2 {
		t.Errorf("JoinEvents = %q", s)
	}
	for _, bad := range [][]string{nil, {"score.changed", "score.changed"}, {"score.*"}, {""}} {
		if _, err := ParseEvents(bad); errkind.Code(err) != CodeInvalidEvent {
			t.Errorf("ParseEvents(%q) = %v", bad, err)
		}
	}
}

func TestCheckURL(t *testing.T) {
	prod, test := URLPolicy{}, URLPolicy{AllowHTTPLoopback: true}
	for _, c := range []struct {
		url        string
		prod, test bool
	}{
		{"https://hooks.example.com/x?y=1", true, true},
		{"https://93.184.216.34:8443/x", true, true},
		{"http://hooks.example.com/x", false, false},
		{"http://127.0.0.1:9000/x", false, true},
		{"https://127.0.0.1/x", false, true},
		{"http://localhost:9000/x", false, true},
		{"http://LOCALHOST./x", false, true},
		{"http://[::1]:9000/x", false, true},
		{"http://10.0.0.1/x", false, false},
		{"https://10.0.0.1/x", false, false},
		{"https://192.168.1.1/x", false, false},
		{"https://172.16.0.1/x", false, false},
		{"https://100.64.0.1/x", false, false},
		{"https://169.254.169.254/x", false, false},
		{"https://[fe80::1]/x", false, false},
		{"https://[fd00::1]/x", false, false},
		{"https://[::ffff:127.0.0.1]/x", false, true},
		{"https://0.0.0.0/x", false, false},
		{"https://224.0.0.1/x", false, false},
		{"https://user@hooks.example.com/x", false, false},
		{"https://hooks.example.com/x#frag", false, false},
		{"hooks.example.com/x", false, false},
		{"https:///x", false, false},
		{"ftp://hooks.example.com/x", false, false},
		{"https://hooks.example.com/" + strings.Repeat("a", MaxURLLen), false, false},
	} {
		for _, p := range []struct {
			pol  URLPolicy
			want bool
		}{{prod, c.prod}, {test, c.test}} {
			_, err := p.pol.CheckURL(c.url)
			if (err == nil) != p.want {
				t.Errorf("%+v CheckURL(%.60s) = %v", p.pol, c.url, err)
			}
			if err != nil && errkind.Code(err) != CodeInvalidURL {
				t.Errorf("%.60s: code %q", c.url, errkind.Code(err))
			}
		}
	}
	if err := prod.Control("tcp", "127.0.0.1:443", nil); err == nil {
		t.Error("Control dials loopback")
	}
	if err := prod.Control("tcp6", "[fd12::1]:443", nil); err == nil {
		t.Error("Control dials a private address")
	}
	if err := prod.Control("tcp", "93.184.216.34:443", nil); err != nil {
		t.Errorf("Control refuses a public address: %v", err)
	}
	if err := prod.CheckAddr(netip.MustParseAddr("2606:4700::1111")); err != nil {
		t.Errorf("a public IPv6 address: %v", err)
	}
}

// TestRetry: waits double from Base with jitter in [d/2, d], stop at Cap,
// and the last attempt is at MaxAge.
func TestRetry(t *testing.T) {
	r := Retry{Base: 10 * time.Second, Cap: 160 * time.Second, MaxAge: time.Hour}
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for n := 1; n <= 8; n++ {
		d := min(r.Base<<(n-1), r.Cap)
		for range 200 {
			now := created.Add(time.Minute)
			next, ok := r.Next(n, created, now)
			if !ok || next.Sub(now) < d/2 || next.Sub(now) > d {
				t.Fatalf("attempt %d: next in %s, want [%s, %s]", n, next.Sub(now), d/2, d)
			}
		}
	}
	now := created.Add(time.Hour - time.Second)
	if next, ok := r.Next(3, created, now); !ok || !next.Equal(created.Add(time.Hour)) {
		t.Errorf("near the end: %s, %v", next, ok)
	}
	if _, ok := r.Next(3, created, created.Add(time.Hour)); ok {
		t.Error("a message past MaxAge is not failed")
	}
	// DefaultRetry attempts for a day.
	n, at := 1, created
	for {
		next, ok := DefaultRetry.Next(n, created, at)
		if !ok {
			break
		}
		n, at = n+1, next
	}
	if at.Sub(created) != 24*time.Hour || n < 15 || n > 30 {
		t.Errorf("DefaultRetry: %d attempts, the last at +%s", n, at.Sub(created))
	}
}

func TestPayload(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	evs := ScoreEvents(ScoreData{AgentID: "a", Score: 720, Tier: "STANDARD", PreviousScore: 700, PreviousTier: "STANDARD"}, at)
	if len(evs) != 1 || evs[0].Type != ScoreChanged {
		t.Fatalf("%+v", evs)
	}
	if evs := ScoreEvents(ScoreData{Score: 5, Tier: "NONE", PreviousScore: 5, PreviousTier: "NONE"}, at); len(evs) != 0 {
		t.Errorf("unchanged: %+v", evs)
	}
	b, err := HoldEvent(HoldData{TransactionID: "tx-1", ProviderID: "p", BuyerID: "b", State: "held", AmountCents: 100000, Currency: "USD", HoldCents: 42400}, at).Payload()
	want := `{"type":"hold.updated","timestamp":"2026-11-28T12:00:00Z","data":{"transaction_id":"tx-1","provider_id":"p","buyer_id":"b","state":"held","amount_cents":100000,"currency":"USD","hold_cents":42400,"released_cents":0,"score":0,"tier":"","escrow_modifier":""}}`
	if err != nil || string(b) != want {
		t.Errorf("payload %s, %v", b, err)
	}
}
