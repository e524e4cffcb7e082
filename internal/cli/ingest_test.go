package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
)

// supersedingStore answers events whose id starts with "old-" as
// superseded, as a back end does for a report of an earlier status than
// the one recorded, and passes the rest on.
type supersedingStore struct{ service.Backend }

func (s supersedingStore) Ingest(ctx context.Context, b ledger.Batch) ([]ledger.Outcome, error) {
	out := make([]ledger.Outcome, len(b.Events))
	var pass []ledger.Event
	var at []int
	for i, e := range b.Events {
		if strings.HasPrefix(e.ID, "old-") {
			out[i].Status = ledger.OutcomeSuperseded
			continue
		}
		pass, at = append(pass, e), append(at, i)
	}
	b.Events = pass
	inner, err := s.Backend.Ingest(ctx, b)
	if err != nil {
		return nil, err
	}
	for k, o := range inner {
		out[at[k]] = o
	}
	return out, nil
}

// TestIngestSuperseded: superseded lines are counted in the summary and,
// like duplicates, are not failures.
func TestIngestSuperseded(t *testing.T) {
	drivers := Drivers{"sqlite": {
		Open: func(ctx context.Context, dsn string) (service.Backend, error) {
			st, err := sqlite.Open(ctx, dsn)
			if err != nil {
				return nil, err
			}
			return supersedingStore{st}, nil
		},
		File: sqlite.Path,
	}}
	in := `{"type":"conduit_session","id":"s-1","agent_id":"agent-1","status":"RUNNING","started_at":"2026-03-16T10:00:00Z"}
{"type":"conduit_session","id":"old-1","agent_id":"agent-1","status":"RUNNING","started_at":"2026-03-16T10:00:00Z"}
`
	var out, errb bytes.Buffer
	code := Run(t.Context(), []string{"ingest", "--db", "sqlite:" + filepath.Join(t.TempDir(), "s.db")},
		Process{Stdin: strings.NewReader(in), Stdout: &out, Stderr: &errb, Drivers: drivers})
	if code != ExitOK || out.String() != "standard input: 1 accepted, 0 duplicates, 1 superseded, 0 rejected\n" || errb.Len() != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
}
