package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/passport"
)

// KeysService lists the use cases of the console's signing keys pages
// (spec §8.1; service.Keys): the ones `swarmscore
// key list` and `swarmscore key rotate` call. None returns key material.
type KeysService interface {
	// Keyring is every key of the database's keyring, oldest first,
	// without its sealed material.
	Keyring(ctx context.Context) ([]keyring.Record, error)
	// KeyringStats names the key this process signs with.
	KeyringStats() service.KeyringStats
	// RotateKey makes a new active key and demotes the active one to
	// verify-only.
	RotateKey(ctx context.Context, alg string) (keyring.Record, error)
	// ReissuePassports signs again, with the active key, the unexpired
	// passports older keys signed.
	ReissuePassports(ctx context.Context, batch int, progress func(service.ReissueReport)) (service.ReissueReport, error)
}

// reissueBatch is the agents re-issued per transaction after a rotation,
// the CLI's default.
const reissueBatch = 100

type keysView struct {
	Keys []keyRow
	// Active is the key this server signs with; Static is true when it
	// comes from SWARMSCORE_SIGNING_KEY, which the console cannot rotate.
	Active keyring.Record
	Static bool
	// Due is true when the active key is older than a year; Age says its
	// age.
	Due    bool
	Age    string
	Notice string
	// CanRotate is false for a role that may not rotate keys: the page
	// then offers no button that would only answer "not allowed".
	CanRotate bool
	// Partial is true when the re-issue after a rotation was cut short.
	Partial bool
}

type keyRow struct {
	keyring.Record
	Age    string
	Signer bool
}

// age says how old something created at t is: "3 days", "14 months".
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d >= 60*24*time.Hour:
		return plural(int64(d/(30*24*time.Hour)), "month")
	case d >= 48*time.Hour:
		return plural(int64(d/(24*time.Hour)), "day")
	case d >= 2*time.Hour:
		return plural(int64(d/time.Hour), "hour")
	case d >= 2*time.Minute:
		return plural(int64(d/time.Minute), "minute")
	}
	return "under 2 minutes"
}

// loadKeys is the keyring: every key's id, algorithm, environment, state
// and age, and a warning when the active key is due for its yearly
// rotation. ?rotated= and ?reissued= report the rotation that brought the
// operator here.
func (p *Pages) loadKeys(r *http.Request, s session) (any, error) {
	recs, err := p.svc.Keys.Keyring(r.Context())
	if err != nil {
		return nil, err
	}
	now := p.now()
	st := p.svc.Keys.KeyringStats()
	v := keysView{Active: keyring.Record{ID: st.ActiveID, Alg: st.ActiveAlg, CreatedAt: st.ActiveSince, State: keyring.Active},
		CanRotate: s.Role.May(auth.ManageKeys)}
	// A static key has no creation time, and is not in the database's
	// keyring (or, if it is, the database's active key is not used).
	v.Static = st.ActiveSince.IsZero()
	for _, rec := range recs {
		row := keyRow{Record: rec, Signer: rec.ID == st.ActiveID}
		if !rec.CreatedAt.IsZero() {
			row.Age = age(now, rec.CreatedAt)
		}
		v.Keys = append(v.Keys, row)
	}
	if !v.Static {
		v.Age = age(now, st.ActiveSince)
		v.Due = now.Sub(st.ActiveSince) > service.KeyRotationAge
	}
	q := r.URL.Query()
	if kid := q.Get("rotated"); kid != "" && kid == st.ActiveID {
		n, _ := strconv.Atoi(q.Get("reissued"))
		v.Notice = "Rotated: " + kid + " (" + st.ActiveAlg + ") signs new passports from now on, on every server sharing the database within a second; the previous key is verify-only, so what it signed keeps verifying. " +
			"Re-issued with the new key: " + plural(int64(n), "unexpired passport") + " older keys had signed."
		v.Partial = q.Has("partial")
	}
	return v, nil
}

type rotateView struct {
	CSRF   string
	Active keyring.Record
	Algs   []tierOption
	Error  string
}

