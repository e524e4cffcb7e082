package service

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/passport"
)

// KeyRotationAge is how old an active key may grow before it is due for
// rotation (spec §8.1: "Rotate annually").
const KeyRotationAge = 365 * 24 * time.Hour

// keyReload bounds how stale a process's copy of the keyring in the
// database may be: a rotation by another process (`swarmscore key rotate`,
// another replica) is seen within it, with at most one query per interval.
const keyReload = time.Second

// KeyConfig says where a process's signing keys come from (spec §8.1).
type KeyConfig struct {
	// SigningKey is SWARMSCORE_SIGNING_KEY: a static HMAC key, the active
	// one, when not empty. The keyring in the database is then not used.
	SigningKey string
	// VerifyKeys is SWARMSCORE_VERIFY_KEYS: static verify-only HMAC keys,
	// comma-separated; only with SigningKey.
	VerifyKeys string
	// MasterKey is SWARMSCORE_MASTER_KEY: 64 hex characters that seal the
	// keyring in the database. Without it, an embedded store keeps one in
	// MasterKeyFile(DBFile); a database server needs it.
	MasterKey string
	// DBFile is the file of an embedded database, "" for a database
	// server: the master key file and a key file from before keyrings
	// (KeyFile) are beside it.
	DBFile string
	// Alg is the algorithm of keys generated here (passport.AlgHS256 when
	// empty, or passport.AlgEdDSA); with RequireAlg the active key must
	// have it too (the operator chose it).
	Alg        string
	RequireAlg bool
	// Environment is the deployment's environment (DefaultEnvironment when
	// empty), recorded with every key generated here; keys of another
	// environment are not used, and an active one is an error.
	Environment string
	// Logger receives what happened to keys (generated, imported,
	// reloaded), never key material; nil discards.
	Logger *slog.Logger
	// Existing opens only a keyring that has keys: a command that only
	// reads or checks never makes one (nor a master key file).
	Existing bool
	// Now is the clock keys are created and rotated by; nil means
	// time.Now.
	Now func() time.Time
}

// ParseSigningAlg reads a --signing-alg or SWARMSCORE_SIGNING_ALG value:
// Ed25519 (or EdDSA) and HMAC-SHA256 (or HMAC, HS256), in any case; "" is
// HMAC-SHA256. Errors: ErrInvalid.
func ParseSigningAlg(s string) (string, error) {
	switch strings.ToLower(s) {
	case "", "hmac", "hmac-sha256", "hs256":
		return passport.AlgHS256, nil
	case "ed25519", "eddsa":
		return passport.AlgEdDSA, nil
	}
	return "", fmt.Errorf("%w: signing algorithm %q is not Ed25519 or HMAC-SHA256", errkind.ErrInvalid, s)
}

// Keyring holds the keys a process signs and verifies with: one active key
// and the others, each in its state (internal/keyring). It is either
// static (SWARMSCORE_SIGNING_KEY and SWARMSCORE_VERIFY_KEYS) or the
// keyring in the database, unsealed with the master key and reloaded at
// most once a keyReload (and on Reload), so a rotation by any process is
// seen without a restart. It is safe for concurrent use.
type Keyring struct {
	store  KeyStore // nil when static
	master []byte
	// root is what Derive derives from: the master key, or the static
	// signing secret.
	root []byte
	env  string
	log  *slog.Logger
	now  func() time.Time

	set atomic.Pointer[keySet]

	// reloading admits one reload at a time; opened caches the keys
	// unsealed so far by id (a key's material never changes).
	reloading sync.Mutex
	opened    map[string]opened
	// base and attempt time reloads on the monotonic clock: attempt is
	// when the last one started, as time since base.
	base    time.Time
	attempt atomic.Int64
	failing atomic.Bool // the last reload failed (logged once per outage)
}

