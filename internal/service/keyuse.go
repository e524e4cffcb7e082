package service

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/passport"
)

// signing holds the keys that sign passports and check them, shared by the
// groups that sign or verify: the keyring's, or the one fixed key.
type signing struct {
	ring     *Keyring     // Config.Keys
	key      passport.Key // Config.Key, when ring is nil
	platform string       // Config.Platform: issuer.platform of new passports
	fixed    fixedKeys
}

// current returns the keys in use: the keyring's, or the one fixed key.
func (s *signing) current(ctx context.Context) *keySet {
	if s.ring != nil {
		return s.ring.current(ctx)
	}
	s.fixed.once.Do(func() {
		s.fixed.set = &keySet{active: s.key, keys: []passport.Key{s.key},
			records: []keyring.Record{{ID: s.key.ID(), Alg: s.key.Alg(), State: keyring.Active}}}
	})
	return s.fixed.set
}

// fixedKeys is the key set of Config.Key, built once.
type fixedKeys struct {
	once sync.Once
	set  *keySet
}

// signer signs the passport of a freshly computed entry with k and records
// the passport's id and k's with it (ledger.IssueFunc).
func (s *signing) signer(k passport.Key) ledger.IssueFunc {
	return func(e *ledger.ScoreEntry) ([]byte, string, error) {
		p, err := passport.New(e.AgentID, s.platform, e.Result, e.ComputedAt)
		if err != nil {
			return nil, "", fmt.Errorf("issuing a passport for %q: %w", e.AgentID, err)
		}
		doc, err := p.Sign(k)
		if err != nil {
			return nil, "", fmt.Errorf("signing a passport for %q: %w", e.AgentID, err)
		}
		// The store keeps the history of passports by this id (an appeal
		// names the passport it disputes by it, §11.3) and finds those an
		// older key signed by KeyID.
		e.PassportID, e.KeyID = p.AgentPassportID, k.ID()
		return doc, p.Issuer.Signature, nil
	}
}

// canReissue refuses, before anything is written, a correction this
// process could not re-issue passports for: without a key the store's
// transaction would fail at the first signature.
func (s *signing) canReissue() error {
	if !s.current(context.Background()).active.CanSign() {
		return fmt.Errorf("%w: no signing key is configured, and a correction re-issues the affected passports (set %s)", errkind.ErrInvalid, SigningKeyEnv)
	}
	return nil
}

// stats describes the active key without reloading or blocking.
func (s *signing) stats() KeyringStats {
	var set *keySet
	if s.ring != nil {
		set = s.ring.set.Load()
	} else {
		set = s.current(context.Background())
	}
	a := set.activeRecord()
	return KeyringStats{ActiveID: a.ID, ActiveAlg: a.Alg, ActiveSince: a.CreatedAt}
}

// Keys are the use cases of the signing keys (spec §8.1): the keyring
// listed, rotated and moved by hand, the passports older keys signed
// re-issued, and the public keys published.
type Keys struct {
	store   KeysStore
	clock   clock
	keys    *signing
	actions *actionLog
}

// signedBy returns the id of the key of s that signed a stored passport
// ("" for the fixed key, which has none), and whether one of s did: a
// stored passport is served only while the key that signed it is the
// active one. The store records the key of what this version issues;
// a passport stored without it (issued before keyrings) is verified
// against s to find it: a full L1 verification, not a lookup.
func signedBy(s *keySet, e *ledger.ScoreEntry, now time.Time) (string, bool) {
	if e.KeyID != "" {
		return e.KeyID, true
	}
	v := passport.Verify(e.Passport, s.keys, now)
	if v.KeyIndex < 0 {
		return "", false
	}
	return s.keys[v.KeyIndex].ID(), true
}

// Keyring returns every key of the database's keyring, oldest first, without
// their sealed material: what `swarmscore key list` shows. It needs no
// master key. Errors: ErrUnavailable.
func (u *Keys) Keyring(ctx context.Context) ([]keyring.Record, error) {
	recs, err := u.store.Keys(ctx)
	for i := range recs {
		recs[i].Sealed = nil
	}
	return recs, err
}

// RotateKey makes a new active key of alg (Keyring.Rotate) and returns its
// record. Re-issue the passports older keys signed with ReissuePassports.
// Errors: ErrInvalid without a keyring, and Keyring.Rotate's.
func (u *Keys) RotateKey(ctx context.Context, alg string) (rec keyring.Record, err error) {
	defer func() { u.actions.record(ctx, auth.ActKeyRotate, "", rec.ID, "new "+alg+" key", err) }()
	if u.keys.ring == nil {
		return keyring.Record{}, fmt.Errorf("%w: no keyring is open", errkind.ErrInvalid)
	}
	return u.keys.ring.Rotate(ctx, alg)
}

// SetKeyState retires or revokes key id (keyring.CheckMove's rules: the
// active key is replaced by a rotation, never retired) as of now, and
// reloads this process's keyring. Passports the key signed then fail with
// key_retired or key_revoked; the other processes see it within a second.
// Errors: ErrNotFound for an unknown key, ErrConflict for a move the rules
// refuse, ErrInvalid, ErrUnavailable.
func (u *Keys) SetKeyState(ctx context.Context, id string, to keyring.State) (err error) {
	defer func() { u.actions.record(ctx, auth.ActKeyState, "", id, "to "+string(to), err) }()
	if to != keyring.Retired && to != keyring.Revoked {
		return fmt.Errorf("%w: a key is retired or revoked by hand; %s comes from a rotation", errkind.ErrInvalid, to)
	}
	if err := u.store.SetKeyState(ctx, id, to, u.clock.exact()); err != nil {
		return err
	}
	if u.keys.ring != nil {
		return u.keys.ring.Reload(ctx)
	}
	return nil
}

