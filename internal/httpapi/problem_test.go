package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// TestKindProblems: every kind has a problem, and each shows the error's
// message, its public detail or a fixed detail as kindProblems says.
func TestKindProblems(t *testing.T) {
	if len(kindProblems) != len(errkind.Kinds()) {
		t.Fatalf("kindProblems has %d rows for %d kinds", len(kindProblems), len(errkind.Kinds()))
	}
	sentinel := map[errkind.Kind]error{
		errkind.Unknown: errors.New("boom"), errkind.Invalid: errkind.ErrInvalid, errkind.NotFound: errkind.ErrNotFound,
		errkind.Conflict: errkind.ErrConflict, errkind.Unauthorized: errkind.ErrUnauthorized,
		errkind.Forbidden: errkind.ErrForbidden, errkind.Unavailable: errkind.ErrUnavailable,
	}
	// fixed is "" for a kind that shows the error's message.
	type want struct {
		slug, fixed string
		level       slog.Level
	}
	const pub = "agent 7 is unknown"
	for k, w := range map[errkind.Kind]want{
		errkind.Invalid:      {"invalid-request", "", 0},
		errkind.Conflict:     {"conflict", "", 0},
		errkind.Unauthorized: {"unauthorized", "", 0},
		errkind.Forbidden:    {"forbidden", "", 0},
		errkind.NotFound:     {"not-found", detailNotFound, slog.LevelDebug},
		errkind.Unavailable:  {"unavailable", detailUnavailable, slog.LevelWarn},
		errkind.Unknown:      {"internal", detailInternal, slog.LevelError},
	} {
		err := fmt.Errorf("postgres: row 7: %w", sentinel[k])
		detail, level, logged := err.Error(), slog.Level(0), false
		if w.fixed != "" {
			detail, level, logged = w.fixed, w.level, true
		}
		if pt, d, l, lg := classify(err); pt.slug != w.slug || d != detail || l != level || lg != logged {
			t.Errorf("%v: %s %q %v %v", k, pt.slug, d, l, lg)
		}
		// A public detail replaces the message or the fixed detail, and
		// the message is logged, except for an internal error.
		detail, level = pub, w.level
		switch {
		case k == errkind.Unknown:
			detail = detailInternal
		case w.fixed == "":
			level = slog.LevelDebug
		}
		if pt, d, l, lg := classify(errkind.WithPublic(err, pub)); pt.slug != w.slug || d != detail || l != level || !lg {
			t.Errorf("%v with a public detail: %s %q %v %v", k, pt.slug, d, l, lg)
		}
	}
}
