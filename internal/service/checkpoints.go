package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// DefaultEnvironment is the environment of a deployment that names none:
// what checkpoints name when Config.Environment is empty, and what keys
// are recorded with (KeyConfig.Environment).
const DefaultEnvironment = "production"

// NewCheckpointKey makes the HS256 checkpoint key of secret, with its
// fingerprint as key id, as checkpoints were signed before keyrings (the
// keyring still checks those by that id). A checkpoint's signed bytes can
// never be a passport's (checkpoint.Type), so sharing the secret lets
// neither document pass for the other. Errors: ErrInvalid for a secret
// shorter than checkpoint.MinHMACKeySize.
func NewCheckpointKey(secret []byte) (*checkpoint.HMACKey, error) {
	return checkpoint.NewHMACKey(keyring.Fingerprint(secret), secret)
}

// checkpointSigner is the one place that chooses the key new checkpoints
// are signed with: the keyring's active key, else CheckpointKey.
func (u *Audit) checkpointSigner() (checkpoint.Signer, error) {
	if u.keys.ring != nil {
		return u.keys.ring.CheckpointSigner(), nil
	}
	if u.checkpointKey == nil {
		return nil, fmt.Errorf("%w: no checkpoint signing key is configured (set %s)", errkind.ErrInvalid, SigningKeyEnv)
	}
	return u.checkpointKey, nil
}

// checkpointVerifier is the one place that chooses the keys archived
// checkpoints are checked against: the keyring's, else CheckpointKey.
func (u *Audit) checkpointVerifier() (checkpoint.Verifier, error) {
	if u.keys.ring != nil {
		return u.keys.ring.CheckpointVerifier(), nil
	}
	if u.checkpointKey == nil {
		return nil, fmt.Errorf("%w: no checkpoint key is configured to check the signature with (set %s)", errkind.ErrInvalid, SigningKeyEnv)
	}
	return u.checkpointKey, nil
}

func (u *Audit) environment() string {
	if u.env == "" {
		return DefaultEnvironment
	}
	return u.env
}

func (u *Audit) platform() string {
	if u.issuer == "" {
		return "swarmscore"
	}
	return u.issuer
}

// NewCheckpoint is the result of MakeCheckpoint.
type NewCheckpoint struct {
	Checkpoint checkpoint.Checkpoint
	// Document is the published JSON, as stored.
	Document []byte
	// Created is false when onlyIfChanged found the latest checkpoint
	// still current: Checkpoint and Document are then the latest's, or
	// zero when there is none and the ledger is empty.
	Created bool
}

// MakeCheckpoint signs a commitment to every agent's chain head as of now
// (spec §8.3, §15.2: external notarisation): a Merkle tree over the heads,
// in one snapshot, with their count and the time, numbered after the latest
// checkpoint and stored with its leaves. With onlyIfChanged, when the heads
// are exactly those the latest checkpoint commits to (same count and root),
// nothing is made and the latest is returned, and nothing is made for an
// empty ledger never checkpointed: a schedule then publishes a checkpoint
// per change of the ledger, not per tick. When another process
// stores a checkpoint first, the number is taken again.
//
// The checkpoint commits to the heads as the store holds them; `ledger
// verify` shows that they are the chains' heads. Errors: ErrInvalid when no
// checkpoint key is configured, ErrConflict when other processes kept
// taking the number, ErrUnavailable.
func (u *Audit) MakeCheckpoint(ctx context.Context, onlyIfChanged bool) (NewCheckpoint, error) {
	signer, err := u.checkpointSigner()
	if err != nil {
		return NewCheckpoint{}, err
	}
	for attempt := 1; ; attempt++ {
		nc, err := u.makeCheckpoint(ctx, signer, onlyIfChanged)
		if errkind.Of(err) != errkind.Conflict || attempt == 3 {
			return nc, err
		}
	}
}

func (u *Audit) makeCheckpoint(ctx context.Context, signer checkpoint.Signer, onlyIfChanged bool) (NewCheckpoint, error) {
	// The latest is read before the heads: a checkpoint another process
	// stores in between makes AddCheckpoint refuse this number.
	latest, latestDoc, err := u.latestCheckpoint(ctx)
	if err != nil {
		return NewCheckpoint{}, err
	}
	heads, err := u.store.Heads(ctx)
	if err != nil {
		return NewCheckpoint{}, err
	}
	tree, err := checkpoint.NewTree(heads)
	if err != nil {
		return NewCheckpoint{}, fmt.Errorf("the stored chain heads cannot form a checkpoint: %w", err)
	}
	if onlyIfChanged && latestDoc != nil && latest.Agents == tree.Size() && latest.Root == tree.Root() {
		return NewCheckpoint{Checkpoint: latest, Document: latestDoc}, nil
	}
	if onlyIfChanged && latestDoc == nil && tree.Size() == 0 {
		return NewCheckpoint{}, nil // an empty ledger: no head has moved yet
	}
	c := checkpoint.Checkpoint{Number: latest.Number + 1, Time: u.clock.now(), Agents: tree.Size(), Root: tree.Root(),
		Environment: u.environment(), Issuer: checkpoint.Issuer{Platform: u.platform()}}
	if err := c.Sign(signer); err != nil {
		return NewCheckpoint{}, err
	}
	// MarshalJSON's bytes are the canonical form; encoding/json would
	// re-escape them.
	doc, err := c.MarshalJSON()
	if err != nil {
		return NewCheckpoint{}, err
	}
	if err := u.store.AddCheckpoint(ctx, c, doc, heads); err != nil {
		return NewCheckpoint{}, err
	}
	return NewCheckpoint{Checkpoint: c, Document: doc, Created: true}, nil
}

