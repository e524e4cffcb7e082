package httpapi

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestHandlePage(t *testing.T) {
	h := newHarness(t, Options{})
	h.s.HandlePage("GET /{$}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<p>home</p>"))
	}))
	h.s.HandlePage("GET /boom", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("page panicked") }))

	r := h.do("GET", "/", nil)
	if r.code != 200 || string(r.body) != "<p>home</p>" || r.header.Get("X-Request-Id") == "" {
		t.Fatalf("page: %d %q, request id %q", r.code, r.body, r.header.Get("X-Request-Id"))
	}
	// The access log and the metrics name the page's pattern.
	if !strings.Contains(h.logs.String(), `"route":"GET /{$}"`) {
		t.Fatalf("access log: %s", h.logs)
	}
	if m := h.do("GET", "/metrics", nil); !strings.Contains(string(m.body), `route="GET /{$}"`) {
		t.Fatalf("metrics do not name the page route:\n%s", grep(m.body, "swarmscore_http_requests_total"))
	}
	// The API is unchanged, a path no one serves is still a problem, and a
	// page's wrong method is a 405 like the API's.
	if r := h.do("GET", "/swarmscore/agent-1", nil); r.code != 200 {
		t.Fatalf("API route: %d", r.code)
	}
	h.do("GET", "/nothing-here", nil).problem(t, "no-route", 404)
	if p := h.do("POST", "/", nil).problem(t, "method-not-allowed", 405); !strings.Contains(p.Detail, "GET") {
		t.Fatalf("405 detail %q", p.Detail)
	}
	// A panicking page is recovered and logged like a route.
	h.do("GET", "/boom", nil).problem(t, "internal", 500)
	if !strings.Contains(h.logs.String(), "page panicked") {
		t.Fatal("the panic was not logged")
	}
}

func TestSecureRequest(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	cases := []struct {
		name    string
		proxies []netip.Prefix
		peer    string
		tls     bool
		proto   []string
		want    bool
	}{
		{"plain HTTP", nil, "192.0.2.1:5000", false, nil, false},
		{"TLS", nil, "192.0.2.1:5000", true, nil, true},
		{"no proxies: the header is ignored", nil, "10.1.2.3:5000", false, []string{"https"}, false},
		{"untrusted peer: the header is ignored", proxies, "192.0.2.1:5000", false, []string{"https"}, false},
		{"trusted proxy says https", proxies, "10.1.2.3:5000", false, []string{"HTTPS"}, true},
		{"trusted proxy says http", proxies, "10.1.2.3:5000", false, []string{"http"}, false},
		{"the last value counts", proxies, "10.1.2.3:5000", false, []string{"https, http"}, false},
		{"the last line counts", proxies, "10.1.2.3:5000", false, []string{"http", "https"}, true},
		{"trusted proxy, no header", proxies, "10.1.2.3:5000", false, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &Server{proxies: c.proxies}
			r := httptest.NewRequest("GET", "/operator", nil)
			r.RemoteAddr = c.peer
			if c.tls {
				r.TLS = &tls.ConnectionState{}
			}
			for _, v := range c.proto {
				r.Header.Add("X-Forwarded-Proto", v)
			}
			if got := s.SecureRequest(r); got != c.want {
				t.Fatalf("SecureRequest = %v, want %v", got, c.want)
			}
		})
	}
}

func TestAllowPublic(t *testing.T) {
	h := newHarness(t, Options{RateLimit: 1, RateBurst: 2})
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.1:5000"
	for i := range 2 {
		if ok, _ := h.s.AllowPublic(r); !ok {
			t.Fatalf("request %d refused within the burst", i)
		}
	}
	if ok, wait := h.s.AllowPublic(r); ok || wait <= 0 {
		t.Fatalf("over the burst: ok %v, wait %s", ok, wait)
	}
	// The page's requests and the API's share the client's bucket.
	if resp := h.do("GET", "/swarmscore/agent-1/certificate", nil); resp.code != 429 {
		t.Fatalf("API after the page used the bucket: %d", resp.code)
	}
	if ip := h.s.ClientIP(r); ip != "192.0.2.1" {
		t.Fatalf("ClientIP %q", ip)
	}
	if ok, _ := newHarness(t, Options{}).s.AllowPublic(r); !ok {
		t.Fatal("refused without a rate limit")
	}
}

func TestCertificateCaching(t *testing.T) {
	h := newHarness(t, Options{})
	r := h.do("GET", "/swarmscore/agent-1/certificate", nil)
	got := http.Header{}
	h.s.CertificateCaching(got, &h.f.cert)
	for _, k := range []string{"Cache-Control", "Expires"} {
		if got.Get(k) != r.header.Get(k) {
			t.Fatalf("%s: CertificateCaching %q, the route %q", k, got.Get(k), r.header.Get(k))
		}
	}
	if got.Get("Cache-Control") == "" || got.Get("ETag") != "" {
		t.Fatalf("CertificateCaching set %v", got)
	}
}
