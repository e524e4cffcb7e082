package service

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Audit are the use cases of the ledger's accountability (spec §7.1 L3,
// §8.3, §11.4): an agent's audit bundle, signed checkpoints made, published
// and checked, and retention, which a checkpoint notarises. A bundle
// without an as-of holds the agent's current certificate, which it asks of
// Certificates.
type Audit struct {
	store         AuditStore
	clock         clock
	keys          *signing            // the keyring signs and checks checkpoints
	checkpointKey *checkpoint.HMACKey // Config.CheckpointKey, without a keyring
	env           string              // Config.Environment
	issuer        string              // Config.Platform
	certificates  currentCertificate
	log           *Log // proves bundles' head records in the transparency log
}

// currentCertificate serves an agent's current certificate (Certificates).
type currentCertificate interface {
	Certificate(ctx context.Context, agentID string) (Certificate, error)
}

// AuditQuery selects an audit bundle (spec §7.1 L3).
type AuditQuery struct {
	// AsOf is the end of the window audited, to the microsecond; zero
	// means the current certificate's computed_at.
	AsOf time.Time
	// Withhold lists the kinds of other parties' identifiers to replace
	// by commitments (audit.Bundle.Withhold).
	Withhold []audit.Category
}

// auditAttempts bounds the reads of a chain that keeps moving while an
// audit bundle is assembled.
const auditAttempts = 3

// AuditBundle assembles the agent's audit bundle (audit.Build), withholding
// what q asks (the openings are returned, nil when nothing is withheld).
//
// Without q.AsOf the passport is the agent's current certificate
// (Certificate: the stored one while it holds, else a new one is signed
// and stored) and the window ends at its computed_at. With q.AsOf it ends
// there, and the passport is the last one issued (PassportStore) that was
// in force then (computed_at ≤ as_of < expires_at), or none.
//
// The latest checkpoint and its leaves are read first, then the agent's
// head, the passport, the counts and the chain; if the chain moved in
// between (a report or correction committed meanwhile), it is all read
// again, so that the counts, the passport and the records agree. The
// chains of agents that events were moved from are read last (their
// reports of those events are final and cannot change).
//
// Errors: ErrInvalid for a malformed id, an unknown category or an as_of
// after now; ErrNotFound for an unknown agent; ErrConflict when the stored
// records cannot form a bundle (audit.Build: a row missing, a rule broken;
// run ledger verify); ErrUnavailable when the database cannot be reached
// or the chain kept moving for auditAttempts reads.
func (u *Audit) AuditBundle(ctx context.Context, agentID string, q AuditQuery) (*audit.Bundle, audit.Openings, error) {
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return nil, nil, err
	}
	if !q.AsOf.IsZero() {
		q.AsOf = q.AsOf.UTC().Truncate(ledger.Resolution)
		if now := u.clock.now(); q.AsOf.After(now) {
			return nil, nil, fmt.Errorf("%w: as_of %s is after now (%s): the counts of a future instant are not known yet",
				errkind.ErrInvalid, ledger.FormatTime(q.AsOf), ledger.FormatTime(now))
		}
	}
	for range auditAttempts {
		src, moved, err := u.auditSource(ctx, agentID, q.AsOf)
		if err != nil {
			return nil, nil, err
		}
		if moved {
			continue
		}
		b, err := audit.Build(src)
		if err != nil {
			return nil, nil, err
		}
		if b.Log, err = u.logInclusion(ctx, b); err != nil {
			return nil, nil, err
		}
		var open audit.Openings
		if len(q.Withhold) > 0 {
			if open, err = b.Withhold(q.Withhold, rand.Reader); err != nil {
				return nil, nil, err
			}
		}
		return b, open, nil
	}
	return nil, nil, fmt.Errorf("%w: agent %q's chain kept changing while its audit bundle was read (%d attempts); try again",
		errkind.ErrUnavailable, agentID, auditAttempts)
}

