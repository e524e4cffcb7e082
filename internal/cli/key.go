package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/internal/service"
)

// keyFlags are the flags that say which keys a process generates and may
// use: --signing-alg and --environment, each defaulting to its variable.
type keyFlags struct {
	alg, environment string
}

// issueFlags are the flags of the commands that re-issue passports as a
// server would.
type issueFlags struct {
	keyFlags
	platform string
	batch    int
}

func (f *issueFlags) register(fs *pflag.FlagSet) {
	f.keyFlags.register(fs)
	fs.StringVar(&f.platform, "platform", "", "issuer.platform of re-issued passports: give serve's (default $"+platformEnv+", else swarmscore, or swarmscore-ENVIRONMENT outside production)")
	fs.IntVar(&f.batch, "batch-size", 100, "agents whose passports are re-issued per batch (1-1000)")
}

// platformOf is the issuer.platform a command or server names: the flag,
// else SWARMSCORE_PLATFORM, else the environment's default.
func (k *keyFlags) platformOf(cmd *cobra.Command, flag string) string {
	if flag != "" {
		return flag
	}
	if env := getenv(cmd, platformEnv); env != "" {
		return env
	}
	return k.defaultPlatform(cmd)
}

func (k *keyFlags) register(f *pflag.FlagSet) {
	f.StringVar(&k.alg, "signing-alg", "", "algorithm of generated signing keys: HMAC-SHA256 or Ed25519 (default $"+service.SigningAlgEnv+", else HMAC-SHA256)")
	f.StringVar(&k.environment, "environment", "", "the deployment's environment, recorded with every key; keys of another are refused (default $"+service.EnvironmentEnv+", else production)")
}

// env is the environment the flags and variables name ("" for the
// default).
func (k *keyFlags) env(cmd *cobra.Command) string {
	if k.environment != "" {
		return k.environment
	}
	return getenv(cmd, service.EnvironmentEnv)
}

// signingAlg is the algorithm the flag or its variable names
// (passport.AlgHS256 when neither does), and whether one does.
func (k *keyFlags) signingAlg(cmd *cobra.Command) (alg string, chosen bool, err error) {
	s := k.alg
	if s == "" {
		s = getenv(cmd, service.SigningAlgEnv)
	}
	if alg, err = service.ParseSigningAlg(s); err != nil {
		return "", false, &usageError{err}
	}
	return alg, s != "", nil
}

// config is the key configuration of a command: the flags, the key
// variables and the database file (dbFile, "" for a database server),
// checked without a database.
func (k *keyFlags) config(cmd *cobra.Command, dbFile string, log *slog.Logger) (service.KeyConfig, error) {
	alg, chosen, err := k.signingAlg(cmd)
	if err != nil {
		return service.KeyConfig{}, err
	}
	c := service.KeyConfig{
		SigningKey:  getenv(cmd, service.SigningKeyEnv),
		VerifyKeys:  getenv(cmd, service.VerifyKeysEnv),
		MasterKey:   getenv(cmd, service.MasterKeyEnv),
		DBFile:      dbFile,
		Alg:         alg,
		RequireAlg:  chosen,
		Environment: k.env(cmd),
		Logger:      log,
	}
	return c, c.Check()
}

// defaultPlatform is the issuer.platform of a server that names none: the
// environment is in it unless it is production, so a staging passport says
// so.
func (k *keyFlags) defaultPlatform(cmd *cobra.Command) string {
	if env := k.env(cmd); env != "" && env != service.DefaultEnvironment {
		return "swarmscore-" + env
	}
	return "swarmscore"
}

// dbFileOf returns the file of the database the --db value names, or ""
// for a database server.
func dbFileOf(cmd *cobra.Command, db string) (string, error) {
	dsn := dbDSN(cmd, db)
	drv, err := process(cmd).Drivers.lookup(dsn)
	if err != nil || drv.File == nil {
		return "", err
	}
	return drv.File(dsn)
}

const keyLong = `Manage the keys passports are signed with (spec §8.1).

Without SWARMSCORE_SIGNING_KEY, the keys live in the database (table
signing_keys), each sealed with AES-256-GCM under a master key the database
never sees: SWARMSCORE_MASTER_KEY (64 hex characters; required with
PostgreSQL, and the same on every server), or for SQLite a file beside the
database (swarmscore.master-key, mode 0600) created with the first key. Back
the master key up with the database: without it the keys cannot be unsealed.

A key is active (it signs; exactly one is), verify-only (its passports still
verify), retired (its passports fail with key_retired) or revoked
(compromised: key_revoked). Every running server signs with a new key within
a second of 'key rotate', and never serves a passport an older key signed
again: it re-issues it on the next request, and 'key rotate' re-issues every
unexpired one at once.

With SWARMSCORE_SIGNING_KEY the keys are static: that variable is the active
key and SWARMSCORE_VERIFY_KEYS (comma-separated) the verify-only ones; rotate
by setting a new key, moving the old one to SWARMSCORE_VERIFY_KEYS and
restarting.`

func newKeyCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "key",
		Short: "Rotate, list, retire and revoke passport signing keys",
		Long:  keyLong,
		Args:  noArgs,
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", dbFlagUsage)
	cmd.AddCommand(newKeyRotateCmd(&db), newKeyReissueCmd(&db), newKeyListCmd(&db),
		newKeyStateCmd(&db, "retire", keyring.Retired, "its passports then fail with key_retired (not tampering)"),
		newKeyStateCmd(&db, "revoke", keyring.Revoked, "it is compromised: its passports then fail with key_revoked"))
	return cmd
}

// interruptible is ctx ended by SIGINT or SIGTERM as well, so a long
// re-issue stops between passports, having lost nothing.
func interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// openKeyring gives cfg the keyring of the database st as serve opens it,
// from the key variables alone (no flags): for commands that sign or check
// as serve does. Without create, an empty keyring is an error rather than
// given its first key.
func openKeyring(cmd *cobra.Command, db string, st service.KeyStore, cfg *service.Config, log *slog.Logger, create bool) error {
	dbFile, err := dbFileOf(cmd, db)
	if err != nil {
		return err
	}
	var kf keyFlags
	kc, err := kf.config(cmd, dbFile, log)
	if err != nil {
		return err
	}
	kc.Existing, kc.RequireAlg, kc.Now = !create, false, process(cmd).Now
	cfg.Keys, err = service.OpenKeyring(cmd.Context(), st, kc)
	return err
}

// withKeys opens the database that must exist and its keyring (of the
// flags' environment), and runs f over the use cases, which issue
// passports for platform, and the keyring.
func withKeys(cmd *cobra.Command, db string, kf *keyFlags, platform string, f func(u *service.UseCases, ring *service.Keyring) error) error {
	dbFile, err := dbFileOf(cmd, db)
	if err != nil {
		return err
	}
	kc, err := kf.config(cmd, dbFile, newLogger(cmd.ErrOrStderr(), slog.LevelInfo))
	if err != nil {
		return err
	}
	kc.RequireAlg = false // --signing-alg says what to rotate to, not what the keyring has
	var ring *service.Keyring
	return withUseCases(cmd, db, existing, func(u *service.UseCases) error { return f(u, ring) },
		func(st service.Backend, cfg *service.Config) error {
			ring, err = service.OpenKeyring(cmd.Context(), st, kc)
			cfg.Keys, cfg.Platform = ring, platform
			return err
		})
}

// reissue re-issues the passports older keys signed, printing progress on
// stderr, and says how to resume when interrupted.
func reissue(cmd *cobra.Command, u *service.UseCases, batch int) (service.ReissueReport, error) {
	ctx, stop := interruptible(cmd.Context())
	defer stop()
	rep, err := u.Keys.ReissuePassports(ctx, batch, func(r service.ReissueReport) {
		fmt.Fprintf(cmd.ErrOrStderr(), "re-issued %d passport(s) signed by older keys (batch %d, through agent %s)\n", r.Reissued, r.Batches, r.Last)
	})
	if err != nil {
		return rep, fmt.Errorf("re-issuing passports stopped after %d: %w (run 'swarmscore key reissue' to finish; nothing is lost)", rep.Reissued, err)
	}
	return rep, nil
}

func newKeyRotateCmd(db *string) *cobra.Command {
	var (
		kf     issueFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "Make a new active key, keep the old one verify-only, and re-issue every unexpired passport",
		Long: `Make a new active signing key (--signing-alg, in --environment) and move the
active one to verify-only, in one transaction: passports it signed keep
verifying. Every server sharing the database signs with the new key within a
second, without a restart. Then every unexpired stored passport signed by
another key is re-issued with the new one, --batch-size agents at a time, each
in its own transaction; if that is interrupted (Ctrl-C, a lost connection),
'swarmscore key reissue' finishes it.

Retire the old key once its passports are no longer needed ('key retire'); a
passport lives 7 days.`,
		Example: `  swarmscore key rotate --db "$SWARMSCORE_DB"
  swarmscore key rotate --signing-alg Ed25519     # switch to public-key passports`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withKeys(cmd, *db, &kf.keyFlags, kf.platformOf(cmd, kf.platform), func(u *service.UseCases, ring *service.Keyring) error {
				before := ring.Active()
				alg, chosen, err := kf.signingAlg(cmd)
				if err != nil {
					return err
				}
				if !chosen {
					alg = before.Alg // the deployment's algorithm, unless told otherwise
				}
				rec, err := u.Keys.RotateKey(cmd.Context(), alg)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "new active key %s (%s, %s); %s is verify-only\n", rec.ID, rec.Alg, rec.Environment, before.ID)
				rep, err := reissue(cmd, u, kf.batch)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd, map[string]any{"kid": rec.ID, "alg": rec.Alg, "environment": rec.Environment, "previous": before.ID, "reissued": rep.Reissued})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "rotated to %s; re-issued %d passport(s)\n", rec.ID, rep.Reissued)
				return nil
			})
		},
	}
	kf.register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"kid","alg","environment","previous","reissued"}`)
	return cmd
}

func newKeyReissueCmd(db *string) *cobra.Command {
	var (
		kf     issueFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "reissue",
		Short: "Re-issue, with the active key, every unexpired passport another key signed",
		Long: `Re-issue every unexpired stored passport that was not signed by the active key,
