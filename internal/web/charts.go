package web

import (
	"html"
	"html/template"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/score"
)

// The charts are inline SVG drawn here from numbers: the templates place
// the coordinates computed below and never build markup from strings, so
// nothing a user sends can reach the drawing. Each chart is a fixed
// viewBox that scales with the page's width.

// num writes a coordinate with one decimal at most.
func num(f float64) string {
	s := strconv.FormatFloat(f, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}

// tick is one labelled position on an axis.
type tick struct {
	Pos   string // x or y in the viewBox
	Label string
}

// marker is a labelled line across a chart (a tier's threshold); its label
// sits on the side Anchor says (an SVG text-anchor), DX away from the line.
type marker struct {
	Pos, Label, Anchor, DX string
}

// frame is a chart's plotting area inside its viewBox.
type frame struct {
	W, H                     float64 // the viewBox
	Left, Right, Top, Bottom float64 // margins
}

func (f frame) plotW() float64 { return f.W - f.Left - f.Right }
func (f frame) plotH() float64 { return f.H - f.Top - f.Bottom }

// Strings for the templates.
func (f frame) ViewBox() string { return "0 0 " + num(f.W) + " " + num(f.H) }
func (f frame) X0() string      { return num(f.Left) }
func (f frame) X1() string      { return num(f.W - f.Right) }
func (f frame) Y0() string      { return num(f.Top) }
func (f frame) Y1() string      { return num(f.H - f.Bottom) }

// LabelY is where the x axis's labels sit.
func (f frame) LabelY() string { return num(f.H - f.Bottom + 18) }

// TickY is where the x axis's tick marks end.
func (f frame) TickY() string { return num(f.H - f.Bottom + 5) }

// LabelX is where the y axis's labels end.
func (f frame) LabelX() string { return num(f.Left - 6) }

// axes writes a chart's grid (a horizontal line at each y tick), its
// tier markers, its axes with the x ticks' marks and labels, and the y
// ticks' labels, as SVG markup, in Go rather than as template actions:
// each ranged action costs html/template its escapers by reflection, and
// these are a page's most numerous (docs/BENCHMARKS.md). Everything
// written is numbers and fixed words; labels are escaped all the same.
// vertical says the tier markers are vertical lines (at x) with their
// labels at the top; otherwise horizontal (at y) with labels at their X.
func (f frame) axes(xTicks, yTicks []tick, tiers []marker, vertical bool) template.HTML {
	var b strings.Builder
	b.Grow(256 * (len(xTicks) + len(yTicks) + len(tiers) + 2))
	line := func(x1, x2, y1, y2 string) {
		b.WriteString(`<line x1="` + x1 + `" x2="` + x2 + `" y1="` + y1 + `" y2="` + y2 + `"/>` + "\n")
	}
	text := func(x, y, dx, dy, anchor, label string) {
		b.WriteString(`<text x="` + x + `" y="` + y + `"`)
		if dx != "" {
			b.WriteString(` dx="` + dx + `"`)
		}
		if dy != "" {
			b.WriteString(` dy="` + dy + `"`)
		}
		b.WriteString(` text-anchor="` + anchor + `">` + html.EscapeString(label) + "</text>\n")
	}
	b.WriteString(`<g class="grid">` + "\n")
	for _, t := range yTicks {
		line(f.X0(), f.X1(), t.Pos, t.Pos)
	}
	b.WriteString("</g>\n" + `<g class="tiers">` + "\n")
	for _, m := range tiers {
		if vertical {
			line(m.Pos, m.Pos, f.Y0(), f.Y1())
			text(m.Pos, f.Y0(), m.DX, "10", m.Anchor, m.Label)
		} else {
			line(f.X0(), f.X1(), m.Pos, m.Pos)
			text(m.DX, m.Pos, "", "4", m.Anchor, m.Label)
		}
	}
	b.WriteString("</g>\n" + `<g class="axis">` + "\n")
	line(f.X0(), f.X1(), f.Y1(), f.Y1())
	line(f.X0(), f.X0(), f.Y0(), f.Y1())
	for _, t := range xTicks {
		line(t.Pos, t.Pos, f.Y1(), f.TickY())
		text(t.Pos, f.LabelY(), "", "", "middle", t.Label)
	}
	for _, t := range yTicks {
		text(f.LabelX(), t.Pos, "", "4", "end", t.Label)
	}
	b.WriteString("</g>")
	return template.HTML(b.String())
}

// escrowChart is the escrow modifier against the score, 0 to 1000, with
// one agent's point.
type escrowChart struct {
	frame
	Curve          string // the path of the modifier
	PointX, PointY string
	XTicks, YTicks []tick
	Tiers          []marker // vertical lines at the tier scores
	Score          int
	Modifier       string
	// Axes is the grid, tiers and axes drawn (frame.axes).
	Axes template.HTML
}

func newEscrowChart(s int, m score.Modifier) escrowChart {
	f := frame{W: 640, H: 300, Left: 64, Right: 28, Top: 16, Bottom: 44}
	x := func(s float64) float64 { return f.Left + s*f.plotW()/score.MaxScore }
	y := func(bp float64) float64 { return f.Top + (1-bp/10000)*f.plotH() }
	// 10000 − 8·score meets the 2500 floor at score 937.5.
	floorAt := float64(score.ModifierOne-score.ModifierFloor) / 8
	c := escrowChart{
		frame: f,
		Curve: "M" + num(x(0)) + " " + num(y(float64(score.ModifierOne))) +
			" L" + num(x(floorAt)) + " " + num(y(float64(score.ModifierFloor))) +
			" L" + num(x(score.MaxScore)) + " " + num(y(float64(score.ModifierFloor))),
		PointX:   num(x(float64(s))),
		PointY:   num(y(float64(m.BasisPoints()))),
		Score:    s,
		Modifier: modifierPercent(m),
	}
	for v := 0; v <= score.MaxScore; v += 200 {
		c.XTicks = append(c.XTicks, tick{num(x(float64(v))), strconv.Itoa(v)})
	}
	for bp := 0; bp <= 10000; bp += 2500 {
		c.YTicks = append(c.YTicks, tick{num(y(float64(bp))), strconv.Itoa(bp/100) + "%"})
	}
	// The two lines are close: STANDARD's label goes left of its line,
	// ELITE's right of its own.
	c.Tiers = []marker{
		{num(x(score.StandardScore)), "STANDARD", "end", "-4"},
		{num(x(score.EliteScore)), "ELITE", "start", "4"},
	}
	c.Axes = f.axes(c.XTicks, c.YTicks, c.Tiers, true)
	return c
}

// historyChart is the score from the agent's first counted day to today,
// one point a day.
type historyChart struct {
	frame
	Line           string // polyline points
	LastX, LastY   string
	XTicks, YTicks []tick
	Tiers          []marker // horizontal lines at the tier scores
	// Rows are the daily scores as table rows, written here rather than
	// by the template: 90 rows of template actions cost four fifths of
	// the page's rendering (docs/BENCHMARKS.md), and they hold only
	// dates, numbers and tier names.
	Rows        template.HTML
	First, Last service.DayScore
	High, Low   int
	// Days is how many days the chart shows; Trimmed is set when they
	// start after the history's first day, at the agent's first counted
	// event, rather than with days of nothing.
	Days    int
	Trimmed bool
	// Axes is the grid, tiers and axes drawn (frame.axes).
	Axes template.HTML
}

// historyTickSteps are the spacings, in days, the x axis's ticks may take:
// the first that gives at most maxHistoryTicks ticks is used.
var historyTickSteps = []int{1, 2, 7, 14, 28}

const maxHistoryTicks = 6

func newHistoryChart(days []service.DayScore) historyChart {
	// The days before the first with anything counted are not a score of
	// 0 but no history: the chart starts at the first event.
	first := 0
	for first < len(days)-1 && days[first].Result.Conduit().Total+days[first].Result.AP2().Total == 0 {
		first++
	}
	trimmed := first > 0
	days = days[first:]
	// The tier labels sit right of the plot, so the line never runs
	// through them at any width.
	f := frame{W: 640, H: 240, Left: 52, Right: 108, Top: 12, Bottom: 36}
	c := historyChart{frame: f, Rows: dayRows(days), Days: len(days), Trimmed: trimmed}
	if len(days) == 0 {
		return c
	}
	x := func(i int) float64 {
		if len(days) == 1 {
			return f.Left + f.plotW()
		}
		return f.Left + float64(i)*f.plotW()/float64(len(days)-1)
	}
	y := func(s int) float64 { return f.Top + float64(score.MaxScore-s)*f.plotH()/score.MaxScore }
	var b strings.Builder
	b.Grow(len(days) * 12)
	c.High, c.Low = 0, score.MaxScore
	for i, d := range days {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(num(x(i)))
		b.WriteByte(',')
		b.WriteString(num(y(d.Result.Score)))
		c.High = max(c.High, d.Result.Score)
		c.Low = min(c.Low, d.Result.Score)
	}
	c.Line = b.String()
	c.First, c.Last = days[0], days[len(days)-1]
	c.LastX, c.LastY = num(x(len(days)-1)), num(y(c.Last.Result.Score))
	for _, v := range []int{0, 250, 500, 750, 1000} {
		c.YTicks = append(c.YTicks, tick{num(y(v)), strconv.Itoa(v)})
	}
	x1 := num(f.W - f.Right + 6)
	c.Tiers = []marker{
		{num(y(score.StandardScore)), "STANDARD", "start", x1},
		{num(y(score.EliteScore)), "ELITE", "start", x1},
	}
	// Ticks at whole steps back from today, so that today always has one.
	step := historyTickSteps[len(historyTickSteps)-1]
	for _, s := range historyTickSteps {
		if (len(days)-1)/s+1 <= maxHistoryTicks {
			step = s
			break
		}
	}
	for i := len(days) - 1; i >= 0; i -= step {
		c.XTicks = append(c.XTicks, tick{num(x(i)), days[i].Day.Format("Jan 2")})
	}
	slices.Reverse(c.XTicks)
	c.Axes = f.axes(c.XTicks, c.YTicks, c.Tiers, false)
	return c
}

// bar is a dimension's contribution against its maximum.
type bar struct {
	Width string // of the filled part, in a viewBox 100 wide
}

func newBar(v, max int) bar {
	if max <= 0 {
		return bar{"0"}
	}
	return bar{num(100 * float64(v) / float64(max))}
}

// hourChart is events per hour, accepted (and no-op re-sends) under
// rejected, stacked.
type hourChart struct {
	frame
	Bars   []hourBar
	XTicks []tick
	YTicks []tick
	Max    int
}

type hourBar struct {
	X, W             string
	OkY, OkH         string
	RejectY, RejectH string
	Hour             service.IngestHour
}

func newHourChart(hours []service.IngestHour) hourChart {
	f := frame{W: 640, H: 200, Left: 44, Right: 12, Top: 12, Bottom: 32}
	c := hourChart{frame: f, Max: 1}
	for _, h := range hours {
		c.Max = max(c.Max, h.Events())
	}
	slot := f.plotW() / float64(max(len(hours), 1))
	y := func(n int) float64 { return f.Top + f.plotH() - float64(n)*f.plotH()/float64(c.Max) }
	for i, h := range hours {
		ok := h.Accepted + h.Duplicates + h.Superseded
		x := f.Left + float64(i)*slot
		c.Bars = append(c.Bars, hourBar{
			X: num(x + 1), W: num(slot - 2),
			OkY: num(y(ok)), OkH: num(y(0) - y(ok)),
			RejectY: num(y(ok + h.Rejected)), RejectH: num(y(ok) - y(ok+h.Rejected)),
			Hour: h,
		})
		if h.Start.Hour()%6 == 0 {
			c.XTicks = append(c.XTicks, tick{num(x + slot/2), h.Start.UTC().Format("15:04")})
		}
	}
	c.YTicks = []tick{{num(y(0)), "0"}, {num(y(c.Max)), thousands(int64(c.Max))}}
	return c
}

// badge is the two-part README badge, "SwarmScore | 760 STANDARD", in the
// flat or flat-square style of shields.io: text widths are estimated from
// Verdana's at 11 px and enforced with textLength, so any renderer draws
// the same box.
type badge struct {
	Label, Value         string
	Color                string
	Width, LeftW, RightW int
	// Text positions and lengths, in tenths of a pixel (the text is drawn
	// at scale 0.1 for sub-pixel placement, as shields.io does).
	LabelX, LabelLen, ValueX, ValueLen int
	// Square is the flat-square style: square corners, no gradient.
	Square bool
}

// tierColor is a tier's colour, the same on badges and pages; each keeps
// white text above 4.5:1 contrast.
func tierColor(t score.Tier) string {
	switch t {
	case score.TierElite:
		return "#1a7f37"
	case score.TierStandard:
		return "#0969da"
	}
	return "#57606a"
}

// staleColor is the colour of a badge whose passport has expired: a
// lighter grey than NONE's, still above 4.5:1 under white text.
const staleColor = "#6e7781"

func newBadge(label, value, color string, square bool) badge {
	lw, vw := textWidth(label), textWidth(value)
	b := badge{Label: label, Value: value, Color: color, LeftW: lw + 10, RightW: vw + 10, Square: square}
	b.Width = b.LeftW + b.RightW
	b.LabelX, b.LabelLen = b.LeftW*5, lw*10
	b.ValueX, b.ValueLen = (b.LeftW*2+b.RightW)*5, vw*10
	return b
}

// textWidth estimates the width in pixels of s in Verdana at 11 px.
func textWidth(s string) int {
	var w float64
	for _, r := range s {
		switch {
		case r == ' ':
			w += 3.9
		case r >= '0' && r <= '9':
			w += 7
		case r == 'I' || r == 'i' || r == 'l' || r == 'j':
			w += 3.5
		case r == 'M' || r == 'W' || r == 'm' || r == 'w':
			w += 9.8
		case r >= 'A' && r <= 'Z':
			w += 7.6
		default:
			w += 6.6
		}
	}
	return int(w + 0.5)
}

// dayRows writes one table row per day: its date, score and tier. Nothing
// in them comes from a request; the tier name is escaped all the same.
func dayRows(days []service.DayScore) template.HTML {
	var b strings.Builder
	b.Grow(len(days) * 80)
	for i, d := range days {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(`<tr><th scope="row">`)
		b.WriteString(d.Day.UTC().Format(time.DateOnly))
		b.WriteString(`</th><td class="num">`)
		b.WriteString(strconv.Itoa(d.Result.Score))
		b.WriteString(`</td><td>`)
		b.WriteString(html.EscapeString(d.Result.Tier.String()))
		b.WriteString(`</td></tr>`)
	}
	return template.HTML(b.String())
}