// latestCheckpoint returns the latest stored checkpoint and its document;
// a zero checkpoint and a nil document when there is none.
func (u *Audit) latestCheckpoint(ctx context.Context) (checkpoint.Checkpoint, []byte, error) {
	doc, err := u.store.Checkpoint(ctx, 0)
	if errkind.Of(err) == errkind.NotFound {
		return checkpoint.Checkpoint{}, nil, nil
	}
	if err != nil {
		return checkpoint.Checkpoint{}, nil, err
	}
	c, err := checkpoint.Parse(doc)
	if err != nil {
		// Stored documents are ours: one that does not parse was altered
		// in the database. Not the caller's fault, so not ErrInvalid.
		return checkpoint.Checkpoint{}, nil, fmt.Errorf("the latest stored checkpoint cannot be read: %v", err)
	}
	return c, doc, nil
}

// PublishedCheckpoint returns checkpoint number's document exactly as
// stored, or the latest's when number is 0. Errors: ErrInvalid for a
// negative number, ErrNotFound (with a public detail), ErrUnavailable.
func (u *Audit) PublishedCheckpoint(ctx context.Context, number int64) ([]byte, error) {
	if number < 0 || number > checkpoint.MaxInteger {
		return nil, fmt.Errorf("%w: checkpoint number %d is outside 1 to 2^53-1", errkind.ErrInvalid, number)
	}
	doc, err := u.store.Checkpoint(ctx, number)
	if errkind.Of(err) == errkind.NotFound {
		detail := fmt.Sprintf("no checkpoint %d", number)
		if number == 0 {
			detail = "no checkpoint has been made yet"
		}
		return nil, errkind.WithPublic(err, detail)
	}
	return doc, err
}

// CheckpointCheck is what VerifyCheckpoint found.
type CheckpointCheck struct {
	// Checkpoint is the archived checkpoint, its signature verified.
	Checkpoint checkpoint.Checkpoint
	// Changes are the agents whose chains no longer match the checkpoint
	// (dropped, truncated, rewritten), by agent id.
	Changes []checkpoint.Change
	// Pruned counts the agents whose checkpointed seq lies before their
	// chain's retention anchor: their records there are gone (§11.4), so
	// only the anchor vouches for them and they are not compared.
	Pruned int
	// Problems say why the ledger's extension of the checkpoint could not
	// be shown agent by agent: the ledger holds no checkpoint of that
	// number, or another one, or leaves that do not match it.
	Problems []string
	// Ledger is the walk of every chain (VerifyLedger).
	Ledger ledger.VerifyReport
}

// Extends reports whether the current ledger was shown to extend the
// checkpoint: every agent it named is there, with every record up to its
// checkpointed seq unchanged.
func (c *CheckpointCheck) Extends() bool { return len(c.Changes) == 0 && len(c.Problems) == 0 }

// Intact reports whether the ledger extends the checkpoint and every chain
// walks: the check passed.
func (c *CheckpointCheck) Intact() bool { return c.Extends() && len(c.Ledger.Broken) == 0 }