var signingAlgs = []struct{ alg, label string }{
	{passport.AlgHS256, "HMAC-SHA256 (HS256): verified by this server only"},
	{passport.AlgEdDSA, "Ed25519 (EdDSA): anyone can verify offline with the public key"},
}

// rotateKeyForm asks to confirm a rotation: what it does, the algorithm
// of the new key (the active one's unless changed), and a button that
// posts it. Nothing changes until that is pressed.
func (p *Pages) rotateKeyForm(w http.ResponseWriter, r *http.Request, s session) {
	st := p.svc.Keys.KeyringStats()
	if st.ActiveSince.IsZero() {
		p.errorPage(w, r, http.StatusConflict, "The keys are static", staticKeys)
		return
	}
	p.renderRotate(w, r, s, http.StatusOK, st, st.ActiveAlg, "")
}

const staticKeys = "This server signs with SWARMSCORE_SIGNING_KEY, which the console cannot rotate: set a new key (swarmscore keygen), move the old one to SWARMSCORE_VERIFY_KEYS and restart."

func (p *Pages) renderRotate(w http.ResponseWriter, r *http.Request, s session, status int, st service.KeyringStats, alg, problem string) {
	v := rotateView{CSRF: s.csrf, Active: keyring.Record{ID: st.ActiveID, Alg: st.ActiveAlg, CreatedAt: st.ActiveSince}, Error: problem}
	for _, a := range signingAlgs {
		v.Algs = append(v.Algs, tierOption{a.alg, a.label, a.alg == alg})
	}
	p.renderConsole(w, r, s, status, "/operator/keys", "keyrotate", "Rotate the signing key", v)
}

// rotateKey rotates as `swarmscore key rotate` does: a new active key of
// the chosen algorithm, the active one demoted to verify-only, then every
// unexpired passport an older key signed re-issued with the new one. The
// form names the key it meant to replace, so that a form sent twice
// (or after another operator's rotation) does not rotate again. The
// re-issue runs within the page's database time limit; what it does not
// reach is re-issued on its next request, or by `swarmscore key reissue`.
func (p *Pages) rotateKey(w http.ResponseWriter, r *http.Request, s session) {
	st := p.svc.Keys.KeyringStats()
	if st.ActiveSince.IsZero() {
		p.errorPage(w, r, http.StatusConflict, "The keys are static", staticKeys)
		return
	}
	alg, err := service.ParseSigningAlg(r.PostFormValue("alg"))
	if err != nil || r.PostFormValue("alg") == "" {
		p.renderRotate(w, r, s, http.StatusBadRequest, st, st.ActiveAlg, "Choose HMAC-SHA256 or Ed25519.")
		return
	}
	if from := r.PostFormValue("from"); from != st.ActiveID {
		p.renderRotate(w, r, s, http.StatusConflict, st, alg, "The active key is no longer the one this form was for: it was rotated since (the active key is now "+st.ActiveID+"). Nothing was changed; confirm again to rotate once more.")
		return
	}
	rec, err := p.svc.Keys.RotateKey(r.Context(), alg)
	if err != nil {
		p.fail(w, r, err, "")
		return
	}
	p.log.Info("signing key rotated", "operator", s.Operator, "kid", rec.ID, "alg", rec.Alg, "previous", st.ActiveID)
	rep, err := p.svc.Keys.ReissuePassports(r.Context(), reissueBatch, nil)
	q := url.Values{"rotated": {rec.ID}, "reissued": {strconv.Itoa(rep.Reissued)}}
	if err != nil {
		// The rotation is done; the passports not re-issued are on their
		// next request.
		q.Set("partial", "1")
		level := p.log.Warn
		if !errors.Is(err, context.DeadlineExceeded) && errkind.Of(err) != errkind.Unavailable {
			level = p.log.Error
		}
		level("re-issuing passports after a rotation stopped", "reissued", rep.Reissued, "err", err)
	}
	http.Redirect(w, r, "/operator/keys?"+q.Encode(), http.StatusSeeOther)
}