// keySet is one state of the keyring.
type keySet struct {
	active passport.Key   // signs; it has an id
	keys   []passport.Key // every key of the environment, in its state
	// records are the keys' records without their sealed material, in
	// the order of keys; the active one is records[activeAt].
	records  []keyring.Record
	activeAt int
	// The same keys for checkpoints (internal/checkpoint): the active
	// one's signer, and verifiers by the key ids checkpoints name.
	cpSigner checkpoint.Signer
	cpKeys   map[string]cpKey
}

// cpKey is a key's checkpoint verifier and its state.
type cpKey struct {
	v     checkpoint.Verifier
	state keyring.State
}

// opened is a key unsealed: for passports and for checkpoints.
type opened struct {
	key    passport.Key
	signer checkpoint.Signer
	// verifiers by the key ids checkpoints may name it by: its id, and for
	// an HMAC key the bare fingerprint that checkpoints signed before
	// keyrings name (NewCheckpointKey).
	verifiers map[string]checkpoint.Verifier
}

// checkpointKeys makes the checkpoint keys of an HMAC secret (priv nil) or
// an Ed25519 private key, named id.
func checkpointKeys(id string, secret []byte, priv ed25519.PrivateKey) (checkpoint.Signer, map[string]checkpoint.Verifier, error) {
	if priv != nil {
		s, err := checkpoint.NewEd25519Signer(id, priv)
		if err != nil {
			return nil, nil, err
		}
		return s, map[string]checkpoint.Verifier{id: s.Verifier()}, nil
	}
	k, err := checkpoint.NewHMACKey(id, secret)
	if err != nil {
		return nil, nil, err
	}
	legacy, err := NewCheckpointKey(secret)
	if err != nil {
		return nil, nil, err
	}
	return k, map[string]checkpoint.Verifier{id: k, legacy.KeyID(): legacy}, nil
}

// add appends the key o, in the state rec says, to s.
func (s *keySet) add(o opened, rec keyring.Record) {
	k := o.key
	switch rec.State {
	case keyring.Retired:
		k = k.WithStatus(passport.KeyRetired)
	case keyring.Revoked:
		k = k.WithStatus(passport.KeyRevoked)
	}
	if rec.State == keyring.Active {
		s.active, s.activeAt, s.cpSigner = k, len(s.records), o.signer
	}
	if s.cpKeys == nil {
		s.cpKeys = map[string]cpKey{}
	}
	for kid, v := range o.verifiers {
		s.cpKeys[kid] = cpKey{v, rec.State}
	}
	rec.Sealed = nil
	s.keys = append(s.keys, k)
	s.records = append(s.records, rec)
}

func (s *keySet) activeRecord() keyring.Record { return s.records[s.activeAt] }

