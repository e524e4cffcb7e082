package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/swarmscore/swarmscore/passport"
)

// KeySetPath is where a server publishes the public keys of its Ed25519
// passports, as a JWK set (RFC 7517).
const KeySetPath = "/.well-known/swarmscore-keys.json"

// Keys fetches the server's public keys (GET
// /.well-known/swarmscore-keys.json): the Ed25519 keys whose passports may
// still be valid, as verification keys for passport.Verify. HMAC keys are
// never published, so HMAC passports cannot be verified offline. A set that
// is not a valid JWK set is an error matching passport.ErrInvalid.
func (c *Client) Keys(ctx context.Context) ([]passport.Key, error) {
	_, b, err := c.do(ctx, http.MethodGet, KeySetPath, nil, nil, "", false, nil)
	if err != nil {
		return nil, err
	}
	return passport.ParseJWKSet(b)
}

// FetchKeys fetches a JWK set from url (any URL: a server's KeySetPath, a
// copy on a CDN) with hc (http.DefaultClient when nil) and returns its
// Ed25519 keys, as Keys does. A status other than 200 is a *Problem.
func FetchKeys(ctx context.Context, hc *http.Client, url string) ([]passport.Key, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, passport.MaxKeySetSize+1))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, problemFrom(resp, b)
	}
	return passport.ParseJWKSet(b)
}

// keyCache holds the last key set VerifyOffline fetched.
type keyCache struct {
	mu      sync.Mutex
	keys    []passport.Key
	fetched time.Time
}

// keyCacheAge is how long VerifyOffline trusts a fetched set: the server
// allows caching it for a minute. A passport naming a key the set lacks
// fetches it again, but at most once a keyRefetch, so that documents
// naming made-up keys cannot make every verification a request.
const (
	keyCacheAge = time.Minute
	keyRefetch  = time.Second
)

// VerifyOffline verifies a passport as received at instant at (the zero
// time means now) against the server's published keys, with no shared
// secret and without sending the passport anywhere: what a marketplace
// does to check an Ed25519 passport by itself. The set is fetched on first
// use, kept for a minute, and fetched again at once when doc names a key it
// lacks (the server rotated), at most once a second. The verification is passport.Verify's (L1:
// signature, consistency, expiry), with the formula versions of WithFormulas;
// only failing to fetch the keys is an error.
func (c *Client) VerifyOffline(ctx context.Context, doc []byte, at time.Time) (*passport.Verification, error) {
	if at.IsZero() {
		at = time.Now()
	}
	keys, err := c.cachedKeys(ctx, false)
	if err != nil {
		return nil, err
	}
	v := c.formulas.Verify(doc, keys, at)
	for _, p := range v.Errors {
		if p.Code == passport.CodeUnknownKey || p.Code == passport.CodeNoKeys {
			if keys, err = c.cachedKeys(ctx, true); err != nil {
				return nil, err
			}
			return c.formulas.Verify(doc, keys, at), nil
		}
	}
	return v, nil
}

// cachedKeys returns the cached key set, fetching it when it is missing,
// older than keyCacheAge, or refresh is set.
func (c *Client) cachedKeys(ctx context.Context, refresh bool) ([]passport.Key, error) {
	c.keys.mu.Lock()
	defer c.keys.mu.Unlock()
	if age := time.Since(c.keys.fetched); c.keys.keys != nil && (age < keyRefetch || !refresh && age < keyCacheAge) {
		return c.keys.keys, nil
	}
	keys, err := c.Keys(ctx)
	if err != nil {
		return nil, fmt.Errorf("client: fetching the server's keys: %w", err)
	}
	if keys == nil {
		keys = []passport.Key{}
	}
	c.keys.keys, c.keys.fetched = keys, time.Now()
	return keys, nil
}
