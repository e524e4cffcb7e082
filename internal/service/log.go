package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/tlog"
	"github.com/swarmscore/swarmscore/passport"
)

// Log is the ledger's transparency log (issue 23): one append-only RFC 6962
// Merkle log of every chain record, its checkpoints as C2SP signed notes,
// its tiles and proofs, and the witnesses' cosignatures. The store appends
// a record's leaf in the transaction that stores the record; Log reads and
// signs.
//
// For a witness client (internal/witness) the methods are LatestCheckpoint
// (the note to submit, with the size and root it commits to),
// ConsistencyProof (between the size a witness last cosigned and the
// note's) and AddCosignature (to store the line a witness returns).
type Log struct {
	store  LogStore
	clock  clock
	keys   *signing
	origin string
}

// DefaultLogOrigin is the origin of a log whose deployment names none and
// whose host is not known.
const DefaultLogOrigin = "localhost/swarmscore"

// Origin is the log's origin line: Config.LogOrigin (serve --log-origin);
// when none is configured, the origin of the latest note the log signed,
// so that a command run without it names the log as the server did; else
// DefaultLogOrigin. Errors: ErrUnavailable.
func (u *Log) Origin(ctx context.Context) (string, error) {
	if u.origin != "" {
		return u.origin, nil
	}
	c, err := u.checkpoint(ctx, -1)
	switch {
	case errkind.Of(err) == errkind.NotFound:
		return DefaultLogOrigin, nil
	case err != nil:
		return "", err
	}
	return c.Origin, nil
}

// reader is the log's hashes as tlog reads them.
type logReader struct{ s LogStore }

func (r logReader) Hashes(ctx context.Context, level int, from, to uint64) ([][]byte, error) {
	if level == 0 {
		leaves, err := r.s.LogLeaves(ctx, int64(from), int64(to))
		if err != nil {
			return nil, err
		}
		out := make([][]byte, len(leaves))
		for i, l := range leaves {
			out[i] = tlog.LeafHash(l.Data())
		}
		return out, nil
	}
	return r.s.LogSubtrees(ctx, level, int64(from), int64(to))
}

func (r logReader) Count(ctx context.Context, level int) (uint64, error) {
	n, err := r.s.LogSubtreeCount(ctx, level)
	return uint64(n), err
}

func (r logReader) Add(ctx context.Context, level int, from uint64, hashes [][]byte) error {
	return r.s.AddLogSubtrees(ctx, level, int64(from), hashes)
}