// OpenKeyring returns the keyring cfg describes over store (which may be
// nil with a static key).
//
// With SigningKey, the keys are static: an HS256 active key and the
// VerifyKeys, each with the id keyID gives its material. They are refused
// when shorter than 32 bytes or with almost no entropy, when RequireAlg
// asks for Ed25519, when the database registers one of them to another
// environment, and when one is an encoding of an Ed25519 public key of the
// database's keyring (key confusion).
//
// Otherwise the keyring is the database's, sealed under the master key
// (MasterKey, else a file beside DBFile, created with the first key). An
// empty keyring gets its first key: the key file of an embedded store from
// before keyrings (KeyFile), so passports signed with it keep verifying,
// else a new key of cfg.Alg. Opening fails when the master key does not
// unseal the keys, when the active key belongs to another environment, or
// when RequireAlg and the active key has another algorithm.
//
// Every error matches errkind.ErrInvalid (a configuration to fix) or is
// the store's, and never contains key material.
func OpenKeyring(ctx context.Context, store KeyStore, cfg KeyConfig) (*Keyring, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	env, alg := cfg.environment(), cfg.alg()
	r := &Keyring{env: env, log: cfg.Logger, now: cfg.Now, base: time.Now(), opened: map[string]opened{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	if cfg.SigningKey != "" {
		s, err := staticKeys(cfg.SigningKey, cfg.VerifyKeys, env)
		if err != nil {
			return nil, err
		}
		if store != nil {
			recs, err := store.Keys(ctx)
			if err != nil {
				return nil, err
			}
			if err := checkStatic(s, recs, env); err != nil {
				return nil, err
			}
			if len(recs) > 0 {
				r.log.Info("signing with "+SigningKeyEnv+"; the keyring in the database is not used", "kid", s.active.ID())
			}
		}
		r.set.Store(s)
		r.root = []byte(cfg.SigningKey)
		return r, nil
	}
	recs, err := store.Keys(ctx)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 && cfg.Existing {
		return nil, fmt.Errorf("%w: no signing key: %s is not set and the keyring is empty ('swarmscore serve' or 'swarmscore key rotate' makes the first key)", errkind.ErrInvalid, SigningKeyEnv)
	}
	if r.master, err = masterKey(cfg, len(recs) == 0, r.log); err != nil {
		return nil, err
	}
	r.root = r.master
	r.store = store
	if len(recs) == 0 {
		if err := r.firstKey(ctx, cfg.DBFile, alg); err != nil {
			return nil, err
		}
	}
	if err := r.Reload(ctx); err != nil {
		return nil, err
	}
	if a := r.set.Load().activeRecord(); cfg.RequireAlg && a.Alg != alg {
		return nil, fmt.Errorf("%w: the active key %s is %s, not %s; switch with `swarmscore key rotate --signing-alg %s`", errkind.ErrInvalid, a.ID, a.Alg, alg, algFlag(alg))
	}
	return r, nil
}

func (c *KeyConfig) environment() string {
	if c.Environment == "" {
		return DefaultEnvironment
	}
	return c.Environment
}

func (c *KeyConfig) alg() string {
	if c.Alg == "" {
		return passport.AlgHS256
	}
	return c.Alg
}

// Check finds what is wrong with c without a database, so that a server
// can refuse a bad configuration before it opens or creates one: an
// invalid environment or algorithm, static keys that are short or have
// almost no entropy, verify-only keys without a signing key, an Ed25519
// requirement with a static (HMAC) key, a master key that is not 64 hex
// characters, or none for a database server (DBFile ""). Errors:
// ErrInvalid, never with key material.
func (c *KeyConfig) Check() error {
	if env := c.environment(); !ledger.ValidID(env) {
		return fmt.Errorf("%w: environment %q must be 1 to 128 characters from [A-Za-z0-9._:-]", errkind.ErrInvalid, env)
	}
	if a := c.alg(); a != passport.AlgHS256 && a != passport.AlgEdDSA {
		return fmt.Errorf("%w: signing algorithm %q", errkind.ErrInvalid, a)
	}
	if c.SigningKey == "" {
		if c.VerifyKeys != "" {
			return fmt.Errorf("%w: %s lists verify-only keys beside %s; without it, keys are kept in the database's keyring (swarmscore key rotate)", errkind.ErrInvalid, VerifyKeysEnv, SigningKeyEnv)
		}
		if c.MasterKey != "" {
			_, err := parseMaster([]byte(c.MasterKey), MasterKeyEnv)
			return err
		}
		if c.DBFile == "" {
			return errNoMaster
		}
		return nil
	}
	if c.RequireAlg && c.alg() != passport.AlgHS256 {
		return fmt.Errorf("%w: %s is an HMAC key; unset it to sign with an %s key kept in the database's keyring", errkind.ErrInvalid, SigningKeyEnv, c.alg())
	}
	_, err := staticKeys(c.SigningKey, c.VerifyKeys, c.environment())
	return err
}

func algFlag(alg string) string {
	if alg == passport.AlgEdDSA {
		return "Ed25519"
	}
	return "HMAC-SHA256"
}

// Derive returns a 32-byte key for purpose, HMAC-SHA256 of purpose under
// the master key (or, with static keys, under SWARMSCORE_SIGNING_KEY): the
// same on every server of a deployment and across key rotations, and no
// signing key's secret.
func (r *Keyring) Derive(purpose string) []byte {
	m := hmac.New(sha256.New, r.root)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// masterKey reads SWARMSCORE_MASTER_KEY, or the master key file of an
// embedded store, which is created only for an empty keyring: a missing
// file beside a keyring means the keys cannot be unsealed.
func masterKey(cfg KeyConfig, empty bool, log *slog.Logger) ([]byte, error) {
	text, what := []byte(cfg.MasterKey), MasterKeyEnv
	if cfg.MasterKey == "" {
		if cfg.DBFile == "" {
			return nil, errNoMaster
		}
		path := MasterKeyFile(cfg.DBFile)
		var err error
		if empty {
			var created bool
			text, created, err = readOrCreateKeyFile(path)
			if created {
				log.Info("generated the master key that seals the keyring; back it up with the database", "path", path)
			}
		} else {
			text, err = readKeyFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				err = fmt.Errorf("%w: the keyring in the database is sealed under the master key in %s, which is missing: restore it from the backup, or set %s", errkind.ErrInvalid, path, MasterKeyEnv)
			}
		}
		if err != nil {
			return nil, err
		}
		what = "master key file " + path
	}
	return parseMaster(text, what)
}

var errNoMaster = fmt.Errorf("%w: a database server keeps its keyring sealed under %s (64 hex characters: `swarmscore keygen`), the same on every server; or set %s to sign with a static key",
	errkind.ErrInvalid, MasterKeyEnv, SigningKeyEnv)

// parseMaster decodes a master key's 64 hex characters; what names it in
// errors.
func parseMaster(text []byte, what string) ([]byte, error) {
	master := make([]byte, keyring.MasterKeySize)
	if n, err := hex.Decode(master, text); err != nil || n != len(master) || len(text) != 2*len(master) {
		return nil, fmt.Errorf("%w: %s must be %d hex characters (`swarmscore keygen` prints one)", errkind.ErrInvalid, what, 2*keyring.MasterKeySize)
	}
	if err := checkSecret(what, text, 2*keyring.MasterKeySize); err != nil {
		return nil, err
	}
	return master, nil
}

// keyID is keyring.KeyID: a key has the same id whether it is static or
// in the keyring, on every server.
func keyID(alg string, material []byte) string { return keyring.KeyID(alg, material) }

// staticKeys is the key set of SWARMSCORE_SIGNING_KEY and
// SWARMSCORE_VERIFY_KEYS.
func staticKeys(signing, verify, env string) (*keySet, error) {
	s := &keySet{}
	add := func(what, secret string, state keyring.State) error {
		if err := checkSecret(what, []byte(secret), passport.MinKeySize); err != nil {
			return err
		}
		id := keyID(passport.AlgHS256, []byte(secret))
		for _, r := range s.records {
			if r.ID == id {
				return nil // the active key listed again among the old ones
			}
		}
		k, err := passport.NewKey([]byte(secret))
		if err == nil {
			k, err = k.WithID(id)
		}
		o := opened{key: k}
		if err == nil {
			o.signer, o.verifiers, err = checkpointKeys(id, []byte(secret), nil)
		}
		if err != nil {
			return fmt.Errorf("%w: %s: %v", errkind.ErrInvalid, what, err)
		}
		s.add(o, keyring.Record{ID: id, Alg: passport.AlgHS256, Environment: env, State: state})
		return nil
	}
	if err := add(SigningKeyEnv, signing, keyring.Active); err != nil {
		return nil, err
	}
	n := 0
	for _, v := range strings.Split(verify, ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		n++
		if err := add(fmt.Sprintf("key %d of %s", n, VerifyKeysEnv), v, keyring.VerifyOnly); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// checkStatic refuses static keys that the database registers to another
// environment, and static HMAC secrets that are an Ed25519 public key of
// the database's keyring in a published form: such an "HMAC key" would let
// anyone holding the public key forge passports.
func checkStatic(s *keySet, recs []keyring.Record, env string) error {
	for _, rec := range recs {
		for i, r := range s.records {
			if r.ID == rec.ID && rec.Environment != env {
				return fmt.Errorf("%w: %s key %s is registered to environment %q, not %q: use a key of this environment",
					errkind.ErrInvalid, staticSource(i), rec.ID, rec.Environment, env)
			}
		}
		if len(rec.Public) != ed25519.PublicKeySize {
			continue
		}
		forms := []string{string(rec.Public), base64.RawURLEncoding.EncodeToString(rec.Public), base64.StdEncoding.EncodeToString(rec.Public), hex.EncodeToString(rec.Public)}
		for i, k := range s.keys {
			for _, f := range forms {
				if keyID(passport.AlgHS256, []byte(f)) == k.ID() {
					return fmt.Errorf("%w: %s key %s is the public key of Ed25519 key %s: a public key must never be used as an HMAC secret (key confusion)",
						errkind.ErrInvalid, staticSource(i), k.ID(), rec.ID)
				}
			}
		}
	}
	return nil
}

func staticSource(i int) string {
	if i == 0 {
		return SigningKeyEnv
	}
	return VerifyKeysEnv
}

// firstKey gives an empty keyring its first, active key: the key file of
// an embedded store from before keyrings, else a new key of alg.
func (r *Keyring) firstKey(ctx context.Context, dbFile, alg string) error {
	now := r.now().UTC()
	if dbFile != "" {
		path := KeyFile(dbFile)
		secret, err := readKeyFile(path)
		switch {
		case err == nil:
			if err := checkSecret("signing key file "+path, secret, passport.MinKeySize); err != nil {
				return err
			}
			rec, err := r.record(passport.AlgHS256, secret, nil, now)
			if err != nil {
				return err
			}
			if err := r.store.AddKey(ctx, rec); err != nil && !errors.Is(err, errkind.ErrConflict) { // a concurrent start imported it
				return err
			}
			r.log.Info("imported the signing key file into the keyring; passports signed with it keep verifying", "path", path, "kid", rec.ID)
			return nil
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
	}
	rec, err := r.generate(alg, now)
	if err != nil {
		return err
	}
	if err := r.store.AddKey(ctx, rec); err != nil {
		return err
	}
	r.log.Info("generated the first signing key; it is kept sealed in the database", "kid", rec.ID, "alg", rec.Alg, "environment", rec.Environment)
	return nil
}

// generate makes a new active key of alg, sealed. An HMAC secret is 64 hex
// characters (what `swarmscore keygen` prints, so it can be moved into
// SWARMSCORE_SIGNING_KEY as it is); an Ed25519 key is sealed as its seed.
func (r *Keyring) generate(alg string, now time.Time) (keyring.Record, error) {
	var raw [32]byte
	rand.Read(raw[:]) // never fails: crypto/rand crashes the program rather than return weak bytes
	switch alg {
	case passport.AlgHS256:
		return r.record(alg, []byte(hex.EncodeToString(raw[:])), nil, now)
	case passport.AlgEdDSA:
		return r.record(alg, raw[:], ed25519.NewKeyFromSeed(raw[:]).Public().(ed25519.PublicKey), now)
	}
	return keyring.Record{}, fmt.Errorf("%w: signing algorithm %q", errkind.ErrInvalid, alg)
}

// record seals secret (an HMAC key, or the seed of the Ed25519 key pub)
// into an active key record of this keyring's environment.
func (r *Keyring) record(alg string, secret, pub []byte, now time.Time) (keyring.Record, error) {
	material := secret
	if alg == passport.AlgEdDSA {
		material = pub
	}
	rec := keyring.Record{ID: keyID(alg, material), Alg: alg, Environment: r.env, State: keyring.Active,
		CreatedAt: now, StateChangedAt: now, Public: pub}
	var err error
	if rec.Sealed, err = keyring.Seal(r.master, rec.ID, secret); err != nil {
		return keyring.Record{}, err
	}
	return rec, nil
}

// open unseals a record into a key with its id, for passports and for
// checkpoints.
func (r *Keyring) open(rec keyring.Record) (opened, error) {
	secret, err := keyring.Open(r.master, rec.ID, rec.Sealed)
	if err != nil {
		return opened{}, fmt.Errorf("key %s: %w", rec.ID, err)
	}
	defer clear(secret)
	var o opened
	var priv ed25519.PrivateKey
	switch rec.Alg {
	case keyring.HS256:
		o.key, err = passport.NewKey(secret)
	case keyring.EdDSA:
		if len(secret) != ed25519.SeedSize {
			return opened{}, fmt.Errorf("%w: key %s: a sealed Ed25519 seed is %d bytes", errkind.ErrInvalid, rec.ID, ed25519.SeedSize)
		}
		priv = ed25519.NewKeyFromSeed(secret)
		if !bytes.Equal(priv.Public().(ed25519.PublicKey), rec.Public) {
			return opened{}, fmt.Errorf("%w: key %s: its public key is not its seed's (the record was altered)", errkind.ErrInvalid, rec.ID)
		}
		o.key, err = passport.NewEd25519Key(priv)
	default:
		err = fmt.Errorf("%w: key %s has algorithm %q", errkind.ErrInvalid, rec.ID, rec.Alg)
	}
	if err == nil {
		o.key, err = o.key.WithID(rec.ID)
	}
	if err == nil {
		o.signer, o.verifiers, err = checkpointKeys(rec.ID, secret, priv)
	}
	if err != nil {
		return opened{}, fmt.Errorf("%w: key %s: %v", errkind.ErrInvalid, rec.ID, err)
	}
	return o, nil
}

// keySetOf builds the key set of recs, opening the keys not opened yet.
// Keys of other environments are left out; an active one is an error.
func (r *Keyring) keySetOf(recs []keyring.Record) (*keySet, error) {
	s := &keySet{activeAt: -1}
	for _, rec := range recs {
		if rec.Environment != r.env {
			if rec.State == keyring.Active {
				return nil, fmt.Errorf("%w: the active key %s is registered to environment %q, not %q: a key of one environment must not sign in another (rotate with --environment %s on this environment's database)",
					errkind.ErrInvalid, rec.ID, rec.Environment, r.env, r.env)
			}
			continue
		}
		o, ok := r.opened[rec.ID]
		if !ok {
			var err error
			if o, err = r.open(rec); err != nil {
				return nil, err
			}
			r.opened[rec.ID] = o
		}
		s.add(o, rec)
	}
	if s.activeAt < 0 {
		return nil, fmt.Errorf("%w: the keyring has no active key (swarmscore key rotate makes one)", errkind.ErrInvalid)
	}
	return s, nil
}

// Reload reads the keyring from the database now (a static keyring does
// not change). On an error the keys in use are kept. Errors: ErrInvalid
// when a key cannot be unsealed or the active key belongs to another
// environment, and the store's.
func (r *Keyring) Reload(ctx context.Context) error {
	if r.store == nil {
		return nil
	}
	r.reloading.Lock()
	defer r.reloading.Unlock()
	return r.reloadLogged(ctx)
}

// reload is Reload with r.reloading held.
func (r *Keyring) reload(ctx context.Context) error {
	r.attempt.Store(int64(time.Since(r.base)))
	recs, err := r.store.Keys(ctx)
	if err != nil {
		return err
	}
	s, err := r.keySetOf(recs)
	if err != nil {
		return err
	}
	r.set.Store(s)
	return nil
}

// reloadLogged is reload, logging a change of the active key: another
// process rotated.
func (r *Keyring) reloadLogged(ctx context.Context) error {
	old := r.set.Load()
	if err := r.reload(ctx); err != nil {
		return err
	}
	if s := r.set.Load(); old != nil && old.active.ID() != s.active.ID() {
		r.log.Info("signing with a new key", "kid", s.active.ID(), "alg", s.active.Alg(), "previous", old.active.ID())
	}
	return nil
}

// current returns the keys in use, reloading them first when they are
// older than keyReload. One caller reloads while the others go on with the
// keys they have; a failed reload keeps them, and is logged once until a
// reload succeeds again.
func (r *Keyring) current(ctx context.Context) *keySet {
	s := r.set.Load()
	if r.store == nil || time.Since(r.base)-time.Duration(r.attempt.Load()) < keyReload || !r.reloading.TryLock() {
		return s
	}
	defer r.reloading.Unlock()
	if time.Since(r.base)-time.Duration(r.attempt.Load()) < keyReload { // another caller just reloaded
		return r.set.Load()
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.reloadLogged(rctx); err != nil {
		if !r.failing.Swap(true) {
			r.log.Error("reloading the keyring failed; signing and verifying with the keys loaded before", "err", err)
		}
	} else if r.failing.Swap(false) {
		r.log.Info("the keyring reloads again")
	}
	return r.set.Load()
}

// Static reports whether the keys come from SWARMSCORE_SIGNING_KEY rather
// than the database.
func (r *Keyring) Static() bool { return r.store == nil }

// Active returns the record of the key that signs now, without its sealed
// material (a static key has no creation time).
func (r *Keyring) Active() keyring.Record { return r.set.Load().activeRecord() }

// SigningKey returns the key that signs now, with its id.
func (r *Keyring) SigningKey() passport.Key { return r.set.Load().active }

// VerifyKeys returns every key in use, each with its id and status, for
// passport.Verify.
func (r *Keyring) VerifyKeys() []passport.Key {
	return append([]passport.Key(nil), r.set.Load().keys...)
}

// CheckpointSigner returns the signer of new checkpoints: the active key,
// reloaded as Certificate's is.
func (r *Keyring) CheckpointSigner() checkpoint.Signer {
	return r.current(context.Background()).cpSigner
}

// CheckpointVerifier checks archived checkpoints against the keyring's keys
// as they are at each check: every key but a revoked one (retiring a key
// ends its passports, not what its checkpoints recorded), by the id the
// checkpoint names, an HMAC key also by the bare fingerprint that
// checkpoints signed before keyrings name.
func (r *Keyring) CheckpointVerifier() checkpoint.Verifier { return checkpointVerifier{r} }

type checkpointVerifier struct{ r *Keyring }

// Verify implements checkpoint.Verifier.
func (v checkpointVerifier) Verify(kid, alg string, message, signature []byte) error {
	k, ok := v.r.current(context.Background()).cpKeys[kid]
	switch {
	case !ok:
		return fmt.Errorf("%w: key %q is not in the keyring", checkpoint.ErrSignature, clipID(kid))
	case k.state == keyring.Revoked:
		return fmt.Errorf("%w: key %s is revoked (compromised)", checkpoint.ErrSignature, kid)
	}
	return k.v.Verify(kid, alg, message, signature)
}

// clipID bounds a key id quoted from a document in a message.
func clipID(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Records returns the records of the keys in use, oldest first, without
// their sealed material (static keys have no times).
func (r *Keyring) Records() []keyring.Record {
	return append([]keyring.Record(nil), r.set.Load().records...)
}

// Rotate makes a new active key of alg (passport.AlgHS256 or AlgEdDSA) in
// this keyring's environment, created now; the store demotes the active
// one to verify-only in the same transaction. Every process sharing the
// database signs with the new key within keyReload. It first reloads the
// keyring, so a master key that does not unseal it cannot seal a key no
// server can open. Errors: ErrInvalid for a static keyring or an unknown
// algorithm, and Reload's and the store's.
func (r *Keyring) Rotate(ctx context.Context, alg string) (keyring.Record, error) {
	if r.store == nil {
		return keyring.Record{}, fmt.Errorf("%w: the keys come from %s: rotate by setting a new one (swarmscore keygen) and moving the old one to %s, then restart",
			errkind.ErrInvalid, SigningKeyEnv, VerifyKeysEnv)
	}
	r.reloading.Lock()
	defer r.reloading.Unlock()
	if err := r.reload(ctx); err != nil {
		return keyring.Record{}, err
	}
	rec, err := r.generate(alg, r.now().UTC())
	if err != nil {
		return keyring.Record{}, err
	}
	if err := r.store.AddKey(ctx, rec); err != nil {
		return keyring.Record{}, err
	}
	if err := r.reload(ctx); err != nil {
		return keyring.Record{}, err
	}
	rec.Sealed = nil
	return rec, nil
}
