package keyring

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

func TestCheckMove(t *testing.T) {
	ok := [][2]State{{VerifyOnly, Retired}, {VerifyOnly, Revoked}, {Retired, Revoked}, {Retired, Retired}, {Active, Active}}
	for _, m := range ok {
		if err := CheckMove(m[0], m[1]); err != nil {
			t.Errorf("%s -> %s: %v", m[0], m[1], err)
		}
	}
	conflict := [][2]State{{Active, Retired}, {Active, Revoked}, {Active, VerifyOnly}, {Retired, VerifyOnly}, {Revoked, Retired}, {VerifyOnly, Active}, {Revoked, Active}}
	for _, m := range conflict {
		if err := CheckMove(m[0], m[1]); !errors.Is(err, errkind.ErrConflict) {
			t.Errorf("%s -> %s: %v, want a conflict", m[0], m[1], err)
		}
	}
	if err := CheckMove(Active, "lost"); !errors.Is(err, errkind.ErrInvalid) {
		t.Errorf("unknown state: %v", err)
	}
	for _, s := range []State{Active, VerifyOnly} {
		if !s.Accepted() {
			t.Errorf("%s passports must verify", s)
		}
	}
	for _, s := range []State{Retired, Revoked} {
		if s.Accepted() {
			t.Errorf("%s passports must not verify", s)
		}
	}
}

func TestSeal(t *testing.T) {
	master := bytes.Repeat([]byte{7}, MasterKeySize)
	secret := []byte("0123456789abcdef0123456789abcdef")
	sealed, err := Seal(master, "k1", secret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, secret) {
		t.Fatal("the sealed form contains the secret")
	}
	again, _ := Seal(master, "k1", secret)
	if bytes.Equal(sealed, again) {
		t.Error("two seals of the same secret are equal: the nonce is not random")
	}
	if got, err := Open(master, "k1", sealed); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	other := bytes.Repeat([]byte{8}, MasterKeySize)
	altered := append([]byte(nil), sealed...)
	altered[len(altered)-1] ^= 1
	for name, open := range map[string]func() ([]byte, error){
		"wrong master": func() ([]byte, error) { return Open(other, "k1", sealed) },
		"other key id": func() ([]byte, error) { return Open(master, "k2", sealed) },
		"altered":      func() ([]byte, error) { return Open(master, "k1", altered) },
		"truncated":    func() ([]byte, error) { return Open(master, "k1", sealed[:10]) },
	} {
		if _, err := open(); !errors.Is(err, ErrSealed) || errkind.Of(err) != errkind.Invalid {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Seal(master[:16], "k1", secret); errkind.Of(err) != errkind.Invalid {
		t.Errorf("short master key: %v", err)
	}
}

func TestActiveOf(t *testing.T) {
	if _, err := ActiveOf(nil); errkind.Of(err) != errkind.NotFound {
		t.Errorf("none: %v", err)
	}
	recs := []Record{{ID: "a", State: VerifyOnly}, {ID: "b", State: Active}}
	if r, err := ActiveOf(recs); err != nil || r.ID != "b" {
		t.Errorf("ActiveOf = %+v, %v", r, err)
	}
	if _, err := ActiveOf(append(recs, Record{ID: "c", State: Active})); errkind.Of(err) != errkind.Conflict {
		t.Errorf("two active: %v", err)
	}
	if Fingerprint([]byte("x")) == Fingerprint([]byte("y")) || len(Fingerprint([]byte("x"))) != 16 {
		t.Error("fingerprints")
	}
}

// A key's id is its algorithm and the first 8 bytes of the SHA-256 of its
// material, computed here independently.
func TestKeyID(t *testing.T) {
	secret := []byte("0f1e2d3c4b5a69788796a5b4c3d2e1f0")
	sum := sha256.Sum256(secret)
	if got, want := KeyID(HS256, secret), "hs256-"+hex.EncodeToString(sum[:8]); got != want {
		t.Fatalf("KeyID = %s, want %s", got, want)
	}
	if got := KeyID(EdDSA, secret); got[:6] != "eddsa-" || got[6:] != hex.EncodeToString(sum[:8]) {
		t.Fatalf("KeyID = %s", got)
	}
}