// size reads the log's size and stores the subtree hashes up to it, so
// that any root, tile or proof within it reads a few hundred hashes.
func (u *Log) size(ctx context.Context) (uint64, error) {
	n, err := u.store.LogSize(ctx)
	if err != nil {
		return 0, err
	}
	if err := tlog.Integrate(ctx, logReader{u.store}, uint64(n)); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// noteSigner is the one place that chooses the key checkpoint notes are
// signed with: the active key, which must be Ed25519 (a signed note's
// signature is Ed25519; an HMAC could be checked by nobody but us).
func (u *Log) noteSigner(ctx context.Context, origin string) (note.Signer, error) {
	k := u.keys.current(ctx).active
	if k.Alg() != passport.AlgEdDSA || !k.CanSign() {
		return nil, fmt.Errorf("%w: log checkpoints are signed notes, which need an Ed25519 signing key: the active key is %s (rotate to one with 'swarmscore key rotate --signing-alg Ed25519')", errkind.ErrInvalid, orNone(k.Alg()))
	}
	return tlog.Ed25519Signer(origin, k.Public(), k.SignMessage)
}

func orNone(alg string) string {
	if alg == "" {
		return "missing"
	}
	return alg
}

// Verifiers are the note verifiers of this deployment's keys that a
// checkpoint note may be signed by: every Ed25519 key but a revoked one
// (a note carries no time, so nothing shows it was signed before the
// revocation), under the log's origin.
func (u *Log) Verifiers(ctx context.Context) (note.Verifiers, error) {
	origin, err := u.Origin(ctx)
	if err != nil {
		return nil, err
	}
	s := u.keys.current(ctx)
	var vs []note.Verifier
	for i, k := range s.keys {
		if k.Alg() != passport.AlgEdDSA || s.records[i].State == keyring.Revoked {
			continue
		}
		v, err := tlog.Ed25519Verifier(origin, k.Public())
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return note.VerifierList(vs...), nil
}

// SignedCheckpoint is a checkpoint note as published.
type SignedCheckpoint struct {
	tlog.Checkpoint
	// Signed is the note as the log signed it.
	Signed []byte
	// Cosignatures are the witnesses' lines, by key name.
	Cosignatures []ledger.Cosignature
	// Time is when the log signed it.
	Time time.Time
}

// Note is the note with the witnesses' cosignature lines after the log's
// signature (C2SP tlog-witness: a cosigned checkpoint).
func (c SignedCheckpoint) Note() []byte {
	lines := make([]string, len(c.Cosignatures))
	for i, s := range c.Cosignatures {
		lines[i] = s.Line
	}
	out, err := tlog.AppendSignatures(c.Signed, lines)
	if err != nil { // stored lines were checked by AddCosignature
		return c.Signed
	}
	return out
}

// Checkpoint signs a checkpoint note of the log as it is now and stores
// it; when the latest stored note already has this size, that one is
// returned and created is false. Errors: ErrInvalid when the active key
// is not Ed25519 (noteSigner), ErrUnavailable.
func (u *Log) Checkpoint(ctx context.Context) (c SignedCheckpoint, created bool, err error) {
	size, err := u.size(ctx)
	if err != nil {
		return SignedCheckpoint{}, false, err
	}
	if latest, err := u.checkpoint(ctx, -1); err == nil && latest.Size == size {
		return latest, false, nil
	} else if err != nil && errkind.Of(err) != errkind.NotFound {
		return SignedCheckpoint{}, false, err
	}
	origin, err := u.Origin(ctx)
	if err != nil {
		return SignedCheckpoint{}, false, err
	}
	signer, err := u.noteSigner(ctx, origin)
	if err != nil {
		return SignedCheckpoint{}, false, err
	}
	root, err := tlog.RootHash(ctx, logReader{u.store}, size)
	if err != nil {
		return SignedCheckpoint{}, false, err
	}
	cp := tlog.Checkpoint{Origin: origin, Size: size, Root: root}
	signed, err := tlog.Sign(cp, signer)
	if err != nil {
		return SignedCheckpoint{}, false, err
	}
	rec := ledger.LogCheckpoint{Size: int64(size), Note: signed, CreatedAt: u.clock.exact()}
	copy(rec.Root[:], root)
	if err := u.store.AddLogCheckpoint(ctx, rec); err != nil {
		return SignedCheckpoint{}, false, err
	}
	// Another process may have stored this size first: publish the one
	// stored.
	c, err = u.checkpoint(ctx, int64(size))
	return c, err == nil && string(c.Signed) == string(signed), err
}

// LatestCheckpoint returns the latest signed checkpoint note with its
// cosignatures. Errors: ErrNotFound (with a public detail) when none has
// been signed, ErrUnavailable.
func (u *Log) LatestCheckpoint(ctx context.Context) (SignedCheckpoint, error) {
	c, err := u.checkpoint(ctx, -1)
	if errkind.Of(err) == errkind.NotFound {
		return c, errkind.WithPublic(err, "no log checkpoint has been signed yet")
	}
	return c, err
}

// CheckpointAt returns the signed checkpoint note of size. Errors:
// ErrNotFound, ErrUnavailable.
func (u *Log) CheckpointAt(ctx context.Context, size int64) (SignedCheckpoint, error) {
	if size < 0 {
		return SignedCheckpoint{}, fmt.Errorf("%w: a log size is not negative", errkind.ErrInvalid)
	}
	return u.checkpoint(ctx, size)
}

func (u *Log) checkpoint(ctx context.Context, size int64) (SignedCheckpoint, error) {
	rec, err := u.store.LogCheckpoint(ctx, size)
	if err != nil {
		return SignedCheckpoint{}, err
	}
	n, err := note.Open(rec.Note, note.VerifierList())
	var unverified *note.UnverifiedNoteError
	if errors.As(err, &unverified) {
		n, err = unverified.Note, nil
	}
	if err != nil {
		return SignedCheckpoint{}, fmt.Errorf("the stored log checkpoint of size %d is not a note: %v", rec.Size, err)
	}
	cp, err := tlog.ParseCheckpoint(n.Text)
	if err != nil {
		return SignedCheckpoint{}, fmt.Errorf("the stored log checkpoint of size %d cannot be read: %v", rec.Size, err)
	}
	cos, err := u.store.Cosignatures(ctx, rec.Size)
	if err != nil {
		return SignedCheckpoint{}, err
	}
	return SignedCheckpoint{Checkpoint: cp, Signed: rec.Note, Cosignatures: cos, Time: rec.CreatedAt}, nil
}

// AddCosignature stores a witness's cosignature line ("— name base64", as
// C2SP tlog-witness's add-checkpoint returns it) of the checkpoint of
// size, replacing that witness key's earlier one. The line is stored as
// given: checking it is the witness client's part (it knows the witness's
// key). Errors: ErrInvalid for what is not a signature line, ErrNotFound
// when no checkpoint of that size is stored, ErrUnavailable.
func (u *Log) AddCosignature(ctx context.Context, size int64, line string) error {
	line = strings.TrimSuffix(line, "\n")
	if _, err := tlog.AppendSignatures(nil, []string{line}); err != nil {
		return err
	}
	name, _, ok := strings.Cut(strings.TrimPrefix(line, "— "), " ")
	if !ok || name == "" {
		return fmt.Errorf("%w: a signature line is \"— <key name> <base64 signature>\"", errkind.ErrInvalid)
	}
	return u.store.AddCosignature(ctx, size, ledger.Cosignature{KeyName: name, Line: line, At: u.clock.exact()})
}

// LastCosigned is the largest checkpoint size the witness key named name
// cosigned (AddCosignature), 0 when none. Errors: ErrUnavailable.
func (u *Log) LastCosigned(ctx context.Context, name string) (int64, error) {
	return u.store.LastCosigned(ctx, name)
}

// ConsistencyProof is the RFC 9162 consistency proof from the log at size1
// to the log at size2. Errors: ErrInvalid unless 0 <= size1 <= size2 <=
// the log's size, ErrUnavailable.
func (u *Log) ConsistencyProof(ctx context.Context, size1, size2 int64) ([][]byte, error) {
	size, err := u.size(ctx)
	if err != nil {
		return nil, err
	}
	if size1 < 0 || size2 < size1 || uint64(size2) > size {
		return nil, fmt.Errorf("%w: a consistency proof needs 0 <= old <= new <= %d (the log's size), not %d and %d", errkind.ErrInvalid, size, size1, size2)
	}
	return tlog.ConsistencyProof(ctx, logReader{u.store}, uint64(size1), uint64(size2))
}

// InclusionProof is the RFC 9162 inclusion proof of leaf index in the log
// at size. Errors: ErrInvalid unless 0 <= index < size <= the log's size.
func (u *Log) InclusionProof(ctx context.Context, index, size int64) ([][]byte, error) {
	n, err := u.size(ctx)
	if err != nil {
		return nil, err
	}
	if index < 0 || size <= index || uint64(size) > n {
		return nil, fmt.Errorf("%w: an inclusion proof needs 0 <= index < size <= %d (the log's size), not %d and %d", errkind.ErrInvalid, n, index, size)
	}
	return tlog.InclusionProof(ctx, logReader{u.store}, uint64(index), uint64(size))
}

// Tile returns the tile a C2SP tlog-tiles path names (after the log's
// prefix: tile/<L>/<N>[.p/<W>]) and whether it is full (immutable).
// Tiles are served for the log as it is now, not only up to the latest
// checkpoint. Errors: ErrInvalid for a path that is not a tile's,
// ErrNotFound for a tile not in the log, ErrUnavailable.
func (u *Log) Tile(ctx context.Context, path string) ([]byte, bool, error) {
	t, err := tlog.ParseTilePath(path)
	if err != nil {
		return nil, false, err
	}
	size, err := u.size(ctx)
	if err != nil {
		return nil, false, err
	}
	data, err := tlog.ReadTile(ctx, logReader{u.store}, t, size)
	if errkind.Of(err) == errkind.NotFound {
		return nil, false, errkind.WithPublic(err, fmt.Sprintf("tile %s is not in the log of %d leaves", t.Path(), size))
	}
	return data, t.Width == tlog.TileWidth, err
}

// RecordInclusion is a chain record with its inclusion proof against a
// checkpoint note.
type RecordInclusion struct {
	Record     ledger.LoggedRecord
	Checkpoint SignedCheckpoint
	Proof      [][]byte
}

// Inclusion proves that each chain record of an event is in the log: the
// inclusion proof of its leaf against the latest checkpoint note, signed
// now if the latest does not cover it yet. Errors: ErrNotFound when the
// event has no record, ErrInvalid when a note cannot be signed
// (noteSigner), ErrUnavailable; ErrConflict when a record has no log index
// yet (the backfill has not reached it).
func (u *Log) Inclusion(ctx context.Context, typ ledger.Type, eventID string) ([]RecordInclusion, error) {
	recs, err := u.store.LoggedRecords(ctx, typ, eventID)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errkind.WithPublic(fmt.Errorf("%w: no chain record of %s %q", errkind.ErrNotFound, typ, eventID), fmt.Sprintf("no chain record of %s %q", typ, eventID))
	}
	return u.prove(ctx, recs)
}

// ProveRecord is Inclusion for one agent's record at seq.
func (u *Log) ProveRecord(ctx context.Context, agentID string, seq int64) (RecordInclusion, error) {
	r, err := u.store.LoggedRecord(ctx, agentID, seq)
	if err != nil {
		return RecordInclusion{}, err
	}
	out, err := u.prove(ctx, []ledger.LoggedRecord{r})
	if err != nil {
		return RecordInclusion{}, err
	}
	return out[0], nil
}

func (u *Log) prove(ctx context.Context, recs []ledger.LoggedRecord) ([]RecordInclusion, error) {
	var last int64 = -1
	for _, r := range recs {
		if r.Index < 0 {
			return nil, fmt.Errorf("%w: record %d of agent %q is not in the log yet: its backfill has not reached it (swarmscore migrate)", errkind.ErrConflict, r.Seq, r.AgentID)
		}
		last = max(last, r.Index)
	}
	cp, err := u.checkpoint(ctx, -1)
	if err != nil && errkind.Of(err) != errkind.NotFound {
		return nil, err
	}
	if err != nil || int64(cp.Size) <= last {
		if cp, _, err = u.Checkpoint(ctx); err != nil {
			return nil, err
		}
	}
	out := make([]RecordInclusion, len(recs))
	for i, r := range recs {
		p, err := tlog.InclusionProof(ctx, logReader{u.store}, uint64(r.Index), cp.Size)
		if err != nil {
			return nil, err
		}
		out[i] = RecordInclusion{Record: r, Checkpoint: cp, Proof: p}
	}
	return out, nil
}

// BackfillReport says how far a backfill got.
type BackfillReport struct {
	Appended, Left int64
}

// Backfill appends the chain records a ledger held before it had a log
// (migration 00018 on SQLite, 00021 on PostgreSQL), in chain order, batch
// records per transaction, calling progress after each. It is resumable:
// interrupted, the next run goes on from where it stopped. It returns at
// once when nothing is left. Errors: ErrUnavailable.
func (u *Log) Backfill(ctx context.Context, batch int, progress func(BackfillReport)) (BackfillReport, error) {
	left, err := u.store.UnloggedRecords(ctx)
	if err != nil || left == 0 {
		return BackfillReport{}, err
	}
	if batch < 1 {
		batch = 1000
	}
	var rep BackfillReport
	for {
		n, err := u.store.BackfillLog(ctx, batch)
		if err != nil {
			return rep, err
		}
		if n == 0 {
			rep.Left = 0
			return rep, nil
		}
		rep.Appended += n
		rep.Left = max(left-rep.Appended, 0)
		if progress != nil {
			progress(rep)
		}
	}
}

// VerifyNote checks an archived checkpoint note against this log: its
// signature by one of this deployment's keys (Verifiers), its origin, and
// that the log, as it is now, has at least its size and the same root at
// that size, recomputed from the stored leaves: the log was not rewritten
// below it. Errors: ErrInvalid for what is not a checkpoint note, one
// matching tlog.ErrSignature (and ErrInvalid) for a signature that does
// not verify; ErrConflict when the log does not extend it; ErrUnavailable.
func (u *Log) VerifyNote(ctx context.Context, b []byte) (tlog.Checkpoint, error) {
	vs, err := u.Verifiers(ctx)
	if err != nil {
		return tlog.Checkpoint{}, err
	}
	_, c, err := tlog.Open(b, vs)
	if err != nil {
		return tlog.Checkpoint{}, err
	}
	origin, err := u.Origin(ctx)
	if err != nil {
		return c, err
	}
	if c.Origin != origin {
		return c, fmt.Errorf("%w: the checkpoint is of log %q, this one is %q", errkind.ErrInvalid, c.Origin, origin)
	}
	size, err := u.size(ctx)
	if err != nil {
		return c, err
	}
	if c.Size > size {
		return c, fmt.Errorf("%w: the checkpoint has %d leaves, the log only %d: it was truncated", errkind.ErrConflict, c.Size, size)
	}
	root, err := tlog.RootHash(ctx, logReader{u.store}, c.Size)
	if err != nil {
		return c, err
	}
	if string(root) != string(c.Root) {
		return c, fmt.Errorf("%w: the log's first %d leaves no longer hash to the checkpoint's root: it was rewritten", errkind.ErrConflict, c.Size)
	}
	return c, nil
}
