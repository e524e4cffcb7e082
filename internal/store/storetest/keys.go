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
	if ks[0].State != keyring.Revoked || !ks[0].StateChangedAt.Equal(later.Add(time.Hour)) {
		t.Errorf("after revoking: %+v", ks[0])
	}

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
	if _, err := keyring.ActiveOf(ks); err != nil || len(ks) != 8 {
		t.Errorf("after racing rotations: %v (%d keys)", err, len(ks))
	}
}
