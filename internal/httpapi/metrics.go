package httpapi

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics lives in its own registry, so two servers in one process (tests)
// never collide and nothing registered globally by a library leaks out.
type metrics struct {
	reg           *prometheus.Registry
	unmatched     *routeMetrics // requests no route took
	requests      *prometheus.CounterVec
	latency       *prometheus.HistogramVec
	eventsIn      prometheus.Counter
	eventsDup     prometheus.Counter
	eventsBad     prometheus.Counter
	passports     prometheus.Counter
	verifications *prometheus.CounterVec
}

func newMetrics() *metrics {
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
	m.reg.MustRegister(m.requests, m.latency, m.eventsIn, m.eventsDup, m.eventsBad, m.passports, m.verifications,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, r := range []string{"valid", "invalid", "tampered"} {
		m.verifications.WithLabelValues(r)
	}
	m.unmatched = m.route("unmatched")
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
