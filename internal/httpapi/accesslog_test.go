package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestAccessLogAsSlog: the access log line appended by hand is, byte for
// byte, what slog's JSON handler writes for the same record, whatever the
// strings (escapes, control characters, invalid UTF-8, U+2028), numbers and
// time zone.
func TestAccessLogAsSlog(t *testing.T) {
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("", 5*3600+30*60), time.FixedZone("", -7*3600)}
	strs := []string{"", "plain", "/agents/agent-1", `q"u\o"te`, "tab\tnl\ncr\r", "\x00\x01\x1f\x7f", "<&>'", "é中文🙂",
		"bad\xffutf8\xc3", "line\u2028para\u2029", "%2F..%00", strings.Repeat("x", 300)}
	floats := []float64{0, 0.001, 0.123, 1, 12.5, 999.999, 1e6 / 1000, 123456789.123, 1e-7, 5e21, math.Inf(1), math.NaN()}
	rnd := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		if rnd.IntN(3) == 0 {
			b := make([]byte, rnd.IntN(12))
			for i := range b {
				b[i] = byte(rnd.IntN(256))
			}
			return string(b)
		}
		return strs[rnd.IntN(len(strs))]
	}
	for i := range 3000 {
		now := time.Now().In(zones[i%len(zones)]).Add(time.Duration(rnd.Int64N(int64(time.Hour))))
		if i%7 == 0 {
			now = now.Truncate(time.Second) // no fraction: RFC3339Nano drops it
		}
		l := accessLine{requestID: str(), method: str(), route: str(), path: str(), status: rnd.IntN(600), bytes: rnd.Int64N(1 << 40),
			durationMS: floats[rnd.IntN(len(floats))], client: str()}
		if i%3 == 0 {
			l.durationMS = float64(rnd.Int64N(1e9)) / 1000
		}
		if i%4 == 0 {
			l.operator = str()
		}
		if i%5 == 0 {
			l.rateLimited, l.heldBack = true, rnd.Int64N(1e6)
		}
		var want bytes.Buffer
		rec := slog.NewRecord(now, slog.LevelInfo, "request", 0)
		var buf [10]slog.Attr
		rec.AddAttrs(l.attrs(buf[:0])...)
		if err := slog.NewJSONHandler(&want, nil).Handle(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		if got := appendAccessLine(nil, now, &l); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("line %d:\n got %s\nwant %s", i, got, want.Bytes())
		}
	}
}

// TestAccessLogOption: with Options.AccessLog, each request's line goes
// there, in one write, with the fields the Logger would have logged; the
// Logger's level still decides.
func TestAccessLogOption(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelWarn} {
		var viaSlog, byHand bytes.Buffer
		h := newHarness(t, Options{})
		a := New(every(h.f), Options{Logger: slog.New(slog.NewJSONHandler(&viaSlog, &slog.HandlerOptions{Level: level}))})
		b := New(every(h.f), Options{Logger: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: level})), AccessLog: &byHand})
		for _, s := range []*Server{a, b} {
			for _, path := range []string{"/healthz", "/no/such/route", "/swarmscore/bad%20id/certificate"} {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Header.Set("X-Request-ID", "req-1")
				s.ServeHTTP(httptest.NewRecorder(), req)
			}
		}
		strip := func(s string) string { // time and duration differ between the two servers' requests
			var out []string
			for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
				if line == "" {
					continue
				}
				f := strings.Split(line, ",")
				out = append(out, strings.Join(append(f[1:9:9], f[10:]...), ","))
			}
			return strings.Join(out, "\n")
		}
		if strip(viaSlog.String()) != strip(byHand.String()) {
			t.Fatalf("level %v: lines differ:\nslog %s\nhand %s", level, viaSlog.String(), byHand.String())
		}
		if n := strings.Count(byHand.String(), "\n"); (level == slog.LevelInfo) != (n == 3) {
			t.Fatalf("level %v: %d lines", level, n)
		}
	}
}