// ReissueReport says how far ReissuePassports got.
type ReissueReport struct {
	// Reissued counts the passports signed again with the active key.
	Reissued int
	// Batches counts the batches done; Last is the last agent re-issued
	// ("" before the first).
	Batches int
	Last    string
}

// ReissuePassports signs again, with the active key, every stored passport
// that has not expired and that another key signed (or whose key was not
// recorded: issued before keyrings), batch agents at a time (1 to
// ledger.MaxListLimit), calling progress after each batch. Each passport is
// replaced in its own transaction, so an interrupted run loses nothing, and
// running it again resumes where it stopped: what was re-issued is signed
// by the active key and is not found again. Errors: ErrInvalid for a batch
// size out of range, ctx's error when it ends (with the report so far),
// ErrUnavailable.
func (u *Keys) ReissuePassports(ctx context.Context, batch int, progress func(ReissueReport)) (ReissueReport, error) {
	var rep ReissueReport
	if batch < 1 || batch > ledger.MaxListLimit {
		return rep, fmt.Errorf("%w: batch size %d is outside 1..%d", errkind.ErrInvalid, batch, ledger.MaxListLimit)
	}
	for {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		ks, now := u.keys.current(ctx), u.clock.now()
		agents, err := u.store.StalePassports(ctx, ks.active.ID(), now, rep.Last, batch)
		if err != nil {
			return rep, err
		}
		for _, a := range agents {
			if _, err := u.store.RefreshScore(ctx, a, now, u.keys.signer(ks.active)); err != nil {
				return rep, err
			}
			rep.Reissued++
			rep.Last = a
		}
		if len(agents) == 0 {
			return rep, nil
		}
		rep.Batches++
		if progress != nil {
			progress(rep)
		}
	}
}

// PublicKeys returns the JWK set of every Ed25519 key whose passports may
// still be valid: the active key and the verify-only ones demoted less
// than a passport's lifetime (plus the clock-skew allowance) ago. HMAC keys
// are never published. It reloads a stale keyring like the other use
// cases and cannot fail.
func (u *Keys) PublicKeys(ctx context.Context) passport.JWKSet {
	s := u.keys.current(ctx)
	now := u.clock.now()
	set := passport.JWKSet{Keys: []passport.JWK{}}
	for i, k := range s.keys {
		rec := s.records[i]
		if k.Alg() != passport.AlgEdDSA || !rec.State.Accepted() {
			continue
		}
		var expires time.Time
		if rec.State == keyring.VerifyOnly {
			if expires = rec.StateChangedAt.Add(passport.Validity + passport.MaxClockSkew); !now.Before(expires) {
				continue
			}
		}
		j, err := passport.PublicJWK(k, string(rec.State), rec.CreatedAt, expires)
		if err != nil { // every key of a keyring has an id
			continue
		}
		set.Keys = append(set.Keys, j)
	}
	return set
}

// KeyHistory returns every Ed25519 key this deployment (its environment)
// ever signed with, oldest first, each with the interval it signed in and
// its state, so that what a key signed can be verified after it is rotated
// out, retired or revoked (passport.KeyHistory). HMAC keys are never
// published; a key never active, and the fixed key of Config.Key, whose
// interval is not known, are left out. It reloads a stale keyring like the
// other use cases and cannot fail.
func (u *Keys) KeyHistory(ctx context.Context) passport.KeyHistory {
	s := u.keys.current(ctx)
	h := passport.KeyHistory{Keys: []passport.HistoryKey{}}
	for _, i := range s.history() {
		k, rec := s.keys[i], s.records[i]
		j, err := passport.PublicHistoryKey(k, string(rec.State), passport.SigningInterval{From: rec.ActiveFrom, Until: rec.ActiveUntil, RevokedAt: rec.RevokedAt()})
		if err != nil { // every key of a keyring has an id and a consistent record
			continue
		}
		h.Keys = append(h.Keys, j)
	}
	return h
}

// history returns the indexes in s of the key history: every Ed25519 key
// with an id that was ever active, oldest first, in every state. The key
// history document and the DID document both publish these keys.
func (s *keySet) history() []int {
	var out []int
	for i, k := range s.keys {
		if k.Alg() == passport.AlgEdDSA && k.ID() != "" && !s.records[i].ActiveFrom.IsZero() {
			out = append(out, i)
		}
	}
	return out
}

// KeyringStats describes the active key, for metrics.
type KeyringStats struct {
	// ActiveID and ActiveAlg name the key that signs.
	ActiveID, ActiveAlg string
	// ActiveSince is the active key's creation time; zero for a static key
	// (SWARMSCORE_SIGNING_KEY), whose age is not known.
	ActiveSince time.Time
}

// KeyringStats returns what is known about the active key now, without
// reloading or blocking.
func (u *Keys) KeyringStats() KeyringStats { return u.keys.stats() }
