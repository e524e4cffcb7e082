package main

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

const sample = `goos: linux
pkg: github.com/swarmscore/swarmscore/internal/store/sqlite
BenchmarkGrowth/events=100000/ingest-2  	       1	1578097561 ns/op	     12674 events/s
BenchmarkGrowth/events=100000/ingest-raw-2         	       1	 711375424 ns/op	     28115 events/s
BenchmarkGrowth/events=100000/recompute-2          	       1	 362987127 ns/op
BenchmarkGrowth/events=100000/recompute-2          	       1	 300000000 ns/op
BenchmarkGrowth/events=100000/recompute-2          	       1	 900000000 ns/op
BenchmarkGrowth/events=100000/recompute-groupby-2  	       1	 248910519 ns/op
BenchmarkGrowth/events=1000000/recompute-2          	       1	 3629871270 ns/op
BenchmarkGrowth/events=1000000/recompute-groupby-2  	       1	 2489105190 ns/op
BenchmarkGrowth/events=100000/lookup-2             	       1	  23633125 ns/op	        11.81 µs/lookup
BenchmarkGrowth/events=100000/lookup-pk-2          	       1	  21175701 ns/op	        10.59 µs/lookup
pkg: github.com/swarmscore/swarmscore/internal/store/postgres
BenchmarkGrowth/events=100000/recompute-2          	       1	 168728525 ns/op
BenchmarkGrowth/events=100000/recompute-groupby-2  	       1	  90457194 ns/op
PASS
`

func TestParseAndTable(t *testing.T) {
	m, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if v := m[key{"SQLite", 100000, "recompute"}]; v != 0.362987127 {
		t.Errorf("median of three recomputes: %v, want 0.362987127", v)
	}
	if v := m[key{"SQLite", 100000, "ingest"}]; v != 12674 {
		t.Errorf("ingest rate %v", v)
	}
	if v := m[key{"SQLite", 100000, "lookup"}]; v != 11.81 {
		t.Errorf("lookup %v", v)
	}
	if v := m[key{"PostgreSQL", 100000, "recompute"}]; v != 0.168728525 {
		t.Errorf("postgres recompute %v", v)
	}
	tab := table(m)
	for _, want := range []string{
		"| 100,000 | SQLite | 12,674 | 28,115 | 2.22 | 0.363 | 0.249 | 1.46 |",
		"| 1,000,000 | SQLite | – | – | – | 3.63 | 2.49 | 1.46 |",
		"| 100,000 | PostgreSQL | – | – | – | 0.169 | 0.090 | 1.87 |",
	} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
	if _, err := parse(strings.NewReader("PASS\n")); err == nil {
		t.Error("no benchmark lines: no error")
	}
	if _, err := parse(strings.NewReader("BenchmarkGrowth/events=1000/ingest-2 1 5 ns/op\n")); err == nil {
		t.Error("a line before any pkg: line: no error")
	}
}

func TestPlotIsSVG(t *testing.T) {
	m, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	svg := plot(m)
	d := xml.NewDecoder(strings.NewReader(svg))
	lines := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	// SQLite: ingest 2 (one point each), recompute 2, lookup 2;
	// PostgreSQL: recompute 2.
	if lines != 8 {
		t.Errorf("%d polylines, want 8", lines)
	}
	if !strings.Contains(svg, "1,000,000") || !strings.Contains(svg, `stroke-dasharray`) {
		t.Error("axis labels or dashed baselines missing")
	}
}