--batch-size agents at a time, each in its own transaction: what 'key rotate'
does after rotating. Run it to finish an interrupted rotation; it resumes
where the last run stopped (what was re-issued is not done again). Servers
also re-issue such a passport on its next request, so this only saves that
wait.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withKeys(cmd, *db, &kf.keyFlags, kf.platformOf(cmd, kf.platform), func(u *service.UseCases, ring *service.Keyring) error {
				rep, err := reissue(cmd, u, kf.batch)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd, map[string]any{"kid": ring.Active().ID, "reissued": rep.Reissued})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "re-issued %d passport(s) with %s\n", rep.Reissued, ring.Active().ID)
				return nil
			})
		},
	}
	kf.register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"kid","reissued"}`)
	return cmd
}

// keyJSON is one key as 'key list --json' prints it.
type keyJSON struct {
	KID            string  `json:"kid"`
	Alg            string  `json:"alg"`
	Environment    string  `json:"environment"`
	State          string  `json:"state"`
	Source         string  `json:"source"` // database or environment
	CreatedAt      *string `json:"created_at"`
	StateChangedAt *string `json:"state_changed_at"`
	AgeSeconds     *int64  `json:"age_seconds"`
}

func newKeyListCmd(db *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the keys: ids, algorithms, environments, states and ages",
		Long: `List the keys of the database's keyring (no master key needed) and, when
SWARMSCORE_SIGNING_KEY is set, the static keys, which are what a server
started with the same variables signs with. Warns on stderr when the active
key is older than a year (spec §8.1 asks for a yearly rotation).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withUseCases(cmd, *db, existing, func(u *service.UseCases) error {
				recs, err := u.Keys.Keyring(cmd.Context())
				if err != nil {
					return err
				}
				now := time.Now()
				keys := make([]keyJSON, 0, len(recs))
				var due *keyJSON
				add := func(r keyring.Record, source string) {
					k := keyJSON{KID: r.ID, Alg: r.Alg, Environment: r.Environment, State: string(r.State), Source: source}
					if !r.CreatedAt.IsZero() {
						c, s := r.CreatedAt.UTC().Format(time.RFC3339), r.StateChangedAt.UTC().Format(time.RFC3339)
						age := int64(now.Sub(r.CreatedAt) / time.Second)
						k.CreatedAt, k.StateChangedAt, k.AgeSeconds = &c, &s, &age
					}
					keys = append(keys, k)
					if r.State == keyring.Active && k.AgeSeconds != nil && time.Duration(*k.AgeSeconds)*time.Second > service.KeyRotationAge {
						due = &keys[len(keys)-1]
					}
				}
				for _, r := range recs {
					add(r, "database")
				}
				var kf keyFlags
				if getenv(cmd, service.SigningKeyEnv) != "" {
					kc, err := kf.config(cmd, "", nil)
					if err != nil {
						return err
					}
					k, err := service.OpenKeyring(cmd.Context(), nil, kc)
					if err != nil {
						return err
					}
					for _, r := range k.Records() {
						add(r, "environment")
					}
				}
				if due != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "swarmscore: warning: the active key %s is %d days old; rotate it ('swarmscore key rotate'): spec §8.1 asks for a yearly rotation\n",
						due.KID, *due.AgeSeconds/86400)
				}
				if asJSON {
					return printJSON(cmd, keys)
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
				fmt.Fprintln(w, "KID\tALG\tENVIRONMENT\tSTATE\tSOURCE\tCREATED\tAGE")
				for _, k := range keys {
					created, age := "-", "-"
					if k.CreatedAt != nil {
						created, age = *k.CreatedAt, humanAge(time.Duration(*k.AgeSeconds)*time.Second)
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.KID, k.Alg, k.Environment, k.State, k.Source, created, age)
				}
				return w.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print [{"kid","alg","environment","state","source","created_at","state_changed_at","age_seconds"}]`)
	return cmd
}

// humanAge renders an age in its largest unit: 3d, 5h, 12m, 40s.
func humanAge(d time.Duration) string {
	switch {
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d >= time.Hour:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

func newKeyStateCmd(db *string, verb string, to keyring.State, effect string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   verb + " KID",
		Short: fmt.Sprintf("Mark a key %s: %s", to, effect),
		Long: fmt.Sprintf(`Mark the key KID (see 'key list') %s: %s. Every server sees it within a
second. The active key cannot be %s: rotate first ('key rotate'). A retired
key can still be revoked; neither comes back.`, to, effect, to),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withUseCases(cmd, *db, existing, func(u *service.UseCases) error {
				if err := u.Keys.SetKeyState(cmd.Context(), args[0], to); err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd, map[string]string{"kid": args[0], "state": string(to)})
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "key %s is %s\n", args[0], to)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"kid","state"}`)
	return cmd
}
