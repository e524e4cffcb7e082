package store

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// DefaultDSN is the store used when none is configured: an SQLite file in
// the working directory, so a fresh clone runs with nothing installed.
const DefaultDSN = "sqlite:swarmscore.db"

// Opener opens a back end for a DSN of its scheme. It does not migrate.
type Opener func(ctx context.Context, dsn string) (Store, error)

// Backends maps a DSN scheme ("sqlite", "postgres", "postgresql") to its
// Opener. The program's wiring fills it in, so this package never imports
// its back ends.
type Backends map[string]Opener

// Scheme returns the part of dsn before the first ':'.
func Scheme(dsn string) string {
	scheme, _, _ := strings.Cut(dsn, ":")
	return strings.ToLower(scheme)
}

// Open opens dsn with the back end registered for its scheme. An empty dsn
// is DefaultDSN; an unknown scheme is errkind.ErrInvalid naming the known
// ones.
func (b Backends) Open(ctx context.Context, dsn string) (Store, error) {
	if dsn == "" {
		dsn = DefaultDSN
	}
	open, ok := b[Scheme(dsn)]
	if !ok || !strings.Contains(dsn, ":") {
		known := make([]string, 0, len(b))
		for k := range b {
			known = append(known, k+":")
		}
		sort.Strings(known)
		return nil, fmt.Errorf("%w: database %q: unknown scheme (want one of %s)", errkind.ErrInvalid, redact(dsn), strings.Join(known, ", "))
	}
	return open(ctx, dsn)
}

// redact hides a password in a URL-style DSN so it never reaches an error
// message or a log.
func redact(dsn string) string {
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok {
		return dsn
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return dsn
	}
	userinfo := rest[:at]
	if user, _, hasPass := strings.Cut(userinfo, ":"); hasPass {
		return scheme + "://" + user + ":xxxxx" + rest[at:]
	}
	return dsn
}

// Redact is redact, exported for back ends that echo DSNs in errors.
func Redact(dsn string) string { return redact(dsn) }
