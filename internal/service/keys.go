package service

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// The environment variables that configure keys (spec §8.1). An empty
// variable counts as unset.
const (
	// SigningKeyEnv holds a static HMAC signing key: its literal bytes, at
	// least 32 of them. When set it is the active key and the keyring in the
	// database is not used.
	SigningKeyEnv = "SWARMSCORE_SIGNING_KEY"
	// VerifyKeysEnv holds static verify-only HMAC keys, comma-separated
	// (surrounding whitespace is trimmed; a key cannot contain a comma).
	VerifyKeysEnv = "SWARMSCORE_VERIFY_KEYS"
	// MasterKeyEnv holds the master key that seals the keyring in the
	// database: 64 hex characters (32 bytes), e.g. from `swarmscore
	// keygen`.
	MasterKeyEnv = "SWARMSCORE_MASTER_KEY"
	// SigningAlgEnv chooses the algorithm of generated keys (Ed25519 or
	// HMAC-SHA256), as serve's --signing-alg does.
	SigningAlgEnv = "SWARMSCORE_SIGNING_ALG"
	// EnvironmentEnv names the deployment's environment, as serve's
	// --environment does.
	EnvironmentEnv = "SWARMSCORE_ENVIRONMENT"
)

// KeyFile is where the signing key of a database kept in a local file was
// kept before keyrings: beside the database, named after it (swarmscore.db →
// swarmscore.key). OpenKeyring imports it as the first key of the keyring.
func KeyFile(dbPath string) string {
	ext := filepath.Ext(dbPath)
	return strings.TrimSuffix(dbPath, ext) + ".key"
}

// MasterKeyFile is where the master key of a database kept in a local file
// is kept when SWARMSCORE_MASTER_KEY is not set: beside the database
// (swarmscore.db → swarmscore.master-key), readable by its owner only. It
// unseals the keyring kept in the database; back both up together.
func MasterKeyFile(dbPath string) string {
	ext := filepath.Ext(dbPath)
	return strings.TrimSuffix(dbPath, ext) + ".master-key"
}

// weakSecret says why a configured secret has almost no entropy, or returns
// "" for one that may be random. Nothing that comes from `swarmscore
// keygen` or another generator is refused: 64 random hex characters have
// 16 distinct ones and no period; what is refused is what a person types
// as a placeholder (issue 12).
func weakSecret(b []byte) string {
	if len(bytes.TrimSpace(b)) == 0 {
		return "is only whitespace"
	}
	var seen [256]bool
	distinct := 0
	for _, c := range b {
		if !seen[c] {
			seen[c] = true
			distinct++
		}
	}
	if distinct < 8 {
		return fmt.Sprintf("has only %d distinct characters", distinct)
	}
	for p := 1; p <= 16 && 2*p <= len(b); p++ {
		if bytes.Equal(b[p:], b[:len(b)-p]) {
			return fmt.Sprintf("repeats a block of %d characters", p)
		}
	}
	return ""
}

// checkSecret refuses a secret shorter than min bytes or with almost no
// entropy; what names it in the message. The message never contains it.
func checkSecret(what string, b []byte, min int) error {
	if len(b) < min {
		return fmt.Errorf("%w: %s is %d bytes; at least %d are required (generate one with `swarmscore keygen`)", errkind.ErrInvalid, what, len(b), min)
	}
	if why := weakSecret(b); why != "" {
		return fmt.Errorf("%w: %s %s: it has almost no entropy (generate one with `swarmscore keygen`)", errkind.ErrInvalid, what, why)
	}
	return nil
}

// readKeyFile reads a key file, refusing one other users can read: a
// readable key lets them forge passports, or unseal the keyring.
func readKeyFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: key file %s has mode %04o; it must be readable by its owner only (chmod 600 %s)",
			errkind.ErrInvalid, path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		// The message names the path once.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%w: reading key file %s: %v", errkind.ErrInvalid, path, err)
	}
	return []byte(strings.TrimRight(string(b), "\r\n")), nil
}

// createKeyFile writes a new secret (64 hex digits: 32 bytes of entropy,
// the form `swarmscore keygen` prints) to path with mode 0600 and returns
// it. The secret goes to a temporary file with a random name (issue 12: a
// name derived from the key would disclose part of it) that is linked into
// place, so a second process starting at the same time either wins or gets
// fs.ErrExist, and never reads a half-written file.
func createKeyFile(path string) ([]byte, error) {
	var raw [32]byte
	rand.Read(raw[:]) // never fails: crypto/rand crashes the program rather than return weak bytes
	key := []byte(hex.EncodeToString(raw[:]))
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("%w: creating key file: %v", errkind.ErrInvalid, err)
	}
	tmp := f.Name() // os.CreateTemp makes it 0600
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
		return nil, fmt.Errorf("%w: writing key file %s: %v", errkind.ErrInvalid, path, err)
	}
	return key, nil
}

// readOrCreateKeyFile returns the secret in path, creating it first when
// there is none (and another process does not create it at the same time);
// created reports which.
func readOrCreateKeyFile(path string) (secret []byte, created bool, err error) {
	b, err := readKeyFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		b, err = createKeyFile(path)
		if err == nil {
			return b, true, nil
		}
		if errors.Is(err, fs.ErrExist) { // another process won the race
			b, err = readKeyFile(path)
		}
	}
	return b, false, err
}
