package httpapi

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/swarmscore/swarmscore/internal/service"
)

// metrics lives in its own registry, so two servers in one process (tests)
// never collide and nothing registered globally by a library leaks out.
type metrics struct {
	reg              *prometheus.Registry
	unmatched        *routeMetrics // requests no route took
	preflight        *routeMetrics // CORS preflights of a cross-origin route
	requests         *prometheus.CounterVec
	latency          *prometheus.HistogramVec
	eventsIn         prometheus.Counter
	eventsDup        prometheus.Counter
	eventsSuperseded prometheus.Counter
	eventsBad        prometheus.Counter
	passports        prometheus.Counter
	verifications    *prometheus.CounterVec
}

// newMetrics registers the server's metrics; certificates is read at every
// scrape.
func newMetrics(certificates func() service.CertificateStats) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "swarmscore_http_requests_total",
			Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "swarmscore_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route"}),
		eventsIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "swarmscore_events_accepted_total",
			Help: "Events accepted over HTTP (new events and status transitions).",
		}),
		eventsDup: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "swarmscore_events_duplicate_total",
			Help: "Events received over HTTP that were already recorded unchanged.",
		}),
		eventsSuperseded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "swarmscore_events_superseded_total",
			Help: "Events received over HTTP that reported an earlier status than the one recorded (no-ops).",
		}),
		eventsBad: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "swarmscore_events_rejected_total",
			Help: "Events rejected over HTTP (invalid, conflicting or forbidden).",
		}),
		passports: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "swarmscore_passports_issued_total",
			Help: "Execution Passports signed (cache hits re-serve a passport and do not count).",
		}),
		verifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "swarmscore_verifications_total",
			Help: "Passport verifications by result: valid, invalid, or tampered.",
		}, []string{"result"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.eventsIn, m.eventsDup, m.eventsSuperseded, m.eventsBad, m.passports, m.verifications,
		newCertificateCollector(certificates),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, r := range []string{"valid", "invalid", "tampered"} {
		m.verifications.WithLabelValues(r)
	}
	m.unmatched = m.route("unmatched")
	m.preflight = m.route("OPTIONS (CORS preflight)")
	return m
}

// routeMetrics are one route's series, looked up once: resolving label
// values (hashing them, formatting the status) on every request cost more
// than counting it.
type routeMetrics struct {
	name    string
	m       *metrics
	latency prometheus.Observer
	codes   [600]atomic.Pointer[prometheus.Counter] // by status, created on first use
}

func (m *metrics) route(name string) *routeMetrics {
	return &routeMetrics{name: name, m: m, latency: m.latency.WithLabelValues(name)}
}

// observe counts one request that ended with status after d.
func (r *routeMetrics) observe(status int, d time.Duration) {
	r.latency.Observe(d.Seconds())
	if status < 0 || status >= len(r.codes) {
		r.m.requests.WithLabelValues(r.name, strconv.Itoa(status)).Inc()
		return
	}
	c := r.codes[status].Load()
	if c == nil {
		v := r.m.requests.WithLabelValues(r.name, strconv.Itoa(status))
		c = &v
		r.codes[status].Store(c)
	}
	(*c).Inc()
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// certificateCollector exports how certificates were served from the
// process's memory, and the state of the back end's cache watch when it
// reports one, read from the service at each scrape.
type certificateCollector struct {
	stats                                   func() service.CertificateStats
	fromMemory, stampReads, passportReads   *prometheus.Desc
	live, connects, disconnects, heartbeats *prometheus.Desc
	replicaReads                            *prometheus.Desc
}

func newCertificateCollector(stats func() service.CertificateStats) *certificateCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &certificateCollector{
		stats:         stats,
		fromMemory:    d("swarmscore_certificates_from_memory_total", "Certificates served from this process's memory with no database query."),
		stampReads:    d("swarmscore_certificate_stamp_reads_total", "Cache stamps read from the database to validate a remembered certificate or find the stored one."),
		passportReads: d("swarmscore_certificate_passport_reads_total", "Stored passports read from the database: issued by another process, or no longer remembered by this one."),
		live: d("swarmscore_cache_listener_live",
			"1 while the database's cache listener vouches for remembered certificates; 0 while every certificate request reads the stamp. Absent before the listener starts, and for back ends without one."),
		connects:    d("swarmscore_cache_listener_connects_total", "Cache listener subscriptions: the first and every reconnection."),
		disconnects: d("swarmscore_cache_listener_disconnects_total", "Cache listener connections lost or abandoned."),
		heartbeats:  d("swarmscore_cache_listener_missed_heartbeats_total", "Cache listener heartbeats that did not come back in time."),
		replicaReads: prometheus.NewDesc("swarmscore_db_replica_reads_total",
			"Public reads that may go to the read replica (serve --db-read), by where they went: replica; lagged (primary: the replica had not replayed an invalidation this process has seen, or the cache listener was down); failed (primary after the replica failed); missed (primary after the replica found nothing). Absent without a replica.",
			[]string{"to"}, nil),
	}
}

func (c *certificateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.fromMemory, c.stampReads, c.passportReads, c.live, c.connects, c.disconnects, c.heartbeats, c.replicaReads} {
		ch <- d
	}
}

func (c *certificateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	counter(c.fromMemory, s.FromMemory)
	counter(c.stampReads, s.StampReads)
	counter(c.passportReads, s.PassportReads)
	if w := s.Watch; w != nil {
		live := 0.0
		if w.Live {
			live = 1
		}
		ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, live)
		counter(c.connects, w.Connects)
		counter(c.disconnects, w.Disconnects)
		counter(c.heartbeats, w.MissedHeartbeats)
	}
	if r := s.Replica; r != nil {
		for _, v := range []struct {
			to string
			n  uint64
		}{{"replica", r.Replica}, {"lagged", r.Lagged}, {"failed", r.Failed}, {"missed", r.Missed}} {
			ch <- prometheus.MustNewConstMetric(c.replicaReads, prometheus.CounterValue, float64(v.n), v.to)
		}
	}
}
