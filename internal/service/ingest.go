package service

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Ingestion records reported events (spec §7.4): a batch from the API or
// a stream from the CLI, ledger.Decide deciding each event. It tells the
// certificate memo's cache watch which agents it wrote, so the next
// certificate request reads them again, and keeps what recent ingests did
// (activity.go).
type Ingestion struct {
	store   IngestStore
	clock   clock
	horizon horizon // events dated past it are refused
	certs   *certMemo
	ingests ingestLog
	actions *actionLog
}

// DefaultBatchSize is the number of events written per transaction by
// IngestStream when the caller gives none.
const DefaultBatchSize = 1000

// A batch holds at most api.MaxEvents events: it is one all-or-nothing
// transaction, which must never hold the write lock for long, and an HTTP
// request is one batch.

// Rejection is one event that was not recorded.
type Rejection struct {
	// Index is the event's 0-based position in the input: among the
	// non-blank lines of NDJSON, or in a JSON array.
	Index int
	// Line is the event's 1-based line number in NDJSON; 0 in a JSON
	// array.
	Line int
	// ID is the event's id whenever it could be read, even from an event
	// that was refused as malformed or invalid.
	ID string
	// Err says why: errkind.ErrInvalid (a malformed or invalid event,
	// naming the field) or errkind.ErrConflict (it contradicts the ledger).
	Err error
}

// IngestReport summarises an ingest. Every input event is counted exactly
// once.
type IngestReport struct {
	Accepted   int // new events and transitions recorded
	Duplicates int // re-sends of what the ledger already holds (no-ops)
	Superseded int // reports of an earlier status than the one recorded (no-ops)
	Rejected   []Rejection
}

// Add merges another report into r.
func (r *IngestReport) Add(o IngestReport) {
	r.Accepted += o.Accepted
	r.Duplicates += o.Duplicates
	r.Superseded += o.Superseded
	r.Rejected = append(r.Rejected, o.Rejected...)
}

// Item is one input event: where it was and either the parsed event or why
// it could not be parsed.
type Item struct {
	Index int // 0-based position in the input (Rejection.Index)
	Line  int // 1-based NDJSON line, 0 in a JSON array
	Event ledger.Event
	Err   error
}

// InputError is input that cannot be read as a batch of events at all, as
// opposed to single events that are rejected on their own (Rejection). It
// matches errkind.ErrInvalid; Problem says which way the input failed.
type InputError struct {
	Problem InputProblem
	Detail  string
}

// InputProblem classifies an InputError.
type InputProblem uint8

// The ways input fails as a whole.
const (
	// InputEmpty: nothing but white space.
	InputEmpty InputProblem = iota + 1
	// InputMalformed: it starts as a JSON array but is not one (a
	// syntax error, a truncated array, data after it).
	InputMalformed
	// InputTooLarge: more than api.MaxEvents events.
	InputTooLarge
)

func (e *InputError) Error() string { return e.Detail }

// Is makes errors.Is(err, errkind.ErrInvalid) true.
func (e *InputError) Is(target error) bool { return target == errkind.ErrInvalid }

// bom is the UTF-8 byte-order mark.
const bom = "\xef\xbb\xbf"

func tooManyEvents() error {
	return &InputError{InputTooLarge, fmt.Sprintf("more than %d events in one batch; split the batch", api.MaxEvents)}
}

// Ingest records events reported by operator as one all-or-nothing batch
// and returns one outcome per event, in order (LedgerStore.Ingest). The
// batch is received now: an event dated later than the clock by more than
// MaxClockSkew is rejected on its own (ErrInvalid, naming the field). Before
// it returns, it tells the back end's cache watch, if this process has
// started one, which agents the batch may have changed, so the next
// certificate request for any of them reads the store (read-your-writes
// within the process) instead of waiting for the database to report the
// commit; when the batch failed, whether it committed is unknown, and
// every agent in it counts as written. Errors: an *InputError
// (ErrInvalid) for more than api.MaxEvents events, ErrInvalid for an
// invalid operator, ErrUnavailable.
func (u *Ingestion) Ingest(ctx context.Context, operator string, events []ledger.Event) ([]ledger.Outcome, error) {
	if len(events) > api.MaxEvents {
		return nil, tooManyEvents()
	}
	if u.horizon.skew < 0 {
		return nil, fmt.Errorf("%w: the clock-skew allowance %s is negative", errkind.ErrInvalid, u.horizon.skew)
	}
	b := ledger.Batch{Operator: operator, Events: events, ReceivedAt: u.clock.exact(), MaxSkew: u.horizon.allowance()}
	out, err := u.store.Ingest(ctx, b)
	if w := u.certs.startedWatch(); w != nil {
		ids := make([]string, 0, len(events))
		for i := range events {
			if err != nil || (i < len(out) && out[i].Status == ledger.OutcomeAccepted) {
				ids = append(ids, events[i].AgentID)
			}
		}
		w.Wrote(ids)
	}
	return out, err
}

