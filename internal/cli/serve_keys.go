package cli

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/swarmscore/swarmscore/internal/service"
)

// openServeKeys opens a server's keyring and reloads it on SIGHUP (besides
// the reload at most once a second that every request may trigger), until
// ctx ends.
func openServeKeys(ctx context.Context, st service.KeyStore, kc service.KeyConfig, log *slog.Logger) (*service.Keyring, error) {
	keys, err := service.OpenKeyring(ctx, st, kc)
	if err != nil {
		return nil, err
	}
	a := keys.Active()
	source := "database"
	if keys.Static() {
		source = service.SigningKeyEnv
	}
	log.Info("signing keys", "kid", a.ID, "alg", a.Alg, "environment", a.Environment, "source", source)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := keys.Reload(ctx); err != nil {
					log.Error("reloading the keyring on SIGHUP", "err", err)
				} else {
					log.Info("keyring reloaded on SIGHUP", "kid", keys.Active().ID)
				}
			}
		}
	}()
	return keys, nil
}
