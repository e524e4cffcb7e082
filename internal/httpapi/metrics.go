package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics lives in its own registry, so two servers in one process (tests)
// never collide and nothing registered globally by a library leaks out.
type metrics struct {
	reg           *prometheus.Registry
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
	return m
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
