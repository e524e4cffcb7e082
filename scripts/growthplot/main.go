// Command growthplot turns the output of the growth benchmarks
// (BenchmarkGrowth of internal/store/sqlite and internal/store/postgres,
// storetest.Growth) into the table and the plot of docs/growth.md:
//
//	go run ./scripts/growthplot -in docs/growth.txt -svg docs/growth.svg > table.md
//
// It reads `go test -bench` output (the "pkg:" lines say which back end the
// benchmark lines after them belong to), takes the median of repeated
// lines, prints a Markdown table and writes an SVG of four log-log panels
// (ingest, recompute-all, signals, lookup against the ledger's size), each
// back end's figure drawn solid and its baseline dashed.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	in := flag.String("in", "docs/growth.txt", "benchmark output to read")
	svg := flag.String("svg", "docs/growth.svg", "SVG file to write")
	flag.Parse()
	f, err := os.Open(*in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "growthplot:", err)
		os.Exit(1)
	}
	defer f.Close()
	m, err := parse(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "growthplot:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*svg, []byte(plot(m)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "growthplot:", err)
		os.Exit(1)
	}
	fmt.Print(table(m))
}

// key names one figure: back end, size, benchmark (ingest, ingest-raw,
// recompute, …).
type key struct {
	backend string
	events  int
	bench   string
}

// measures holds the median of every figure read.
type measures map[key]float64

var (
	pkgLine   = regexp.MustCompile(`^pkg: \S+/store/(sqlite|postgres)$`)
	benchLine = regexp.MustCompile(`^BenchmarkGrowth/events=(\d+)/([a-z-]+)-\d+\s+\d+\s+([\d.]+) ns/op(?:\s+([\d.]+) (\S+))?`)
)

// parse reads benchmark output. A figure is events/s for ingest, seconds
// for recompute and signals, µs per lookup for lookup.
func parse(r io.Reader) (measures, error) {
	all := map[key][]float64{}
	backend := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := pkgLine.FindStringSubmatch(line); m != nil {
			backend = map[string]string{"sqlite": "SQLite", "postgres": "PostgreSQL"}[m[1]]
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if backend == "" {
			return nil, fmt.Errorf("benchmark line before any pkg: line: %s", line)
		}
		events, _ := strconv.Atoi(m[1])
		ns, _ := strconv.ParseFloat(m[3], 64)
		v := ns / 1e9
		if m[5] == "events/s" || m[5] == "µs/lookup" {
			v, _ = strconv.ParseFloat(m[4], 64)
		}
		k := key{backend, events, m[2]}
		all[k] = append(all[k], v)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("no BenchmarkGrowth lines")
	}
	out := measures{}
	for k, vs := range all {
		slices.Sort(vs)
		out[k] = vs[len(vs)/2]
	}
	return out, nil
}

func (m measures) backends() []string {
	var out []string
	for _, b := range []string{"SQLite", "PostgreSQL"} {
		for k := range m {
			if k.backend == b {
				out = append(out, b)
				break
			}
		}
	}
	return out
}

func (m measures) sizes() []int {
	var out []int
	for k := range m {
		if !slices.Contains(out, k.events) {
			out = append(out, k.events)
		}
	}
	slices.Sort(out)
	return out
}

// panel is one measured operation and its baseline.
type panel struct {
	title, bench, base, unit string
	higherBetter             bool
}

var panels = []panel{
	{"Ingest (Store.Ingest, batches of 1,000)", "ingest", "ingest-raw", "events/s", true},
	{"Recompute all (RecomputeAll)", "recompute", "recompute-groupby", "s", false},
	{"Signals (every agent's figures)", "signals", "signals-groupby", "s", false},
	{"Cached score lookup", "lookup", "lookup-pk", "µs", false},
}

