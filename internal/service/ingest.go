package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Ledger holds the use cases over the event record: ingesting reports,
// computing scores from the ledger through the cache, and verifying the
// hash chains. The CLI and the HTTP API share it.
type Ledger struct {
	Store Backend
	// Now is the clock for "the current score"; nil means time.Now.
	Now func() time.Time
}

func (l *Ledger) now() time.Time {
	if l.Now != nil {
		return l.Now().UTC()
	}
	return time.Now().UTC()
}

// DefaultBatchSize is the number of events written per transaction by
// IngestStream when the caller gives none.
const DefaultBatchSize = 1000

// MaxBatchSize bounds one transaction, so a batch never holds the write
// lock for long.
const MaxBatchSize = 10000

// Rejection is one event that was not recorded.
type Rejection struct {
	// Index is where the event was in the input: the 1-based line number
	// for NDJSON, the 0-based array index for a JSON array.
	Index int
	// ID is the event's id when it could be read.
	ID string
	// Err says why: errkind.ErrInvalid (a malformed or invalid event,
	// naming the field) or errkind.ErrConflict (it contradicts the ledger).
	Err error
}

// IngestReport summarises an ingest.
type IngestReport struct {
	Accepted   int // new events and transitions recorded
	Duplicates int // re-sends of what the ledger already holds (no-ops)
	Rejected   []Rejection
}

// Add merges another report into r.
func (r *IngestReport) Add(o IngestReport) {
	r.Accepted += o.Accepted
	r.Duplicates += o.Duplicates
	r.Rejected = append(r.Rejected, o.Rejected...)
}

// Item is one input event: its position and either the parsed event or why
// it could not be parsed.
type Item struct {
	Index int
	Event ledger.Event
	Err   error
}

// Ingest records events reported by operator as one all-or-nothing batch
// and returns one outcome per event (see Backend.Ingest). The batch may
// hold at most MaxBatchSize events (ErrInvalid otherwise).
func (l *Ledger) Ingest(ctx context.Context, operator string, events []ledger.Event) ([]ledger.Outcome, error) {
	if len(events) > MaxBatchSize {
		return nil, fmt.Errorf("%w: %d events in one batch (at most %d)", errkind.ErrInvalid, len(events), MaxBatchSize)
	}
	return l.Store.Ingest(ctx, ledger.Batch{Operator: operator, Events: events})
}

// IngestItems records the parsable items as one batch and reports every
// item, parse failures included, by its Index.
func (l *Ledger) IngestItems(ctx context.Context, operator string, items []Item) (IngestReport, error) {
	var rep IngestReport
	events := make([]ledger.Event, 0, len(items))
	pos := make([]int, 0, len(items))
	for i, it := range items {
		if it.Err != nil {
			rep.Rejected = append(rep.Rejected, Rejection{Index: it.Index, ID: it.Event.ID, Err: it.Err})
			continue
		}
		events = append(events, it.Event)
		pos = append(pos, i)
	}
	if len(events) == 0 {
		return rep, nil
	}
	out, err := l.Ingest(ctx, operator, events)
	if err != nil {
		return IngestReport{}, err
	}
	for k, o := range out {
		switch o.Status {
		case ledger.OutcomeAccepted:
			rep.Accepted++
		case ledger.OutcomeDuplicate:
			rep.Duplicates++
		default:
			it := items[pos[k]]
			rep.Rejected = append(rep.Rejected, Rejection{Index: it.Index, ID: it.Event.ID, Err: o.Err})
		}
	}
	sortRejections(rep.Rejected)
	return rep, nil
}

func sortRejections(r []Rejection) {
	// Parse failures and store rejections arrive in two passes; present
	// them in input order. Insertion sort: the slices are short and nearly
	// sorted.
	for i := 1; i < len(r); i++ {
		for j := i; j > 0 && r[j].Index < r[j-1].Index; j-- {
			r[j], r[j-1] = r[j-1], r[j]
		}
	}
}

// Progress is reported after each committed batch of IngestStream.
type Progress struct {
	Lines int // input lines read so far (including blank ones)
	IngestReport
}

// IngestStream reads NDJSON events from r and records them in batches of
// batchSize (DefaultBatchSize if 0). Each batch is all or nothing; a
// malformed line is rejected on its own (by line number) and never stops
// the others. progress, if not nil, is called after every batch with the
// running totals. On an error (the database failing, ctx ending, or
// reading r failing) the returned report covers the batches already
// committed, and the error says which line the uncommitted batch started
// at.
func (l *Ledger) IngestStream(ctx context.Context, operator string, r io.Reader, batchSize int, progress func(Progress)) (IngestReport, error) {
	if batchSize == 0 {
		batchSize = DefaultBatchSize
	}
	if batchSize < 1 || batchSize > MaxBatchSize {
		return IngestReport{}, fmt.Errorf("%w: batch size %d is outside 1..%d", errkind.ErrInvalid, batchSize, MaxBatchSize)
	}
	if err := ledger.CheckID("operator", operator); err != nil {
		return IngestReport{}, err
	}
	var total IngestReport
	lr := ledger.NewLineReader(r)
	batch := make([]Item, 0, batchSize)
	flush := func(lines int) error {
		if len(batch) == 0 {
			return nil
		}
		rep, err := l.IngestItems(ctx, operator, batch)
		if err != nil {
			return fmt.Errorf("batch starting at line %d not recorded: %w", batch[0].Index, err)
		}
		total.Add(rep)
		batch = batch[:0]
		if progress != nil {
			progress(Progress{Lines: lines, IngestReport: total})
		}
		return nil
	}
	last := 0
	for {
		line, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return total, fmt.Errorf("reading events after line %d: %w", last, err)
		}
		last = line.Number
		batch = append(batch, Item{Index: line.Number, Event: line.Event, Err: line.Err})
		if len(batch) == batchSize {
			if err := flush(last); err != nil {
				return total, err
			}
		}
	}
	return total, flush(last)
}
