package web

import (
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/score"
)

var funcs = template.FuncMap{
	"asset":    assetURL,
	"datetime": datetime,
	"date":     func(t time.Time) string { return t.UTC().Format("2006-01-02") },
	"iso":      func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"tierClass": func(t score.Tier) string {
		return "tier-" + strings.ToLower(t.String())
	},
	"thousands":       func(n int) string { return thousands(int64(n)) },
	"modifierPercent": modifierPercent,
	"add":             func(a, b int) int { return a + b },
	"dollars":         dollars,
	"add64":           func(a, b int64) int64 { return a + b },
	"thousands64":     thousands,
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// plural is "1 point", "2 points".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return thousands(n) + " " + noun + "s"
}

// thousands writes n with commas every three digits: 1,000.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// dollars writes an amount of cents as money: $392, $1,000, $392.50.
func dollars(cents int64) string {
	s := "$" + thousands(cents/100)
	if c := cents % 100; c != 0 {
		s += "." + string(rune('0'+c/10)) + string(rune('0'+c%10))
	}
	return s
}

// percent writes a fraction as a percentage with at most one decimal,
// truncated so that 99.96% is not shown as 100%.
func percent(num, den int64) string {
	if den == 0 {
		return "0%"
	}
	tenths := num * 1000 / den
	s := itoa(tenths / 10)
	if d := tenths % 10; d != 0 {
		s += "." + itoa(d)
	}
	return s + "%"
}

// modifierPercent writes an escrow modifier as the share held: 39.2%.
func modifierPercent(m score.Modifier) string {
	return percent(int64(m.BasisPoints()), 10000)
}

func datetime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// until says how far t is from now in the largest whole unit: "in 6 days",
// "in 3 hours", or "2 days ago".
func until(now, t time.Time) string {
	d := t.Sub(now)
	past := d < 0
	if past {
		d = -d
	}
	var s string
	switch {
	case d >= 48*time.Hour:
		s = plural(int64(d/(24*time.Hour)), "day")
	case d >= 2*time.Hour:
		s = plural(int64(d/time.Hour), "hour")
	case d >= 2*time.Minute:
		s = plural(int64(d/time.Minute), "minute")
	default:
		s = "a moment"
	}
	if past {
		return s + " ago"
	}
	return "in " + s
}

// gapWords says what one unmet requirement needs, in plain words: "90
// more points", "20 more Conduit sessions", "10 more AP2 transactions".
func gapWords(g score.Gap) string {
	n := g.Required - g.Actual
	switch g.Requirement {
	case score.RequirementScore:
		return thousands(n) + " more " + noun(n, "point")
	case score.RequirementConduit:
		return thousands(n) + " more Conduit " + noun(n, "session")
	case score.RequirementAP2:
		return thousands(n) + " more AP2 " + noun(n, "transaction")
	}
	return g.Requirement + ": " + thousands(g.Actual) + " of " + thousands(g.Required)
}

func noun(n int64, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}
