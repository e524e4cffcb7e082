package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// Erasure (GDPR Art. 17, spec §11.4): an operator erases an agent at its
// request. The storage layer renames the agent to a random pseudonym
// everywhere and keeps every chain verifying (ledger.DecideErasure,
// ErasureStore); this file chooses the pseudonym and the commitment to the
// erased id, and makes this process forget the id at once.

// PseudonymPrefix starts every erased agent's pseudonym.
const PseudonymPrefix = "erased-"

// MaxErasureReasonLen bounds an erasure's reason, in bytes.
const MaxErasureReasonLen = 1000

// ErasureResult is a completed erasure, as returned to the operator who
// made it and nobody else.
type ErasureResult struct {
	// Erasure is the stored erasure: the pseudonym, the commitment to the
	// erased id (Identity), the operator and the instant.
	ledger.Erasure
	// Opening is the salt of Identity: Identity ==
	// audit.Commit(audit.Agents, Opening, erased id). It is returned only
	// here and never stored, so that only the agent (to whom the operator
	// hands it) can later prove that the erasure was of its id; whoever
	// holds it and guesses the id can link the pseudonym to it, so it must
	// not be kept beside the id.
	Opening [audit.SaltSize]byte
	// Reason is the operator's reason with the erased id replaced by the
	// pseudonym. It is returned for the operator's own records, not
	// stored: free text may name the person the erasure is for.
	Reason string
}

// EraseAgent erases agentID for operator c (ErasureStore.Erase): its id is
// replaced by a fresh random pseudonym ("erased-" and 16 hex digits) in
// every table, the records that named it are sealed so that every chain
// still verifies, its tokens and passports are revoked, and the pseudonym
// is unlisted. Scores, counts and chains of other agents are unchanged.
// The erased id is committed to with a fresh salt (audit.Commit, category
// agents), returned once as ErasureResult.Opening. This process forgets
// the id before returning (its certificate, visibility and history memos),
// so its routes answer 404 for it at once; other processes sharing the
// database see the erasure through their cache watch, within a second.
//
// Errors: ErrUnauthorized for an anonymous caller and ErrForbidden for an
// agent's token (the agent itself included), before the agent is looked
// up; ErrInvalid for a malformed id or a reason over MaxErasureReasonLen
// bytes or not UTF-8; ErrNotFound (with a public detail) for an unknown
// agent; ErrConflict when the agent is itself a pseudonym or one of the
// records to seal is broken (ledger verify names it; repair first);
// ErrUnavailable.
func (u *Rights) EraseAgent(ctx context.Context, c Caller, agentID, reason string) (ErasureResult, error) {
	res, err := u.eraseAgent(ctx, c, agentID, reason, rand.Reader)
	// The entry names the pseudonym, never the erased id, and not the
	// reason, which may.
	u.actions.record(ctx, auth.ActErasure, res.Pseudonym, res.ID, "", err)
	return res, err
}

func (u *Rights) eraseAgent(ctx context.Context, c Caller, agentID, reason string, random io.Reader) (ErasureResult, error) {
	if err := mayErase(c); err != nil {
		return ErasureResult{}, err
	}
	if err := ledger.CheckID("agent_id", agentID); err != nil {
		return ErasureResult{}, err
	}
	if len(reason) > MaxErasureReasonLen || !utf8.ValidString(reason) {
		return ErasureResult{}, fmt.Errorf("%w: reason must be valid UTF-8 of at most %d bytes", errkind.ErrInvalid, MaxErasureReasonLen)
	}
	var r ErasureResult
	var nonce [16]byte
	if _, err := io.ReadFull(random, nonce[:]); err != nil {
		return ErasureResult{}, fmt.Errorf("drawing an erasure's pseudonym: %w", err)
	}
	if _, err := io.ReadFull(random, r.Opening[:]); err != nil {
		return ErasureResult{}, fmt.Errorf("drawing an erasure's salt: %w", err)
	}
	// Independent draws: the pseudonym must not be derivable from the id,
	// nor the erasure's id from the pseudonym.
	req := ledger.ErasureRequest{
		AgentID:   agentID,
		Pseudonym: PseudonymPrefix + hex.EncodeToString(nonce[:8]),
		Identity:  audit.Commit(audit.Agents, r.Opening, agentID),
		ID:        "erasure-" + hex.EncodeToString(nonce[8:]),
		By:        c.Operator,
		At:        u.clock.now(),
	}
	e, err := u.store.Erase(ctx, req)
	// Forgotten whatever the outcome: a failed commit may still have
	// committed, and forgetting costs one read.
	u.forgetAgent(agentID, req.Pseudonym)
	if err != nil {
		return ErasureResult{}, unknownAgent(err, agentID)
	}
	r.Erasure = e
	r.Reason = ledger.ReplaceID(reason, agentID, e.Pseudonym)
	return r, nil
}

// Erasures lists every erasure, oldest first, for an operator: pseudonyms
// and commitments, never an erased id nor an opening. Errors:
// ErrUnauthorized or ErrForbidden for any other caller, ErrUnavailable.
func (u *Rights) Erasures(ctx context.Context, c Caller) ([]ledger.Erasure, error) {
	if err := mayErase(c); err != nil {
		return nil, err
	}
	return u.store.Erasures(ctx)
}

// mayErase: erasure is an operator's act, done at the data subject's
// request; an agent's token cannot erase (the agent itself asks its
// operator), so that a stolen token cannot destroy an agent's history.
func mayErase(c Caller) error {
	switch {
	case c.IsOperator():
		return nil
	case c.AgentID != "":
		return fmt.Errorf("%w: only an operator may erase agents or list erasures; an agent asks its operator", errkind.ErrForbidden)
	}
	return fmt.Errorf("%w: only an operator may erase agents or list erasures", errkind.ErrUnauthorized)
}

// VerifyErasureOpening reports whether opening opens the erasure's
// identity commitment to agentID: the proof an erased agent gives that the
// erasure was of its id.
func VerifyErasureOpening(e *ledger.Erasure, opening [audit.SaltSize]byte, agentID string) bool {
	return audit.Commit(audit.Agents, opening, agentID) == e.Identity
}

// forgetAgent drops everything this process remembers of the ids (the
// erased one and its pseudonym) and tells the cache watch, so that no
// remembered certificate, visibility or history of the erased id is served
// after the erasure.
func (u *Rights) forgetAgent(ids ...string) {
	if w := u.certs.startedWatch(); w != nil {
		w.Wrote(ids)
	}
	for _, id := range ids {
		u.certs.forget(id)
		u.pubs.forget(id)
		u.histories.forget(id)
		u.windows.forget(id)
		u.pages.forget(id)
	}
}
