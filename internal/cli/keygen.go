package cli

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/spf13/cobra"
)

// keyBytes is the entropy of a generated signing key; §8.1 asks for 32+ bytes.
const keyBytes = 32

func newKeygenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "keygen",
		Short: "Print a new random signing key (32 bytes as 64 hex characters)",
		Long: `Print a new signing key for SWARMSCORE_SIGNING_KEY: 32 bytes from the
operating system's cryptographically secure generator, as 64 lowercase hex
characters. Passports are signed with the key's literal characters as the
HMAC key, as any HMAC library given the same string would use it.`,
		Example: `  export SWARMSCORE_SIGNING_KEY=$(swarmscore keygen)`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var key [keyBytes]byte
			rand.Read(key[:]) // never fails: crypto/rand crashes the program rather than return weak bytes
			_, err := fmt.Fprintln(cmd.OutOrStdout(), hex.EncodeToString(key[:]))
			return err
		},
	}
}