// ingestItems is IngestItems without the activity record (activity.go).
func (u *Ingestion) ingestItems(ctx context.Context, operator string, items []Item) (IngestReport, error) {
	var rep IngestReport
	events := make([]ledger.Event, 0, len(items))
	pos := make([]int, 0, len(items))
	for i, it := range items {
		if it.Err != nil {
			rep.Rejected = append(rep.Rejected, Rejection{Index: it.Index, Line: it.Line, ID: it.Event.ID, Err: it.Err})
			continue
		}
		events = append(events, it.Event)
		pos = append(pos, i)
	}
	if len(events) == 0 {
		return rep, nil
	}
	out, err := u.Ingest(ctx, operator, events)
	if err != nil {
		return IngestReport{}, err
	}
	if len(out) != len(events) {
		return IngestReport{}, fmt.Errorf("the store returned %d outcomes for %d events", len(out), len(events))
	}
	for k, o := range out {
		switch o.Status {
		case ledger.OutcomeAccepted:
			rep.Accepted++
		case ledger.OutcomeDuplicate:
			rep.Duplicates++
		case ledger.OutcomeSuperseded:
			rep.Superseded++
		default:
			it := items[pos[k]]
			reason := o.Err
			if reason == nil {
				reason = fmt.Errorf("%w: the store gave no reason (outcome %s)", errkind.ErrInvalid, o.Status)
			}
			rep.Rejected = append(rep.Rejected, Rejection{Index: it.Index, Line: it.Line, ID: it.Event.ID, Err: reason})
		}
	}
	// Parse failures and the store's rejections were collected in two
	// passes.
	slices.SortStableFunc(rep.Rejected, func(a, b Rejection) int { return cmp.Compare(a.Index, b.Index) })
	return rep, nil
}

// IngestEvents reads one batch of events from r (ReadEvents) and records
// it (IngestItems). Errors: ReadEvents' and Ingest's.
func (u *Ingestion) IngestEvents(ctx context.Context, operator string, r io.Reader) (IngestReport, error) {
	items, err := ReadEvents(r)
	if err != nil {
		return IngestReport{}, err
	}
	return u.IngestItems(ctx, operator, items)
}

// ReadEvents reads one batch of events: a JSON array of event objects, or
// NDJSON (one object per line, blank lines skipped), told apart by the
// first byte that is not white space, after a UTF-8 byte-order mark if the
// input starts with one (some editors and tools write it; it is not part
// of the first event). Each event is parsed on its own
// (ledger.ParseEvent): one that does not parse is an Item with Err set and
// does not stop the others. Errors: an *InputError (ErrInvalid) for input
// that is empty, is malformed as a JSON array, or holds more than
// api.MaxEvents events; a failure to read r, wrapped (errors.As finds it).
func ReadEvents(r io.Reader) ([]Item, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if b, _ := br.Peek(len(bom)); string(b) == bom {
		br.Discard(len(bom))
	}
	skipped := 0 // lines before the first event
	for {
		b, err := br.ReadByte()
		if err == io.EOF {
			return nil, &InputError{InputEmpty, "the input is empty; send a JSON array or NDJSON of events"}
		}
		if err != nil {
			return nil, fmt.Errorf("reading events: %w", err)
		}
		switch b {
		case '\n':
			skipped++
		case ' ', '\t', '\r':
		case '[':
			br.UnreadByte()
			return readArray(br)
		default:
			br.UnreadByte()
			return readNDJSON(br, skipped)
		}
	}
}

// readNDJSON reads the lines of r, which starts after skipped lines of the
// input.
func readNDJSON(r io.Reader, skipped int) ([]Item, error) {
	var items []Item
	lr := ledger.NewLineReader(r)
	last := skipped
	for {
		ln, err := lr.Next()
		if err == io.EOF {
			return items, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading events after line %d: %w", last, err)
		}
		if len(items) == api.MaxEvents {
			return nil, tooManyEvents()
		}
		last = skipped + ln.Number
		items = append(items, Item{Index: len(items), Line: last, Event: ln.Event, Err: ln.Err})
	}
}