// auditSource reads what audit.Build needs; moved is true when the agent's
// chain moved between the first read of its head and the chain's.
func (u *Audit) auditSource(ctx context.Context, agentID string, asOf time.Time) (src audit.Source, moved bool, err error) {
	src = audit.Source{AgentID: agentID, AsOf: asOf, Origins: map[string][]ledger.ChainRow{}}
	if src.Checkpoint, src.Leaves, err = u.latestCheckpointLeaves(ctx); err != nil {
		return src, false, err
	}
	before, err := u.store.Agent(ctx, agentID)
	if err != nil {
		return src, false, err
	}
	if asOf.IsZero() {
		c, err := u.certificates.Certificate(ctx, agentID)
		if err != nil {
			return src, false, err
		}
		src.Passport, src.AsOf = c.Passport, c.ComputedAt
	} else if src.Passport, err = u.passportInForce(ctx, agentID, asOf); err != nil {
		return src, false, err
	}
	if src.Counts, err = u.store.Counts(ctx, agentID, src.AsOf); err != nil {
		return src, false, err
	}
	// The holds before the chain: a hold's change that reports to the
	// ledger moves the chain's head, so a chain read unmoved since before
	// holds every report the holds read made.
	if err := u.holdSource(ctx, &src); err != nil {
		return src, false, err
	}
	if src.Chain, err = u.store.Chain(ctx, agentID); err != nil {
		return src, false, err
	}
	if head := &src.Chain[0]; head.HeadSeq != before.ChainLength || !bytes.Equal(head.HeadHash, before.ChainHead[:]) {
		return src, true, nil
	}
	read := [][]ledger.ChainRow{src.Chain}
	for _, o := range audit.OriginAgents(agentID, src.Chain) {
		if src.Origins[o], err = u.store.Chain(ctx, o); err != nil {
			return src, false, fmt.Errorf("reading the chain of agent %q, which events moved to %q came from: %w", o, agentID, err)
		}
		read = append(read, src.Origins[o])
	}
	// Records an erasure sealed are checked against its digests, which its
	// record (in the erased agent's chain) commits to; a hold naming an
	// erased agent is marked sealed.
	if audit.NeedsErasures(read...) || len(src.Holds) > 0 {
		if src.Erasures, err = u.store.Erasures(ctx); err != nil {
			return src, false, err
		}
		src.Sealers = map[string][]ledger.ChainRow{}
		for _, p := range audit.SealerAgents(src.Erasures, read...) {
			if src.Sealers[p], err = u.store.Chain(ctx, p); err != nil {
				return src, false, fmt.Errorf("reading the chain of erased agent %q, whose erasure sealed records of %q: %w", p, agentID, err)
			}
		}
	}
	return src, false, nil
}

// holdSource reads the agent's escrow holds as provider, their steps and
// the passports that priced them.
func (u *Audit) holdSource(ctx context.Context, src *audit.Source) error {
	holds, err := u.store.Holds(ctx, HoldQuery{ProviderID: src.AgentID})
	if err != nil || len(holds) == 0 {
		return err
	}
	src.Holds = make([]audit.HoldRows, len(holds))
	for i := range holds {
		steps, err := u.store.HoldSteps(ctx, holds[i].TransactionID)
		if err != nil {
			return err
		}
		src.Holds[i] = audit.HoldRows{Hold: holds[i], Steps: steps}
	}
	ps, err := u.store.Passports(ctx, src.AgentID)
	if err != nil {
		return err
	}
	src.HoldPassports = map[string][]byte{}
	for _, p := range ps {
		if p.Document != nil {
			src.HoldPassports[p.ID] = p.Document
		}
	}
	return nil
}

// latestCheckpointLeaves returns the latest checkpoint's document and
// leaves, or nils when none has been made.
func (u *Audit) latestCheckpointLeaves(ctx context.Context) ([]byte, []checkpoint.Leaf, error) {
	c, doc, err := u.latestCheckpoint(ctx)
	if err != nil || doc == nil {
		return nil, nil, err
	}
	leaves, err := u.store.CheckpointLeaves(ctx, c.Number)
	if err != nil {
		return nil, nil, err
	}
	return doc, leaves, nil
}

// passportInForce returns the last passport issued for the agent that was
// in force at asOf, or nil.
func (u *Audit) passportInForce(ctx context.Context, agentID string, asOf time.Time) ([]byte, error) {
	ps, err := u.store.Passports(ctx, agentID)
	if err != nil {
		return nil, err
	}
	for i := len(ps) - 1; i >= 0; i-- {
		if p := &ps[i]; !p.ComputedAt.After(asOf) && asOf.Before(p.ExpiresAt) {
			return p.Document, nil
		}
	}
	return nil, nil
}

// logInclusion proves the bundle's audited head record to be in the
// transparency log (Log.ProveRecord), against the latest checkpoint note
// (signed now if it does not cover the record yet). No proof, and no
// error, when the deployment signs no notes (its active key is HMAC) or
// the record has no log index yet (a backfill under way).
func (u *Audit) logInclusion(ctx context.Context, b *audit.Bundle) (*audit.LogInclusion, error) {
	if u.log == nil || len(b.Chains) == 0 || len(b.Chains[0].Records) == 0 {
		return nil, nil
	}
	ch := &b.Chains[0]
	seq := ch.FromSeq + int64(len(ch.Records)) - 1
	in, err := u.log.ProveRecord(ctx, b.AgentID, seq)
	switch errkind.Of(err) {
	case errkind.Unknown:
		if err != nil {
			return nil, err
		}
	case errkind.Invalid, errkind.Conflict:
		return nil, nil
	default:
		return nil, err
	}
	return &audit.LogInclusion{Note: in.Checkpoint.Note(), Index: in.Record.Index, Seq: seq, Proof: in.Proof}, nil
}
