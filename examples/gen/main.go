// Command gen writes examples/events.ndjson: a marketplace's export of 30
// agents' Conduit sessions and AP2 transactions over the 120 days before an
// anchor date, in the format `swarmscore ingest` reads, so that a fresh
// `swarmscore serve` has something to show.
//
//	go run ./examples/gen > examples/events.ndjson              # the committed file
//	go run ./examples/gen -anchor now > examples/events.ndjson  # the same export, ending now
//
// The output is a function of the anchor alone (fixed seeds): the agents,
// ids, buyers, amounts and outcomes are the same for every anchor, and every
// time is the anchor minus a fixed offset. Scores count the 90 days before
// the instant they are computed for, so the committed file shows the tiers
// below when ingested within 30 days of its anchor (defaultAnchor); after
// that, re-date it with -anchor now. Events are never later than the anchor,
// so an anchor in the past is always accepted.
//
// The agents, by what they show:
//   - elite: ELITE, high volume and success in both dimensions;
//   - standard: STANDARD, as busy as the elite agents but with 80–84%
//     success;
//   - building: NONE, good rates but too little volume yet;
//   - new: NONE, a handful of events in the last two weeks;
//   - failing: NONE, about half of their Conduit sessions FAILED;
//   - disputed: NONE, many AP2 transactions DISPUTED or REFUNDED;
//   - dormant: score 0, every event older than the 90-day window.
//
// A few sessions and transactions are reported twice, first in progress
// (RUNNING, HELD) and then final; a few were still in progress at the
// anchor; and the export ends with a re-sent older page, whose earlier
// statuses `ingest` counts as superseded.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/score"
)

// defaultAnchor is the committed file's anchor: its latest event ends
// shortly before it.
const defaultAnchor = "2026-11-28T00:00:00Z"

// kind is what an agent shows; see the package comment.
type kind string

const (
	elite    kind = "elite"
	standard kind = "standard"
	building kind = "building"
	newcomer kind = "new"
	failing  kind = "failing"
	disputed kind = "disputed"
	dormant  kind = "dormant"
)

// profile is one agent of the export.
type profile struct {
	ID   string
	Kind kind
	// Tier is the agent's tier when the export is ingested within 30 days
	// of its anchor.
	Tier score.Tier
	// Conduit and AP2 are the agent's final sessions and transactions;
	// ConduitOK and AP2OK the share that succeeded.
	Conduit, AP2     int
	ConduitOK, AP2OK float64
	// Disputes is the share of the failed AP2 transactions DISPUTED (the
	// rest are REFUNDED).
	Disputes float64
	// From and To bound the agent's events, in days before the anchor.
	From, To float64
}

// profiles are the 30 agents.
var profiles = []profile{
	{"atlas-research", elite, score.TierElite, 120, 60, 0.983, 0.983, 0.5, 120, 0},
	{"quill-legal-drafting", elite, score.TierElite, 120, 60, 0.975, 0.967, 0.5, 118, 0},
	{"nimbus-translate", elite, score.TierElite, 122, 61, 0.975, 0.984, 0.5, 120, 0},
	{"orbit-data-cleaning", standard, score.TierStandard, 120, 60, 0.842, 0.8, 0.4, 120, 0},
	{"ember-code-review", standard, score.TierStandard, 120, 60, 0.8, 0.833, 0.3, 117, 0},
	{"harbor-logistics", standard, score.TierStandard, 120, 60, 0.825, 0.817, 0.5, 119, 1},
	{"sage-tax-prep", standard, score.TierStandard, 120, 60, 0.817, 0.833, 0.2, 120, 0},
	{"lumen-summarise", building, score.TierNone, 30, 8, 0.967, 1, 0.5, 80, 1},
	{"fjord-booking", building, score.TierNone, 25, 15, 0.92, 0.933, 0.5, 100, 2},
	{"kestrel-scheduler", building, score.TierNone, 40, 6, 0.95, 0.833, 0.5, 110, 0},
	{"delta-invoice-ocr", building, score.TierNone, 20, 10, 0.9, 0.9, 0.5, 70, 3},
	{"willow-support", building, score.TierNone, 30, 0, 0.967, 0, 0, 90, 0},
	{"cobalt-qa-tester", building, score.TierNone, 25, 8, 0.92, 0.875, 0.5, 60, 1},
	{"bramble-ledger-sync", building, score.TierNone, 35, 20, 0.857, 0.9, 0.5, 85, 1},
	{"sprout-onboarding", newcomer, score.TierNone, 6, 1, 1, 1, 0, 12, 1},
	{"newt-transcribe", newcomer, score.TierNone, 4, 0, 0.75, 0, 0, 9, 0},
	{"juniper-copywriter", newcomer, score.TierNone, 8, 2, 0.875, 1, 0, 14, 2},
	{"acorn-bookkeeping", newcomer, score.TierNone, 3, 3, 1, 0.667, 1, 6, 0},
	{"pebble-image-tagger", newcomer, score.TierNone, 5, 0, 1, 0, 0, 3, 0},
	{"rusty-scraper", failing, score.TierNone, 40, 8, 0.45, 0.625, 0.5, 110, 0},
	{"glitch-deploy-bot", failing, score.TierNone, 50, 12, 0.5, 0.583, 0.5, 120, 1},
	{"static-voice", failing, score.TierNone, 35, 0, 0.343, 0, 0, 95, 0},
	{"tangle-etl", failing, score.TierNone, 45, 15, 0.6, 0.467, 0.3, 100, 2},
	{"mirage-ads-buyer", disputed, score.TierNone, 50, 40, 0.94, 0.55, 0.9, 120, 0},
	{"shadow-reseller", disputed, score.TierNone, 30, 45, 0.9, 0.489, 0.8, 115, 0},
	{"brass-ticket-broker", disputed, score.TierNone, 40, 35, 0.95, 0.6, 1, 105, 3},
	{"fossil-archiver", dormant, score.TierNone, 25, 10, 0.96, 0.9, 0.5, 120, 95},
	{"echo-legacy-crm", dormant, score.TierNone, 30, 5, 0.9, 1, 0.5, 119, 100},
	{"winter-hibernate", dormant, score.TierNone, 20, 8, 1, 0.875, 0.5, 115, 92},
	{"relic-fax-gateway", dormant, score.TierNone, 15, 4, 0.867, 0.75, 0.5, 120, 105},
}

