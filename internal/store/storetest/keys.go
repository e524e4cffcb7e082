package storetest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/keyring"
)

func key(id string, state keyring.State, at time.Time) keyring.Record {
	return keyring.Record{ID: id, Alg: keyring.HS256, Environment: "production", State: state, CreatedAt: at, Sealed: []byte("sealed-" + id)}
}

func testKeys(t *testing.T, h Harness) {
	s := h.Open(t)
	if ks, err := s.Keys(ctx(t)); err != nil || len(ks) != 0 {
		t.Fatalf("an empty keyring: %v %v", ks, err)
	}
	k1 := key("k1", keyring.Active, base)
	if err := s.AddKey(ctx(t), k1); err != nil {
		t.Fatal(err)
	}
	ed := key("k2", keyring.Active, base.Add(time.Hour))
	ed.Alg, ed.Public = keyring.EdDSA, bytes.Repeat([]byte{9}, 32)
	if err := s.AddKey(ctx(t), ed); err != nil {
		t.Fatal(err)
	}
	ks, err := s.Keys(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) != 2 || ks[0].ID != "k1" || ks[0].State != keyring.VerifyOnly || !ks[0].StateChangedAt.Equal(ed.CreatedAt) ||
		!ks[0].CreatedAt.Equal(base) || string(ks[0].Sealed) != "sealed-k1" || ks[0].Public != nil ||
		ks[1].ID != "k2" || ks[1].State != keyring.Active || ks[1].Alg != keyring.EdDSA || !bytes.Equal(ks[1].Public, ed.Public) ||
		ks[1].Environment != "production" || !ks[1].StateChangedAt.Equal(ed.CreatedAt) {
		t.Fatalf("after a rotation: %+v", ks)
	}
	// The rotation ends k1's active interval as it starts k2's.
	if !ks[0].ActiveFrom.Equal(base) || !ks[0].ActiveUntil.Equal(ed.CreatedAt) ||
		!ks[1].ActiveFrom.Equal(ed.CreatedAt) || !ks[1].ActiveUntil.IsZero() {
		t.Fatalf("active intervals after a rotation: k1 %v..%v, k2 %v..%v", ks[0].ActiveFrom, ks[0].ActiveUntil, ks[1].ActiveFrom, ks[1].ActiveUntil)
	}
	wantKind(t, s.AddKey(ctx(t), key("k1", keyring.VerifyOnly, base)), errkind.Conflict)
	bad := key("bad id", keyring.Active, base)
	wantKind(t, s.AddKey(ctx(t), bad), errkind.Invalid)
	noPub := key("k3", keyring.VerifyOnly, base)
	noPub.Alg = keyring.EdDSA
	wantKind(t, s.AddKey(ctx(t), noPub), errkind.Invalid)

	later := base.Add(2 * time.Hour)
	wantKind(t, s.SetKeyState(ctx(t), "k2", keyring.Retired, later), errkind.Conflict) // the active key
	wantKind(t, s.SetKeyState(ctx(t), "nope", keyring.Retired, later), errkind.NotFound)
	if err := s.SetKeyState(ctx(t), "k1", keyring.Retired, later); err != nil {
		t.Fatal(err)
	}
	wantKind(t, s.SetKeyState(ctx(t), "k1", keyring.VerifyOnly, later), errkind.Conflict)
	if err := s.SetKeyState(ctx(t), "k1", keyring.Retired, later.Add(time.Hour)); err != nil {
		t.Errorf("retiring again: %v", err)
	}
	if err := s.SetKeyState(ctx(t), "k1", keyring.Revoked, later.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ks, _ = s.Keys(ctx(t))
	if ks[0].State != keyring.Revoked || !ks[0].StateChangedAt.Equal(later.Add(time.Hour)) || !ks[0].RevokedAt().Equal(later.Add(time.Hour)) {
		t.Errorf("after revoking: %+v", ks[0])
	}
	// Retiring and revoking keep the interval the key signed in.
	if !ks[0].ActiveFrom.Equal(base) || !ks[0].ActiveUntil.Equal(ed.CreatedAt) {
		t.Errorf("k1's active interval after it was revoked: %v..%v", ks[0].ActiveFrom, ks[0].ActiveUntil)
	}
	// A key stored as never active has no interval.
	never := key("k4", keyring.VerifyOnly, base)
	if err := s.AddKey(ctx(t), never); err != nil {
		t.Fatal(err)
	}
	ks, _ = s.Keys(ctx(t))
	for _, k := range ks {
		if k.ID == "k4" && (!k.ActiveFrom.IsZero() || !k.ActiveUntil.IsZero()) {
			t.Errorf("a key never active has an interval: %v..%v", k.ActiveFrom, k.ActiveUntil)
		}
	}
	wrong := key("k5", keyring.Active, base)
	wrong.ActiveUntil = base
	wantKind(t, s.AddKey(ctx(t), wrong), errkind.Invalid)

	// Rotations racing each other leave exactly one active key.
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.AddKey(ctx(t), key(fmt.Sprint("r", i), keyring.Active, later.Add(time.Duration(i)*time.Second))); err != nil {
				t.Errorf("rotation %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	ks, _ = s.Keys(ctx(t))
	if _, err := keyring.ActiveOf(ks); err != nil || len(ks) != 9 {
		t.Errorf("after racing rotations: %v (%d keys)", err, len(ks))
	}
	// Each rotation ended the interval of the key it demoted: exactly one
	// interval is open, and every other starts before it ends.
	open := 0
	for _, k := range ks {
		switch {
		case k.ActiveFrom.IsZero():
		case k.ActiveUntil.IsZero():
			open++
		case k.ActiveUntil.Before(k.ActiveFrom):
			t.Errorf("key %s: interval %v..%v", k.ID, k.ActiveFrom, k.ActiveUntil)
		}
	}
	if open != 1 {
		t.Errorf("%d open intervals after racing rotations", open)
	}
}

// MigrateKeyIntervals checks the migration that gives every key the
// interval it signed in, on a database at the version before it: keys made
// active one after another, then retired and revoked by hand, end their
// intervals when the next key was created, whatever happened to them
// later; the active key's interval is open.
func MigrateKeyIntervals(t *testing.T, db LegacyDB) {
	at := func(h int) time.Time { return base.Add(time.Duration(h) * time.Hour) }
	rows := []struct {
		id, state        string
		created, changed time.Time
	}{
		{"k1", "revoked", at(0), at(30)},      // demoted at 10, retired at 20, revoked at 30
		{"k2", "retired", at(10), at(25)},     // demoted at 12, retired at 25
		{"k3", "verify-only", at(12), at(40)}, // demoted at 40
		{"k4", "active", at(40), at(40)},
	}
	for _, r := range rows {
		if err := db.Exec(fmt.Sprintf(`INSERT INTO signing_keys (id, alg, environment, state, created_at, state_changed_at, public_key, sealed_key)
			VALUES ('%s', 'HS256', 'production', '%s', %s, %s, NULL, %s)`, r.id, r.state, db.Time(r.created), db.Time(r.changed), db.Bytes([]byte("sealed")))); err != nil {
			t.Fatal(err)
		}
	}
	s := db.Store()
	if _, err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	ks, err := s.Keys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]time.Time{"k1": {at(0), at(10)}, "k2": {at(10), at(12)}, "k3": {at(12), at(40)}, "k4": {at(40), {}}}
	if len(ks) != len(want) {
		t.Fatalf("%d keys after the migration, want %d", len(ks), len(want))
	}
	for _, k := range ks {
		if w := want[k.ID]; !k.ActiveFrom.Equal(w[0]) || !k.ActiveUntil.Equal(w[1]) {
			t.Errorf("key %s (%s): interval %v..%v, want %v..%v", k.ID, k.State, k.ActiveFrom, k.ActiveUntil, w[0], w[1])
		}
	}
}
