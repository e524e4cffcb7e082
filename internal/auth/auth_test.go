package auth

import (
	"crypto/sha256"
	"encoding/base64"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestMint(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tok, secret, err := Mint("acme", at)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Operator != "acme" || !tok.CreatedAt.Equal(at) || tok.Revoked() {
		t.Fatalf("record %+v", tok)
	}
	if !regexp.MustCompile(`^tok-[0-9a-f]{12}$`).MatchString(tok.ID) {
		t.Errorf("id %q", tok.ID)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if !strings.HasPrefix(secret, SecretPrefix) || err != nil || len(raw) != 32 {
		t.Errorf("secret is not %s and 32 bytes of base64url: %d bytes, %v", SecretPrefix, len(raw), err)
	}
	// The record is found by the secret, and holds nothing else of it.
	if tok.SHA256 != sha256.Sum256([]byte(secret)) || Sum(secret) != tok.SHA256 {
		t.Error("the record's hash is not the SHA-256 of the secret")
	}
	other, otherSecret, err := Mint("acme", at)
	if err != nil || other.ID == tok.ID || otherSecret == secret || other.SHA256 == tok.SHA256 {
		t.Fatalf("two mints collide: %+v %+v %v", tok, other, err)
	}
}

func TestRevoked(t *testing.T) {
	tok := Token{ID: "tok-1"}
	if tok.Revoked() {
		t.Error("a token with no revocation time is revoked")
	}
	tok.RevokedAt = time.Unix(0, 0)
	if !tok.Revoked() {
		t.Error("a token revoked at the epoch is active")
	}
}
