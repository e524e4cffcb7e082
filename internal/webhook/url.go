package webhook

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// MaxURLLen bounds an endpoint's URL.
const MaxURLLen = 2048

// URLPolicy is where deliveries may go. The zero value is production's:
// https only, to public addresses only.
type URLPolicy struct {
	// AllowHTTPLoopback also allows http:// and https:// URLs whose host
	// is a loopback address or "localhost", and dialing loopback
	// addresses (serve --webhook-allow-http-loopback, for tests and local
	// receivers).
	AllowHTTPLoopback bool
}

func urlErr(format string, args ...any) error {
	return errkind.WithCode(fmt.Errorf("%w: url: "+format, append([]any{errkind.ErrInvalid}, args...)...), CodeInvalidURL)
}

// CheckURL checks an endpoint URL's form: absolute, https (http only to a
// loopback host under AllowHTTPLoopback), a host, no user information, no
// fragment, at most MaxURLLen bytes; a host that is an IP literal must be
// an address CheckAddr allows. A host name is checked again where it
// resolves (CheckAddr, at registration and at every dial). Errors:
// ErrInvalid with code invalid_webhook_url.
func (p URLPolicy) CheckURL(raw string) (*url.URL, error) {
	if len(raw) > MaxURLLen {
		return nil, urlErr("longer than %d bytes", MaxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return nil, urlErr("%q is not an absolute URL", raw)
	}
	host := u.Hostname()
	// "localhost." is localhost: the trailing dot only says the name is
	// absolute.
	name := strings.TrimSuffix(host, ".")
	switch {
	case host == "":
		return nil, urlErr("%q has no host", raw)
	case u.User != nil:
		return nil, urlErr("user information is not allowed in a webhook URL")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, urlErr("a fragment is not allowed in a webhook URL")
	}
	loop := isLoopbackHost(name)
	switch u.Scheme {
	case "https":
	case "http":
		if !loop || !p.AllowHTTPLoopback {
			return nil, urlErr("%q: only https is allowed (http only to a loopback host, with serve --webhook-allow-http-loopback)", raw)
		}
	default:
		return nil, urlErr("%q: the scheme must be https", raw)
	}
	if strings.EqualFold(name, "localhost") || strings.HasSuffix(strings.ToLower(name), ".localhost") {
		if !p.AllowHTTPLoopback {
			return nil, urlErr("%q: a loopback host is refused (allowed only with serve --webhook-allow-http-loopback)", raw)
		}
		return u, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if err := p.CheckAddr(a); err != nil {
			return nil, err
		}
	}
	return u, nil
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// CheckAddr refuses an address a delivery must not reach: loopback
// (unless AllowHTTPLoopback), private (RFC 1918, fc00::/7), link-local,
// unspecified, multicast, and the other special-purpose blocks below
// (carrier-grade NAT, benchmarking, documentation, reserved).
// IPv4-mapped IPv6 addresses are judged as the IPv4 address they map.
// Errors: ErrInvalid with code invalid_webhook_url.
func (p URLPolicy) CheckAddr(a netip.Addr) error {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return urlErr("no address")
	case a.IsLoopback():
		if p.AllowHTTPLoopback {
			return nil
		}
		return urlErr("%s is a loopback address", a)
	case a.IsPrivate():
		return urlErr("%s is a private address", a)
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return urlErr("%s is a link-local address", a)
	case a.IsUnspecified(), a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return urlErr("%s is not a unicast address", a)
	}
	for _, b := range special {
		if b.Contains(a) {
			return urlErr("%s is in the special-purpose block %s", a, b)
		}
	}
	return nil
}

// special are the special-purpose blocks netip's predicates do not cover
// that no public receiver is in (IANA registries).
var special = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("100::/64"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2001::/23"),
}

// Control is a net.Dialer Control function that refuses a connection to
// an address CheckAddr refuses. It runs after name resolution, on the
// address actually dialed, so that a name that resolved to a public
// address when the endpoint was registered and to a private one now (DNS
// rebinding) is refused all the same.
func (p URLPolicy) Control(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return urlErr("dial %q: %v", address, err)
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return urlErr("dial %q: not an IP address", address)
	}
	return p.CheckAddr(a)
}
