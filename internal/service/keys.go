package service

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/passport"
)

// SigningKeyEnv names the environment variable holding the signing key.
const SigningKeyEnv = "SWARMSCORE_SIGNING_KEY"

// KeyFile is where the key of a database kept in a local file is kept when
// none is configured: beside the database, named after it (swarmscore.db →
// swarmscore.key).
func KeyFile(dbPath string) string {
	ext := filepath.Ext(dbPath)
	return strings.TrimSuffix(dbPath, ext) + ".key"
}

// LoadSigningKey returns the key passports are signed with (spec §8.1).
//
// The configured key (env, the value of SWARMSCORE_SIGNING_KEY) wins; its
// literal bytes are the HMAC key and it must be at least 32 bytes. Without
// one, a database kept in a local file (dbFile != "", e.g. SQLite's) keeps
// a generated key in KeyFile(dbFile), created on first start with 0600
// permissions, so passports survive restarts; its path, never its
// content, is logged. A database server (dbFile == "") has no such place:
// several servers must sign with one key, so a missing key is an error.
// Every error matches errkind.ErrInvalid and never contains key material.
func LoadSigningKey(env, dbFile string, log *slog.Logger) (passport.Key, error) {
	if env != "" {
		k, err := passport.NewKey([]byte(env))
		if err != nil {
			return passport.Key{}, fmt.Errorf("%w: %s is %d bytes; at least 32 are required (generate one with `swarmscore keygen`)",
				errkind.ErrInvalid, SigningKeyEnv, len(env))
		}
		return k, nil
	}
	if dbFile == "" {
		return passport.Key{}, fmt.Errorf("%w: %s is required with a database server such as PostgreSQL (every server sharing the database must sign with the same key; generate one with `swarmscore keygen`)",
			errkind.ErrInvalid, SigningKeyEnv)
	}
	path := KeyFile(dbFile)
	b, err := readKeyFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		b, err = createKeyFile(path)
		if err == nil {
			log.Info("generated a signing key; back it up with the database", "path", path)
		} else if errors.Is(err, fs.ErrExist) { // another process won the race
			b, err = readKeyFile(path)
		}
	}
	if err != nil {
		return passport.Key{}, err
	}
	k, err := passport.NewKey(b)
	if err != nil {
		return passport.Key{}, fmt.Errorf("%w: signing key file %s holds %d bytes; at least 32 are required", errkind.ErrInvalid, path, len(b))
	}
	log.Info("signing key loaded", "path", path)
	return k, nil
}

// readKeyFile reads a key file, refusing one other users can read: a
// readable key lets them forge passports.
func readKeyFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: signing key file %s has mode %04o; it must be readable by its owner only (chmod 600 %s)",
			errkind.ErrInvalid, path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		// The message names the path once.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%w: reading signing key file %s: %v", errkind.ErrInvalid, path, err)
	}
	return []byte(strings.TrimRight(string(b), "\r\n")), nil
}

// createKeyFile writes a new key (64 hex digits: 32 bytes of entropy, the
// same form `swarmscore keygen` prints, so it can be moved into
// SWARMSCORE_SIGNING_KEY unchanged). The key is written to a temporary file
// and linked into place, so a second process starting at the same time
// either wins or gets fs.ErrExist, and never reads a half-written key.
func createKeyFile(path string) ([]byte, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	key := []byte(hex.EncodeToString(raw[:]))
	tmp := path + ".tmp-" + hex.EncodeToString(raw[:4])
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: creating signing key file: %v", errkind.ErrInvalid, err)
	}
	defer os.Remove(tmp)
	_, err = f.Write(append(key, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp, path)
		if errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: writing signing key file %s: %v", errkind.ErrInvalid, path, err)
	}
	return key, nil
}
