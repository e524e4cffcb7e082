package client

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// edKey is an Ed25519 signing key with an id, and its published JWK.
func edKey(t *testing.T, seed byte, kid string) (passport.Key, passport.JWK) {
	t.Helper()
	s := make([]byte, ed25519.SeedSize)
	s[0] = seed
	k, err := passport.NewEd25519Key(ed25519.NewKeyFromSeed(s))
	if err != nil {
		t.Fatal(err)
	}
	if k, err = k.WithID(kid); err != nil {
		t.Fatal(err)
	}
	j, err := passport.PublicJWK(k, "active", time.Unix(1e9, 0), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return k, j
}

func signed(t *testing.T, k passport.Key, at time.Time) []byte {
	t.Helper()
	r, _ := score.Compute(score.Counts{ConduitTotal: 10, ConduitSuccess: 9})
	p, err := passport.New("agent-1", "test", r, at)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := p.Sign(k)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// VerifyOffline fetches the server's keys once, verifies with no request
// per passport, and fetches again when a passport names a key it lacks.
func TestVerifyOffline(t *testing.T) {
	k1, j1 := edKey(t, 1, "eddsa-one")
	k2, j2 := edKey(t, 2, "eddsa-two")
	var set atomic.Pointer[passport.JWKSet]
	set.Store(&passport.JWKSet{Keys: []passport.JWK{j1}})
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != KeySetPath {
			t.Errorf("request %s", r.URL.Path)
		}
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/jwk-set+json")
		json.NewEncoder(w).Encode(set.Load())
	}))
	defer srv.Close()
	c, _ := New(srv.URL)
	ctx := context.Background()
	at := time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)

	for range 3 {
		v, err := c.VerifyOffline(ctx, signed(t, k1, at), at)
		if err != nil || !v.Valid {
			t.Fatalf("%+v %v", v, err)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d fetches for 3 verifications", n)
	}
	// The server rotates: a passport of the new key fetches the set again
	// (once the last fetch is a second old).
	set.Store(&passport.JWKSet{Keys: []passport.JWK{j2, j1}})
	time.Sleep(keyRefetch)
	v, err := c.VerifyOffline(ctx, signed(t, k2, at), at)
	if err != nil || !v.Valid || fetches.Load() != 2 {
		t.Fatalf("after the rotation: %+v %v, %d fetches", v, err, fetches.Load())
	}
	// A tampered passport is refused as such; one naming a made-up key is
	// unknown_key, and does not fetch again within the second.
	doc := signed(t, k2, at)
	doc[len(doc)/2] ^= 1
	if v, _ := c.VerifyOffline(ctx, doc, at); v.Valid {
		t.Fatal("a changed passport verified")
	}
	other, _ := edKey(t, 3, "eddsa-made-up")
	if v, _ := c.VerifyOffline(ctx, signed(t, other, at), at); v.Valid || v.Errors[0].Code != passport.CodeUnknownKey || fetches.Load() != 2 {
		t.Fatalf("an unknown key: %+v, %d fetches", v, fetches.Load())
	}
}

func TestFetchKeys(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/keys.json":
			w.Write([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"hmac"},{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"ed"}]}`))
		case "/bad.json":
			w.Write([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"short","kid":"ed"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	keys, err := FetchKeys(context.Background(), nil, srv.URL+"/keys.json")
	if err != nil || len(keys) != 1 || keys[0].ID() != "ed" {
		t.Fatalf("%v %v", keys, err)
	}
	if _, err := FetchKeys(context.Background(), nil, srv.URL+"/bad.json"); !errors.Is(err, passport.ErrInvalid) {
		t.Fatalf("a bad set: %v", err)
	}
	var p *Problem
	if _, err := FetchKeys(context.Background(), nil, srv.URL+"/missing"); !errors.As(err, &p) || p.Status != 404 {
		t.Fatalf("a 404: %v", err)
	}
}

// KeyHistory and VerifyArchived: a passport signed by a key the server has
// since rotated out and retired verifies from the key history at its date,
// and not from the key set; one a revoked key signed never does.
func TestKeyHistory(t *testing.T) {
	k1, _ := edKey(t, 1, "eddsa-one")
	signedAt := time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)
	doc := signed(t, k1, signedAt)
	entry := func(status string, iv passport.SigningInterval) passport.HistoryKey {
		h, err := passport.PublicHistoryKey(k1, status, iv)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	var history atomic.Pointer[passport.KeyHistory]
	history.Store(&passport.KeyHistory{Keys: []passport.HistoryKey{entry(passport.StatusRetired,
		passport.SigningInterval{From: signedAt.Add(-time.Hour), Until: signedAt.Add(time.Hour)})}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case KeyHistoryPath:
			json.NewEncoder(w).Encode(history.Load())
		case KeySetPath:
			w.Write([]byte(`{"keys":[]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keys, err := c.KeyHistory(ctx)
	if err != nil || len(keys) != 1 || keys[0].Status() != passport.KeyRetired {
		t.Fatalf("history: %v %v", keys, err)
	}
	v, err := c.VerifyArchived(ctx, doc, time.Time{})
	if err != nil || !v.Valid {
		t.Fatalf("archived passport of a retired key: %v %+v", err, v)
	}
	if v, err := c.VerifyOffline(ctx, doc, signedAt); err != nil || v.Valid {
		t.Fatalf("the key set verifies a retired key's passport: %v %+v", err, v)
	}
	history.Store(&passport.KeyHistory{Keys: []passport.HistoryKey{entry(passport.StatusRevoked,
		passport.SigningInterval{From: signedAt.Add(-time.Hour), Until: signedAt.Add(time.Hour), RevokedAt: signedAt.Add(2 * time.Hour)})}})
	if v, err := c.VerifyArchived(ctx, doc, time.Time{}); err != nil || v.Valid || v.Errors[0].Code != passport.CodeKeyRevoked {
		t.Fatalf("archived passport of a revoked key: %v %+v", err, v)
	}
	// The same document through FetchKeys, as the CLI's --keys URL reads it.
	keys, err = FetchKeys(ctx, nil, srv.URL+KeyHistoryPath)
	if err != nil || len(keys) != 1 || keys[0].Status() != passport.KeyRevoked {
		t.Fatalf("FetchKeys: %v %v", keys, err)
	}
}
