package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/service"
)

func TestBackendsOpen(t *testing.T) {
	var got string
	b := Backends{"sqlite": func(_ context.Context, dsn string) (service.Backend, error) {
		got = dsn
		return nil, errors.New("opened")
	}}
	if _, err := b.Open(t.Context(), ""); err == nil || got != DefaultDSN {
		t.Errorf("empty DSN opened %q (%v)", got, err)
	}
	if _, err := b.Open(t.Context(), "SQLITE:x.db"); err == nil || got != "SQLITE:x.db" {
		t.Errorf("scheme is case-insensitive: %q", got)
	}
	for _, dsn := range []string{"mysql://u:secret@h/db", "x.db", "postgres://u:secret@h/db"} {
		_, err := b.Open(t.Context(), dsn)
		if errkind.Of(err) != errkind.Invalid || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "sqlite:") {
			t.Errorf("%s: %v", dsn, err)
		}
	}
}
