package cli

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmscore/swarmscore/client"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/passport"
)

// keySetTimeout bounds fetching a key set.
const keySetTimeout = 30 * time.Second

// readKeySet reads the verification keys of a JWK set or a key history
// from src (readKeyDocument).
func readKeySet(cmd *cobra.Command, src string) ([]passport.Key, error) {
	b, err := readKeyDocument(cmd, src)
	if err != nil {
		return nil, err
	}
	keys, err := passport.ParseJWKSet(b)
	if err != nil {
		return nil, invalidf("key set %s: %v", displaySource(src), strings.TrimPrefix(err.Error(), passport.ErrInvalid.Error()+": "))
	}
	return keys, nil
}

// readKeyDocument reads a JWK set or a key history from src: an http(s)
// URL (a server's base URL means its key set) or a file ("-" is standard
// input). A document that cannot be read is invalid input (status 2), a
// server that answers with a problem too; a server that cannot be reached
// is unavailable (status 4).
func readKeyDocument(cmd *cobra.Command, src string) ([]byte, error) {
	u, perr := url.Parse(src)
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return readAuditFile(cmd.InOrStdin(), src, passport.MaxKeySetSize, "key set")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = client.KeySetPath
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), keySetTimeout)
	defer cancel()
	b, err := client.FetchKeyDocument(ctx, &http.Client{Timeout: keySetTimeout}, u.String())
	var p *client.Problem
	switch {
	case err == nil:
		return b, nil
	case errors.As(err, &p):
		return nil, invalidf("key set %s: %v", u.Redacted(), err)
	}
	return nil, &kindError{errkind.ErrUnavailable, err}
}

// displaySource names a key document's source in messages: a URL without
// its password.
func displaySource(src string) string {
	if u, err := url.Parse(src); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return u.Redacted()
	}
	return src
}
