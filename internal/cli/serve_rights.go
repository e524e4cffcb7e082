package cli

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/signal"
)

// rightsConfig is serve's configuration of agents' rights and gaming
// signals.
type rightsConfig struct {
	requireConsent bool
	thresholds     signal.Thresholds
	signalsEvery   time.Duration
	verifyEvery    time.Duration
}

// Defaults of the schedules. The signals are one read of the window's
// events; a chain walk reads every record ever written, so it runs daily.
const (
	defaultSignalsEvery = 5 * time.Minute
	defaultVerifyEvery  = 24 * time.Hour
	minScheduleEvery    = time.Second
)

func (c *rightsConfig) flags(f *pflag.FlagSet) {
	c.thresholds = signal.Defaults
	f.BoolVar(&c.requireConsent, "require-consent", false, "publish an agent's score and passport only once it has consented to the disclosure (events are recorded and scored all the same)")
	f.DurationVar(&c.signalsEvery, "signals-every", defaultSignalsEvery, "compute every agent's gaming signals for /metrics at start and at this interval (0: never)")
	f.DurationVar(&c.verifyEvery, "verify-every", defaultVerifyEvery, "walk every hash chain at this interval, the first one interval after start, recording breaks for the chain_break signal (0: never)")
	signalFlags(f, &c.thresholds)
}

// validate checks the flags before serve binds its port.
func (c *rightsConfig) validate() error {
	if err := c.thresholds.Validate(); err != nil {
		return &usageError{err}
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--signals-every", c.signalsEvery}, {"--verify-every", c.verifyEvery}} {
		if d.v != 0 && d.v < minScheduleEvery {
			return usageErrorf("%s %s is below %s (0 disables it)", d.flag, d.v, minScheduleEvery)
		}
	}
	return nil
}

// apply configures the use cases: whether consent is required, the
// thresholds, and the key of the buyer pseudonyms agents see, derived from
// the master key, or SWARMSCORE_SIGNING_KEY with static keys (cfg.Keys,
// which must be set: Keyring.Derive).
func (c *rightsConfig) apply(cfg *service.Config) {
	cfg.RequireConsent, cfg.SignalThresholds = c.requireConsent, c.thresholds
	cfg.PseudonymKey = cfg.Keys.Derive(service.PseudonymLabel)
}

// startRightsSchedules runs the gaming-signal counts (at start, then every
// signalsEvery) and the chain walk (every verifyEvery) in the background
// until ctx ends or stop is called; stop waits for a run under way, so the
// database can be closed after it.
func startRightsSchedules(ctx context.Context, sig *service.Signals, c rightsConfig, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	every := func(d time.Duration, atStart bool, run func()) {
		if d <= 0 {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(d)
			defer t.Stop()
			if atStart {
				run()
			}
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					run()
				}
			}
		}()
	}
	every(c.signalsEvery, true, func() {
		st, err := sig.RefreshSignalStats(ctx)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			log.Warn("computing the gaming signals failed; retrying at the next tick", "err", err, "every", c.signalsEvery.String())
		default:
			log.Debug("gaming signals computed", "agents", st.Agents, "flagged", st.Flagged)
		}
	})
	every(c.verifyEvery, false, func() {
		r, err := sig.VerifyLedger(ctx)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			log.Warn("walking the hash chains failed; retrying at the next tick", "err", err, "every", c.verifyEvery.String())
		case len(r.Broken) > 0:
			log.Error("the chain walk found broken chains", "broken", len(r.Broken), "agents", r.Agents)
		default:
			log.Info("every hash chain is intact", "agents", r.Agents, "records", r.Records)
		}
	})
	log.Info("agents' rights and gaming signals", "require_consent", c.requireConsent,
		"signals_every", c.signalsEvery.String(), "verify_every", c.verifyEvery.String())
	return func() {
		cancel()
		wg.Wait()
	}
}