func readArray(r io.Reader) ([]Item, error) {
	var items []Item
	dec := json.NewDecoder(r)
	if _, err := dec.Token(); err != nil { // the '['
		return nil, arrayError(err)
	}
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, arrayError(err)
		}
		if len(items) == api.MaxEvents {
			return nil, tooManyEvents()
		}
		ev, err := ledger.ParseEvent(raw)
		items = append(items, Item{Index: len(items), Event: ev, Err: err})
	}
	if _, err := dec.Token(); err != nil { // the ']'
		return nil, arrayError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		// A token cut short after the array (`[]"`) is the decoder's
		// ErrUnexpectedEOF: malformed input, not a failure to read.
		if err != nil && !isSyntax(err) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("reading events: %w", err)
		}
		return nil, &InputError{InputMalformed, "unexpected data after the JSON array of events"}
	}
	return items, nil
}

// arrayError classifies an error of the JSON decoder reading the array:
// the array's own syntax, or the reader failing.
func arrayError(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return &InputError{InputMalformed, fmt.Sprintf("malformed JSON at byte %d: %s", se.Offset, se.Error())}
	case errors.Is(err, io.ErrUnexpectedEOF), err == io.EOF:
		return &InputError{InputMalformed, "the input ends inside the JSON array of events"}
	}
	return fmt.Errorf("reading events: %w", err)
}

func isSyntax(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se)
}

// Progress is reported after each committed batch of IngestStream.
type Progress struct {
	Lines int // input lines read so far (including blank ones)
	IngestReport
}

// IngestStream reads NDJSON events from r and records them in batches of
// batchSize (DefaultBatchSize if 0), in constant memory. Each batch is all
// or nothing; a malformed line is rejected on its own (by line number) and
// never stops the others. progress, if not nil, is called after every
// batch with the running totals. On an error (the database failing, ctx
// ending, or reading r failing) the returned report covers the batches
// already committed, and the error says which line the uncommitted batch
// started at. After a stream that accepted AnalyzeAfter events or more,
// a back end that keeps planner statistics (PostgreSQL) refreshes them
// before IngestStream returns; if that fails, the error says the events
// are recorded. Errors: ErrInvalid for a batch size outside
// 1..api.MaxEvents or an invalid operator, Ingest's, and r's.
func (u *Ingestion) IngestStream(ctx context.Context, operator string, r io.Reader, batchSize int, progress func(Progress)) (IngestReport, error) {
	if batchSize == 0 {
		batchSize = DefaultBatchSize
	}
	if batchSize < 1 || batchSize > api.MaxEvents {
		return IngestReport{}, fmt.Errorf("%w: batch size %d is outside 1..%d", errkind.ErrInvalid, batchSize, api.MaxEvents)
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
		rep, err := u.IngestItems(ctx, operator, batch)
		if err != nil {
			return fmt.Errorf("batch starting at line %d not recorded: %w", batch[0].Line, err)
		}
		total.Add(rep)
		batch = batch[:0]
		if progress != nil {
			progress(Progress{Lines: lines, IngestReport: total})
		}
		return nil
	}
	last, n := 0, 0
	for {
		line, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return total, fmt.Errorf("reading events after line %d: %w", last, err)
		}
		last = line.Number
		batch = append(batch, Item{Index: n, Line: line.Number, Event: line.Event, Err: line.Err})
		n++
		if len(batch) == batchSize {
			if err := flush(last); err != nil {
				return total, err
			}
		}
	}
	if err := flush(last); err != nil {
		return total, err
	}
	if a, ok := u.store.(analyzer); ok && total.Accepted >= AnalyzeAfter {
		if err := a.Analyze(ctx); err != nil {
			return total, fmt.Errorf("the events are recorded, but analysing the tables after them failed: %w", err)
		}
	}
	return total, nil
}

// AnalyzeAfter is how many events IngestStream must have accepted for it
// to have the back end's statistics brought up to date afterwards (a bulk
// load changes the tables' sizes by more than the planner's last look at
// them; PostgreSQL with autovacuum off never looks again by itself).
const AnalyzeAfter = 10_000

// analyzer is implemented by back ends whose query planner relies on table
// statistics that a bulk load makes stale (PostgreSQL). Ingest itself
// never depends on them; reads over whole tables (recompute, signals) do.
type analyzer interface {
	Analyze(ctx context.Context) error
}