// buyers are the marketplace's buyers; each agent draws from all of them.
var buyers = func() []string {
	var b []string
	for _, org := range []string{"acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "tyrell", "cyberdyne", "soylent",
		"wonka", "gringotts", "oscorp", "aperture", "massive-dynamic", "vandelay", "prestige", "dunder", "pied-piper", "monarch"} {
		b = append(b, "buyer-"+org, "buyer-"+org+"-eu")
	}
	return b
}()

func main() {
	anchorFlag := flag.String("anchor", defaultAnchor, `the instant the export ends (RFC 3339), or "now"`)
	out := flag.String("o", "-", "the file to write ('-': standard output)")
	flag.Parse()
	anchor, err := parseAnchor(*anchorFlag, time.Now())
	if err == nil {
		err = write(*out, anchor)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(2)
	}
}

// parseAnchor reads -anchor: RFC 3339, or "now" (to the second).
func parseAnchor(s string, now time.Time) (time.Time, error) {
	if s == "now" {
		return now.UTC().Truncate(time.Second), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf(`-anchor %q: want RFC 3339 or "now"`, s)
	}
	return t.UTC().Truncate(time.Second), nil
}

func write(path string, anchor time.Time) error {
	var w io.Writer = os.Stdout
	if path != "-" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	generate(bw, anchor)
	return bw.Flush()
}

// line is one line of the export, at the instant the marketplace recorded
// it.
type line struct {
	at   time.Time
	text string
}

// generate writes the export ending at anchor.
func generate(w io.Writer, anchor time.Time) {
	var lines, resent []line
	for _, p := range profiles {
		ls, rs := agentLines(p, anchor)
		lines = append(lines, ls...)
		resent = append(resent, rs...)
	}
	// In the order the marketplace recorded them; the sort is stable, so
	// lines of one instant keep their order (in progress before final).
	slices.SortStableFunc(lines, func(a, b line) int { return a.at.Compare(b.at) })
	for _, l := range append(lines, resent...) {
		io.WriteString(w, l.text+"\n")
	}
}

