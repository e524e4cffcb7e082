package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/postgres"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
)

// testDrivers are the back ends as cmd/swarmscore wires them.
var testDrivers = func() Drivers {
	pg := Driver{Open: Opener(postgres.Open), Redact: postgres.Redact, KeywordValue: true}
	return Drivers{"sqlite": {Open: Opener(sqlite.Open), File: sqlite.Path}, "postgres": pg, "postgresql": pg}
}()

func TestDriversOpen(t *testing.T) {
	var got string
	b := Drivers{"sqlite": {Open: func(_ context.Context, dsn string) (service.Backend, error) {
		got = dsn
		return nil, errors.New("opened")
	}}}
	if _, err := b.Open(t.Context(), ""); err == nil || got != DefaultDSN {
		t.Errorf("empty DSN opened %q (%v)", got, err)
	}
	if _, err := b.Open(t.Context(), "SQLITE:x.db"); err == nil || got != "SQLITE:x.db" {
		t.Errorf("scheme is case-insensitive: %q", got)
	}
	for _, dsn := range []string{"mysql://u:secret@h/db", "x.db", "postgres://u:secret@h/db", "host=h password=secret"} {
		_, err := b.Open(t.Context(), dsn)
		if errkind.Of(err) != errkind.Invalid || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "sqlite:") {
			t.Errorf("%s: %v", dsn, err)
		}
	}
}

// TestOpener: a back end's failed Open is a nil Backend, not a nil store
// inside a non-nil interface.
func TestOpener(t *testing.T) {
	open := Opener(func(context.Context, string) (*sqlite.Store, error) { return nil, errors.New("refused") })
	if st, err := open(t.Context(), "sqlite:x"); st != nil || err == nil {
		t.Fatalf("failed open: %v (nil: %v), %v", st, st == nil, err)
	}
}

func TestDriversRedact(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://u:secret@h/db": "postgres://u:xxxxx@h/db",
		"sqlite:x.db":              "sqlite:x.db",
		"mysql://u:secret@h/db":    "mysql://u:secret@h/db", // never opened, so never shown
	} {
		if got := testDrivers.redact(dsn); got != want {
			t.Errorf("redact(%q) = %q, want %q", dsn, got, want)
		}
	}
}

// TestDriversKeywordValue: a keyword/value connection string has no
// scheme but names the back end that takes it; no message ever repeats a
// password, nor anything that is not a scheme.
func TestDriversKeywordValue(t *testing.T) {
	for _, dsn := range []string{"host=db.internal user=app password=hunter2 dbname=ledger", "  dbname = ledger", "password='a:b c' host=h"} {
		drv, err := testDrivers.lookup(dsn)
		if err != nil || !drv.KeywordValue {
			t.Errorf("%q: %v", dsn, err)
		}
	}
	if got := testDrivers.redact("host=h user=u password=hunter2 dbname=d"); strings.Contains(got, "hunter2") {
		t.Errorf("redact: %q", got)
	}
	for _, dsn := range []string{"hunter2:x@h/db", "app:hunter2@h/db", "user=x", "x.db", "/var/lib/swarmscore.db", "mysql://u:hunter2@h/db", "user hunter2:x"} {
		_, err := Drivers{"sqlite": {Open: testDrivers["sqlite"].Open}}.lookup(dsn)
		if errkind.Of(err) != errkind.Invalid || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: %v", dsn, err)
		}
	}
	// A database that cannot be reached, named with its password: the
	// error says which and never repeats the password.
	code, _, errs := runCLI(t, nil, "ledger", "verify", "--db", "host=127.0.0.1 port=1 user=app password=hunter2 dbname=ledger connect_timeout=2 sslmode=disable")
	if code != ExitUnavailable || strings.Contains(errs, "hunter2") || !strings.Contains(errs, "127.0.0.1") {
		t.Errorf("unreachable: %d %q", code, errs)
	}
}
