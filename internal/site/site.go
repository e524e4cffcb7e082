// Package site is the deployment's public origin (serve --base-url) and
// what is derived from it: the URLs other documents point at (a
// certificate, the key set, a status list) and the deployment's did:web
// identifier. Credentials, agent cards and ERC-8004 records name these
// URLs, so they come from configuration, never from a request's Host
// header, which a client chooses.
package site

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// Site is a deployment's public origin. The zero Site is not usable.
type Site struct {
	base string // scheme://host[:port], no trailing slash
	host string // host[:port] as in the URL
}

// New reads a base URL: an absolute http or https origin (scheme, host,
// optional port) with no path beyond "/", query, fragment or user
// information, since did:web derives the identifier from the host alone
// and serves its document at /.well-known/did.json. Errors: ErrInvalid
// saying what is wrong.
func New(base string) (Site, error) {
	bad := func(why string) (Site, error) {
		return Site{}, fmt.Errorf("%w: base URL %q %s", errkind.ErrInvalid, base, why)
	}
	u, err := url.Parse(base)
	switch {
	case err != nil:
		return bad("is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("must start with https:// (or http:// for a local test)")
	case u.Host == "" || u.Hostname() == "":
		return bad("has no host")
	case u.User != nil:
		return bad("must not carry user information")
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "", u.Opaque != "":
		return bad("must be an origin only (no path, query or fragment)")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return bad("has an invalid port")
		}
	}
	host := strings.ToLower(u.Host)
	return Site{base: u.Scheme + "://" + host, host: host}, nil
}

// MustNew is New for constants in tests; it panics on an error.
func MustNew(base string) Site {
	s, err := New(base)
	if err != nil {
		panic(err)
	}
	return s
}

// URL is the origin, e.g. https://scores.example.com.
func (s Site) URL() string { return s.base }

// Path is the absolute URL of path, which starts with "/".
func (s Site) Path(path string) string { return s.base + path }

// CertificateURL is the URL of an agent's certificate (its current
// passport); id must be a valid agent id (ledger.CheckID), whose
// characters need no escaping in a path.
func (s Site) CertificateURL(agentID string) string {
	return s.base + "/swarmscore/" + url.PathEscape(agentID) + "/certificate"
}

// KeySetURL is the URL of the JWK set of the passports' public keys.
func (s Site) KeySetURL() string { return s.base + "/.well-known/swarmscore-keys.json" }

// StatusListURL is the URL of Bitstring Status List number list.
func (s Site) StatusListURL(list int64) string {
	return s.base + "/swarmscore/credentials/status/" + strconv.FormatInt(list, 10)
}

// DID is the deployment's did:web identifier: "did:web:" and the host,
// with a port's colon percent-encoded (did:web's rule), e.g.
// did:web:scores.example.com or did:web:127.0.0.1%3A8080. Its document is
// served at /.well-known/did.json.
func (s Site) DID() string { return "did:web:" + strings.ReplaceAll(s.host, ":", "%3A") }

// VerificationMethod is the DID URL of the key kid in the DID document.
func (s Site) VerificationMethod(kid string) string { return s.DID() + "#" + kid }
