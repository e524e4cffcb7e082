package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/db?sslmode=disable":                   "postgres://u:xxxxx@h:5432/db?sslmode=disable",
		"postgres://u@h/db":                                           "postgres://u@h/db",
		"postgres://u@h/db?password=s3cret&sslmode=disable":           "postgres://u@h/db?password=xxxxx&sslmode=disable",
		"postgresql://u:a%40b@h/db?sslpassword=k&sslkey=/etc/key.pem": "postgresql://u:xxxxx@h/db?sslpassword=xxxxx&sslkey=xxxxx",
		"host=h user=u password=s3cret dbname=db":                     "host=h user=u password=xxxxx dbname=db",
		"host=h password = 'se cr\\'et' dbname=db sslpassword=k":      "host=h password = xxxxx dbname=db sslpassword=xxxxx",
		"host=h dbname=db":                                            "host=h dbname=db",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOpenNeverEchoesSecrets: whatever fails while opening, the error names
// no password, key password or key path, in either DSN syntax.
func TestOpenNeverEchoesSecrets(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u:pw-secret-1@127.0.0.1:1/db?sslmode=disable&connect_timeout=1",
		"postgres://u@127.0.0.1:1/db?password=pw-secret-1&sslmode=disable&connect_timeout=1",
		"postgres://u@127.0.0.1:notaport/db?password=pw-secret-1",
		"host=127.0.0.1 port=1 user=u password=pw-secret-1 dbname=db sslmode=disable connect_timeout=1",
		"host=127.0.0.1 port=1 user=u password='pw-secret-1' dbname=db sslpassword=pw-secret-1 connect_timeout=1",
		"host=127.0.0.1 port=notaport password=pw-secret-1",
	} {
		_, err := Open(context.Background(), dsn)
		if err == nil {
			t.Fatalf("%s: opened", Redact(dsn))
		}
		if strings.Contains(err.Error(), "pw-secret-1") {
			t.Errorf("the error echoes a secret: %v", err)
		}
		if k := errkind.Of(err); k != errkind.Invalid && k != errkind.Unavailable {
			t.Errorf("%s: kind %v (%v)", Redact(dsn), k, err)
		}
	}
	// The scrubbed error still unwraps to what it wraps.
	inner := errors.New("cannot reach pw-secret-1")
	if err := scrubbed(inner, "password=pw-secret-1"); !errors.Is(err, inner) || strings.Contains(err.Error(), "pw-secret-1") {
		t.Errorf("scrubbed: %v", err)
	}
}
