package cli

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/client"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/passport"
)

// keySetTimeout bounds fetching a key set.
const keySetTimeout = 30 * time.Second

// readKeySet reads the verification keys of a JWK set from src: an http(s)
// URL (a server's base URL means its key set) or a file. A set that cannot
// be read or parsed is invalid input (status 2); a server that cannot be
// reached is unavailable (status 4).
func readKeySet(cmd *cobra.Command, src string) ([]passport.Key, error) {
	var keys []passport.Key
	var err error
	if u, perr := url.Parse(src); perr == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		if u.Path == "" || u.Path == "/" {
			u.Path = client.KeySetPath
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), keySetTimeout)
		defer cancel()
		keys, err = client.FetchKeys(ctx, &http.Client{Timeout: keySetTimeout}, u.String())
		var p *client.Problem
		switch {
		case err == nil:
		case errors.Is(err, passport.ErrInvalid):
			return nil, invalidf("key set %s: %v", u.Redacted(), err)
		case errors.As(err, &p):
			return nil, invalidf("key set %s: %v", u.Redacted(), err)
		default:
			return nil, &kindError{errkind.ErrUnavailable, err}
		}
	} else {
		b, rerr := os.ReadFile(src)
		if rerr != nil {
			return nil, invalidf("reading the key set: %v", rerr)
		}
		if keys, err = passport.ParseJWKSet(b); err != nil {
			return nil, invalidf("key set %s: %v", src, strings.TrimPrefix(err.Error(), passport.ErrInvalid.Error()+": "))
		}
	}
	return keys, nil
}