// VerifyCheckpoint checks that the current ledger extends an archived
// checkpoint (doc, as published): that the operator has not rewritten,
// truncated or dropped any chain it committed to.
//
// It verifies the signature (checkpointVerifier), checks the leaves the
// store kept with that checkpoint against its signed root and count, cuts
// every named agent's chain at its checkpointed seq (the stored record
// hash there, or the current head where the chain is now shorter) and
// compares (checkpoint.Diff), naming each agent that differs; then it walks
// every chain, which shows that the stored hashes are those of the records
// and events. A ledger that no longer has the checkpoint's leaves can still
// be shown to extend it if no chain moved since.
//
// Findings are in the result, not errors. Errors: ErrInvalid for a
// document that does not parse, and one matching checkpoint.ErrSignature
// (and ErrInvalid) for a signature that does not verify with this
// deployment's key; ErrUnavailable.
func (u *Audit) VerifyCheckpoint(ctx context.Context, doc []byte) (CheckpointCheck, error) {
	c, err := checkpoint.Parse(doc)
	if err != nil {
		return CheckpointCheck{}, err
	}
	v, err := u.checkpointVerifier()
	if err != nil {
		return CheckpointCheck{}, err
	}
	if err := c.Verify(v); err != nil {
		return CheckpointCheck{}, err
	}
	res := CheckpointCheck{Checkpoint: c}
	// Heads before record hashes: chains only grow, so an agent whose
	// head is past its checkpointed seq here has its record there below.
	heads, err := u.store.Heads(ctx)
	if err != nil {
		return CheckpointCheck{}, err
	}
	stored, err := u.store.Checkpoint(ctx, c.Number)
	switch {
	case errkind.Of(err) == errkind.NotFound:
		if err := checkpoint.Extends(c, heads); err != nil {
			res.Problems = append(res.Problems, fmt.Sprintf("this ledger holds no checkpoint %d, so the chains cannot be cut at its seqs, and its heads have moved since: %v", c.Number, err))
		}
	case err != nil:
		return CheckpointCheck{}, err
	default:
		if err := u.diffCheckpoint(ctx, &res, stored, heads); err != nil {
			return CheckpointCheck{}, err
		}
	}
	if res.Ledger, err = u.store.VerifyLedger(ctx); err != nil {
		return CheckpointCheck{}, err
	}
	return res, nil
}

// diffCheckpoint compares the ledger with res.Checkpoint through the
// leaves stored with it.
func (u *Audit) diffCheckpoint(ctx context.Context, res *CheckpointCheck, stored []byte, heads []checkpoint.Leaf) error {
	c := res.Checkpoint
	if sc, err := checkpoint.Parse(stored); err != nil || sc.Root != c.Root || sc.Agents != c.Agents || !sc.Time.Equal(c.Time) {
		res.Problems = append(res.Problems, fmt.Sprintf("this ledger's checkpoint %d is not the archived one: two different checkpoints carry that number", c.Number))
	}
	archived, err := u.store.CheckpointLeaves(ctx, c.Number)
	if err != nil {
		return err
	}
	var want []checkpoint.Leaf
	for _, l := range archived {
		if l.Seq > 0 {
			want = append(want, l)
		}
	}
	at, err := u.store.RecordHashes(ctx, want)
	if err != nil {
		return err
	}
	anchors, err := u.store.Anchors(ctx)
	if err != nil {
		return err
	}
	current, pruned := cutAt(archived, heads, at, anchors)
	res.Pruned = pruned
	changes, err := checkpoint.Diff(c, archived, current)
	if errors.Is(err, checkpoint.ErrDiverged) {
		res.Problems = append(res.Problems, err.Error())
		return nil
	}
	res.Changes = changes
	return err
}

// cutAt is the current ledger cut at the archived seqs, as Extends and Diff
// take it: for each archived agent, the stored record hash at its archived
// seq (at), else its current head where the chain now ends before that
// seq; nothing for an agent the ledger no longer has. A chain that reaches
// the seq but has no record there gets the zero hash, which differs from
// every chain hash: it is reported as rewritten (and the walk reports the
// gap). heads and at are by agent id, as the store returns them; archived
// is in tree order, where an erased agent's leaf is out of id order.
//
// A chain pruned by retention has no records up to its anchor: at the
// anchor's seq its hash is the anchor's; before it, nothing is left to
// compare, so the archived leaf stands for itself and is counted in
// pruned.
func cutAt(archived, heads, at []checkpoint.Leaf, anchors map[string]ledger.Anchor) (cut []checkpoint.Leaf, pruned int) {
	find := func(ls []checkpoint.Leaf, id string) (checkpoint.Leaf, bool) {
		i, ok := slices.BinarySearchFunc(ls, id, func(l checkpoint.Leaf, id string) int { return strings.Compare(l.AgentID, id) })
		if !ok {
			return checkpoint.Leaf{}, false
		}
		return ls[i], true
	}
	out := make([]checkpoint.Leaf, 0, len(archived))
	for _, a := range archived {
		head, ok := find(heads, a.AgentID)
		if !ok {
			continue // dropped
		}
		rec, found := find(at, a.AgentID)
		anchor, isAnchored := anchors[a.AgentID]
		switch {
		case a.Seq == 0:
			out = append(out, checkpoint.Leaf{AgentID: a.AgentID})
		case isAnchored && a.Seq == anchor.Seq:
			out = append(out, checkpoint.Leaf{AgentID: a.AgentID, Seq: a.Seq, Hash: anchor.Hash})
		case isAnchored && a.Seq < anchor.Seq:
			out = append(out, checkpoint.Leaf{AgentID: a.AgentID, Seq: a.Seq, Hash: a.Hash})
			pruned++
		case found:
			out = append(out, rec)
		case head.Seq < a.Seq:
			out = append(out, head)
		default:
			out = append(out, checkpoint.Leaf{AgentID: a.AgentID, Seq: a.Seq})
		}
	}
	return out, pruned
}