// table is the Markdown table: one row per size and back end, each figure
// with its baseline and their ratio (figure ÷ baseline for times,
// baseline ÷ figure for rates: above 1 is slower than the baseline).
func table(m measures) string {
	var b strings.Builder
	b.WriteString("| events | back end |")
	for _, p := range panels {
		fmt.Fprintf(&b, " %s (%s) | baseline | × |", p.bench, p.unit)
	}
	b.WriteString("\n|---:|---|")
	for range panels {
		b.WriteString("---:|---:|---:|")
	}
	b.WriteString("\n")
	for _, n := range m.sizes() {
		for _, be := range m.backends() {
			fmt.Fprintf(&b, "| %s | %s |", group(n), be)
			for _, p := range panels {
				v, ok1 := m[key{be, n, p.bench}]
				base, ok2 := m[key{be, n, p.base}]
				if !ok1 || !ok2 {
					b.WriteString(" – | – | – |")
					continue
				}
				ratio := v / base
				if p.higherBetter {
					ratio = base / v
				}
				fmt.Fprintf(&b, " %s | %s | %.2f |", num(v), num(base), ratio)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// group writes n with thousands separators.
func group(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// num writes v with three significant digits.
func num(v float64) string {
	switch {
	case v >= 1000:
		return group(int(math.Round(v)))
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// Plot geometry: four panels in a 2×2 grid.
const (
	panelW, panelH = 420.0, 280.0
	marginL        = 70.0
	marginT        = 40.0
	marginB        = 45.0
	marginR        = 40.0
)

var colours = map[string]string{"SQLite": "#1b6ca8", "PostgreSQL": "#c0392b"}

// plot draws the four panels.
func plot(m measures) string {
	var b strings.Builder
	w, h := 2*panelW, 2*panelH+40
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	// Legend.
	x := 20.0
	for _, be := range m.backends() {
		fmt.Fprintf(&b, `<line x1="%.0f" y1="20" x2="%.0f" y2="20" stroke="%s" stroke-width="2"/><text x="%.0f" y="24">%s</text>`+"\n", x, x+24, colours[be], x+30, be)
		fmt.Fprintf(&b, `<line x1="%.0f" y1="20" x2="%.0f" y2="20" stroke="%s" stroke-width="1.5" stroke-dasharray="5,4"/><text x="%.0f" y="24">%s baseline</text>`+"\n", x+120, x+144, colours[be], x+150, be)
		x += 330
	}
	for i, p := range panels {
		ox, oy := float64(i%2)*panelW, 40+float64(i/2)*panelH
		drawPanel(&b, m, p, ox, oy)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func drawPanel(b *strings.Builder, m measures, p panel, ox, oy float64) {
	sizes := m.sizes()
	lo, hi := math.Inf(1), math.Inf(-1)
	for k, v := range m {
		if (k.bench == p.bench || k.bench == p.base) && v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		return
	}
	// Whole decades around the data.
	ylo, yhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if yhi == ylo {
		yhi++
	}
	xlo, xhi := math.Log10(float64(sizes[0])), math.Log10(float64(sizes[len(sizes)-1]))
	if xhi == xlo {
		xlo, xhi = xlo-0.5, xhi+0.5
	}
	left, top := ox+marginL, oy+marginT
	pw, ph := panelW-marginL-marginR, panelH-marginT-marginB
	px := func(n float64) float64 { return left + (math.Log10(n)-xlo)/(xhi-xlo)*pw }
	py := func(v float64) float64 { return top + ph - (math.Log10(v)-ylo)/(yhi-ylo)*ph }
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="13" font-weight="bold">%s</text>`+"\n", left, oy+22, p.title)
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#888"/>`+"\n", left, top, pw, ph)
	for d := ylo; d <= yhi; d++ {
		y := py(math.Pow(10, d))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left, y, left+pw, y, left-6, y+4, num(math.Pow(10, d)))
	}
	for _, n := range sizes {
		x := px(float64(n))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n",
			x, top, x, top+ph, x, top+ph+16, group(n))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">events in the ledger</text>`+"\n", left+pw/2, top+ph+34)
	fmt.Fprintf(b, `<text transform="translate(%.1f,%.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", ox+16, top+ph/2, p.unit)
	for _, be := range m.backends() {
		for _, bench := range []string{p.bench, p.base} {
			var pts []string
			for _, n := range sizes {
				if v, ok := m[key{be, n, bench}]; ok && v > 0 {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(float64(n)), py(v)))
				}
			}
			if len(pts) == 0 {
				continue
			}
			dash := ""
			if bench == p.base {
				dash = ` stroke-dasharray="5,4"`
			}
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), colours[be], dash)
			for _, pt := range pts {
				xy := strings.Split(pt, ",")
				fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`+"\n", xy[0], xy[1], colours[be])
			}
		}
	}
}
