package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/swarmscore/swarmscore/internal/service"
)

// keysMaxAge is how long a client may keep the key set: a rotation adds a
// key that signs at once, so verifiers must not keep a set long (and should
// fetch it again when a passport names a key they lack).
const keysMaxAge = "60"

// keys serves the JWK set (RFC 7517) of the public keys whose passports may
// still be valid, so anyone can verify Ed25519 passports offline, with no
// shared secret. HMAC keys are never in it.
func (s *Server) keys(w http.ResponseWriter, r *http.Request) {
	writeKeys(w, marshal(s.svc.Keys.PublicKeys(r.Context())))
}

// keyHistory serves every Ed25519 key the deployment ever signed with,
// with the interval it signed in and its state: a JWK set whose keys carry
// their history (passport.KeyHistory), so that archived passports and
// checkpoints verify after their key is retired. It changes when the
// keyring does, as the key set does.
func (s *Server) keyHistory(w http.ResponseWriter, r *http.Request) {
	writeKeys(w, marshal(s.svc.Keys.KeyHistory(r.Context())))
}

// writeKeys writes a JWK set b, cacheable for keysMaxAge.
func writeKeys(w http.ResponseWriter, b []byte) {
	h := w.Header()
	h["Cache-Control"] = []string{"public, max-age=" + keysMaxAge}
	h["Content-Type"] = []string{"application/jwk-set+json"} // RFC 7517 §8.5
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// keyCollector exports the active signing key's id, algorithm and age, and
// whether it is due for rotation (spec §8.1: annually), read from the
// service at each scrape.
type keyCollector struct {
	stats                func() service.KeyringStats
	info, age, rotateDue *prometheus.Desc
}

func newKeyCollector(stats func() service.KeyringStats) *keyCollector {
	return &keyCollector{
		stats: stats,
		info:  prometheus.NewDesc("swarmscore_signing_key_info", "The key that signs new passports: 1, labelled with its id and algorithm.", []string{"kid", "alg"}, nil),
		age: prometheus.NewDesc("swarmscore_signing_key_age_seconds",
			"Age of the active signing key. Absent for a static key (SWARMSCORE_SIGNING_KEY), whose creation time is not known.", nil, nil),
		rotateDue: prometheus.NewDesc("swarmscore_signing_key_rotation_due",
			"1 when the active signing key is older than a year (spec §8.1 asks for a yearly rotation: swarmscore key rotate), else 0. Absent for a static key.", nil, nil),
	}
}

func (c *keyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.info
	ch <- c.age
	ch <- c.rotateDue
}

func (c *keyCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	if s.ActiveID == "" {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.info, prometheus.GaugeValue, 1, s.ActiveID, s.ActiveAlg)
	if s.ActiveSince.IsZero() {
		return
	}
	age := time.Since(s.ActiveSince)
	due := 0.0
	if age > service.KeyRotationAge {
		due = 1
	}
	ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, age.Seconds())
	ch <- prometheus.MustNewConstMetric(c.rotateDue, prometheus.GaugeValue, due)
}
