package httpapi

import (
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestClientIP(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	cases := []struct {
		name    string
		proxies []netip.Prefix
		peer    string
		xff     []string
		want    string
	}{
		{"no proxies: the header is ignored", nil, "192.0.2.1:5000", []string{"198.51.100.7"}, "192.0.2.1"},
		{"untrusted peer: the header is ignored", proxies, "192.0.2.1:5000", []string{"198.51.100.7"}, "192.0.2.1"},
		{"trusted peer, no header", proxies, "10.1.2.3:5000", nil, "10.1.2.3"},
		{"trusted peer: the hop it saw", proxies, "10.1.2.3:5000", []string{"198.51.100.7"}, "198.51.100.7"},
		{"a forged left end is not believed", proxies, "10.1.2.3:5000", []string{"203.0.113.9, 198.51.100.7"}, "198.51.100.7"},
		{"trusted hops are skipped", proxies, "10.1.2.3:5000", []string{"203.0.113.9, 198.51.100.7, 10.9.9.9"}, "198.51.100.7"},
		{"hops split over header lines", proxies, "10.1.2.3:5000", []string{"203.0.113.9", "198.51.100.7", "10.9.9.9"}, "198.51.100.7"},
		{"all hops trusted: the leftmost", proxies, "10.1.2.3:5000", []string{"10.4.4.4, 10.5.5.5"}, "10.4.4.4"},
		{"a malformed hop stops the walk", proxies, "10.1.2.3:5000", []string{"198.51.100.7, not-an-ip, 10.9.9.9"}, "10.9.9.9"},
		{"IPv6 trusted peer", proxies, "[::1]:5000", []string{"2001:db8::1"}, "2001:db8::1"},
		{"IPv4-mapped hop", proxies, "10.1.2.3:5000", []string{"::ffff:198.51.100.7"}, "198.51.100.7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &Server{proxies: c.proxies}
			r := httptest.NewRequest("GET", "/swarmscore/agent-1", nil)
			r.RemoteAddr = c.peer
			for _, v := range c.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := s.clientIP(r); got != c.want {
				t.Fatalf("clientIP = %q, want %q", got, c.want)
			}
		})
	}
}

func TestRateLimitBehindProxy(t *testing.T) {
	h := newHarness(t, Options{RateLimit: 1, RateBurst: 1, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	do := func(client string) int {
		r := httptest.NewRequest("GET", "/swarmscore/agent-1/certificate", nil)
		r.RemoteAddr = "127.0.0.1:40000"
		r.Header.Set("X-Forwarded-For", client)
		w := httptest.NewRecorder()
		h.s.ServeHTTP(w, r)
		return w.Code
	}
	if code := do("198.51.100.1"); code != 200 {
		t.Fatalf("first request: %d", code)
	}
	if code := do("198.51.100.1"); code != 429 {
		t.Fatalf("second request of one client through the proxy: %d, want 429", code)
	}
	if code := do("198.51.100.2"); code != 200 {
		t.Fatalf("another client behind the same proxy: %d, want 200", code)
	}
	if !strings.Contains(h.logs.String(), `"client":"198.51.100.2"`) {
		t.Fatal("the access log does not name the forwarded client")
	}
}
