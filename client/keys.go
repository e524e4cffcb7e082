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

// KeyHistoryPath is where a server publishes every Ed25519 key it ever
// signed with, with the interval each signed in and its status
// (passport.KeyHistory).
const KeyHistoryPath = "/.well-known/swarmscore-key-history.json"

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

// KeyHistory fetches the server's key history (GET
// /.well-known/swarmscore-key-history.json): every Ed25519 key it ever
// signed with, each bound to the interval it signed in
// (passport.Key.WithInterval), so that passport.Verify accepts what a key
// signed while it was active even after it was retired, and nothing a
// revoked key signed. A document that is not a valid key history is an
// error matching passport.ErrInvalid.
func (c *Client) KeyHistory(ctx context.Context) ([]passport.Key, error) {
	_, b, err := c.do(ctx, http.MethodGet, KeyHistoryPath, nil, nil, "", false, nil)
	if err != nil {
		return nil, err
	}
	return passport.ParseJWKSet(b)
}

// VerifyArchived verifies a passport kept from the past, such as one an
// audit bundle or a dispute holds, against the server's key history: its
// signature is accepted when the key that made it was active at the
// passport's computed_at, whether or not it still is, and never when it was
// revoked. at is the instant its expiry is judged at (the zero time means
// the passport's own computed_at, when it was valid by construction). Only
// failing to fetch the history is an error.
func (c *Client) VerifyArchived(ctx context.Context, doc []byte, at time.Time) (*passport.Verification, error) {
	keys, err := c.KeyHistory(ctx)
	if err != nil {
		return nil, fmt.Errorf("client: fetching the server's key history: %w", err)
	}
	if at.IsZero() {
		if p, err := passport.Parse(doc); err == nil {
			at = p.Issuer.ComputedAt
		} else {
			at = time.Now()
		}
	}
	return c.formulas.Verify(doc, keys, at), nil
}

// FetchKeys fetches a JWK set or a key history from url (any URL: a
// server's KeySetPath or KeyHistoryPath, a copy on a CDN) with hc
// (http.DefaultClient when nil) and returns its Ed25519 keys, as Keys and
// KeyHistory do. A status other than 200 is a *Problem.
func FetchKeys(ctx context.Context, hc *http.Client, url string) ([]passport.Key, error) {
	b, err := FetchKeyDocument(ctx, hc, url)
	if err != nil {
		return nil, err
	}
	return passport.ParseJWKSet(b)
}

// FetchKeyDocument fetches the JWK set or key history at url with hc
// (http.DefaultClient when nil) and returns it as received, at most
// passport.MaxKeySetSize bytes and one more (which passport.ParseJWKSet
// refuses). A status other than 200 is a *Problem.
func FetchKeyDocument(ctx context.Context, hc *http.Client, url string) ([]byte, error) {
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
	return b, nil
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