// agentLines returns an agent's lines, and the lines the export's re-sent
// page repeats for it.
func agentLines(p profile, anchor time.Time) (lines, resent []line) {
	h := fnv.New64a()
	h.Write([]byte(p.ID))
	rng := rand.New(rand.NewPCG(28, h.Sum64()))
	// When each event starts: from p.From to p.To days before the anchor,
	// the first at p.From, denser towards the anchor (a marketplace
	// growing fast: the density rises with the square of the time).
	starts := func(n int) []time.Time {
		ts := make([]time.Time, n)
		for i := range ts {
			days := p.From - (p.From-p.To)*math.Cbrt(rng.Float64())
			if i == 0 {
				days = p.From
			}
			ts[i] = anchor.Add(-time.Duration(days * float64(24*time.Hour))).Truncate(time.Second)
			if latestStart := anchor.Add(-2 * time.Hour); ts[i].After(latestStart) {
				ts[i] = latestStart
			}
		}
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		return ts
	}
	// Exactly round(n*share) of n succeed, in random places.
	outcomes := func(n int, share float64) []bool {
		ok := make([]bool, n)
		for i := range int(math.Round(float64(n) * share)) {
			ok[i] = true
		}
		rng.Shuffle(n, func(i, j int) { ok[i], ok[j] = ok[j], ok[i] })
		return ok
	}
	latest := anchor.Add(-5 * time.Minute)
	end := func(start time.Time, d time.Duration) time.Time {
		if e := start.Add(d); e.Before(latest) {
			return e
		}
		return latest
	}
	prefix := strings.Split(p.ID, "-")[0]

	ok := outcomes(p.Conduit, p.ConduitOK)
	for i, start := range starts(p.Conduit) {
		id := fmt.Sprintf("cs-%s-%04d", prefix, i+1)
		buyer := ""
		if rng.IntN(5) > 0 { // buyer_id is optional for Conduit sessions
			buyer = buyers[rng.IntN(len(buyers))]
		}
		status := "VERIFIED"
		if !ok[i] {
			status = "FAILED"
		}
		done := end(start, time.Duration(2+rng.IntN(38))*time.Minute+time.Duration(rng.IntN(60))*time.Second)
		if i%25 == 7 { // reported when it started, then when it ended
			lines = append(lines, line{start, conduit(id, p.ID, buyer, "RUNNING", start, time.Time{})})
		}
		final := conduit(id, p.ID, buyer, status, start, done)
		lines = append(lines, line{done, final})
		if i%60 == 11 && status == "VERIFIED" {
			resent = append(resent, line{done, conduit(id, p.ID, buyer, "RUNNING", start, time.Time{})})
		}
	}

	ok = outcomes(p.AP2, p.AP2OK)
	failed := 0
	for i, start := range starts(p.AP2) {
		id := fmt.Sprintf("ap2-%s-%04d", prefix, i+1)
		buyer := buyers[rng.IntN(len(buyers))]
		// From $10 to $2,500, log-uniform, in cents.
		cents := int64(math.Round(1000 * math.Pow(250, rng.Float64())))
		status := "SETTLED"
		if !ok[i] {
			status = "REFUNDED"
			if float64(failed%10) < p.Disputes*10 {
				status = "DISPUTED"
			}
			failed++
		}
		settled := end(start, time.Duration(1+rng.IntN(71))*time.Hour+time.Duration(rng.IntN(3600))*time.Second)
		if i%20 == 3 { // escrow held first, settled later
			lines = append(lines, line{start, ap2(id, p.ID, buyer, "HELD", cents, start, time.Time{})})
		}
		lines = append(lines, line{settled, ap2(id, p.ID, buyer, status, cents, start, settled)})
		if i%40 == 17 && status == "SETTLED" {
			resent = append(resent, line{settled, ap2(id, p.ID, buyer, "EXECUTING", cents, start, time.Time{})})
		}
	}

	// Still in progress at the anchor, for the agents working now: not
	// counted until they end.
	if p.To == 0 && p.Kind != newcomer {
		start := anchor.Add(-time.Duration(20+rng.IntN(90)) * time.Minute)
		id := fmt.Sprintf("cs-%s-%04d", prefix, p.Conduit+1)
		lines = append(lines, line{start, conduit(id, p.ID, buyers[rng.IntN(len(buyers))], "RUNNING", start, time.Time{})})
		if p.AP2 > 0 {
			start := anchor.Add(-time.Duration(2+rng.IntN(20)) * time.Hour)
			id := fmt.Sprintf("ap2-%s-%04d", prefix, p.AP2+1)
			lines = append(lines, line{start, ap2(id, p.ID, buyers[rng.IntN(len(buyers))], "HELD", 25000, start, time.Time{})})
		}
	}
	return lines, resent
}

const rfc3339 = "2006-01-02T15:04:05Z"

// conduit is a conduit_session line; done is zero while it runs.
func conduit(id, agent, buyer, status string, start, done time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":"conduit_session","id":%q,"agent_id":%q`, id, agent)
	if buyer != "" {
		fmt.Fprintf(&b, `,"buyer_id":%q`, buyer)
	}
	fmt.Fprintf(&b, `,"status":%q,"started_at":%q`, status, start.Format(rfc3339))
	if !done.IsZero() {
		fmt.Fprintf(&b, `,"completed_at":%q`, done.Format(rfc3339))
	}
	b.WriteString("}")
	return b.String()
}

// ap2 is an ap2_transaction line; settled is zero while it is open.
func ap2(id, provider, buyer, status string, cents int64, start, settled time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":"ap2_transaction","id":%q,"provider_id":%q,"buyer_id":%q,"status":%q,"escrow_amount_cents":%d,"started_at":%q`,
		id, provider, buyer, status, cents, start.Format(rfc3339))
	if !settled.IsZero() {
		fmt.Fprintf(&b, `,"settled_at":%q`, settled.Format(rfc3339))
	}
	b.WriteString("}")
	return b.String()
}
