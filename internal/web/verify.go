package web

import (
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/passport"
)

// maxVerifyForm bounds a verify form: a pasted and an uploaded passport at
// their largest, and the form's own bytes.
const maxVerifyForm = 2*passport.MaxDocumentSize + 16<<10

type verifyView struct {
	Passport string // as pasted, shown again in the form
	AgentID  string
	Error    string // why nothing was verified
	Result   *verifyResult
}

type verifyResult struct {
	Valid, Tampering bool
	Agent            string // the agent the passport names, "" if unreadable
	Checks           []checkView
	Findings         []service.VerifyError
}

// checkView is one check as the page shows it: State is pass, fail or
// skip (not applicable), and Reason says why in words.
type checkView struct {
	Name, State, Reason string
}

func (p *Pages) verifyForm(w http.ResponseWriter, r *http.Request) {
	p.render(w, r, http.StatusOK, "verify", view{Title: "Verify a passport · SwarmScore", Section: "verify", Data: verifyView{}})
}

// verify checks a pasted or uploaded passport with the verification of
// POST /swarmscore/verify (Service.Verify), and shows each check. The
// form is side-effect free and public, so it carries no CSRF token.
func (p *Pages) verify(w http.ResponseWriter, r *http.Request) {
	v := verifyView{}
	again := func(status int, msg string) {
		v.Error = msg
		w.Header().Set("Cache-Control", "no-store")
		p.render(w, r, status, "verify", view{Title: "Verify a passport · SwarmScore", Section: "verify", Data: v})
	}
	doc, agent, err := readVerifyForm(w, r)
	v.AgentID = agent
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &mb) || errors.Is(err, errTooLarge):
		again(http.StatusRequestEntityTooLarge, "That is larger than any passport (at most 64 KiB).")
		return
	case err != nil:
		again(http.StatusBadRequest, "The form could not be read; try again.")
		return
	}
	v.Passport = strings.ToValidUTF8(string(doc), "\uFFFD")
	switch {
	case agent != "" && !ledger.ValidID(agent):
		again(http.StatusBadRequest, "An agent id is 1 to 128 letters, digits and . _ : - characters.")
		return
	case len(strings.TrimSpace(string(doc))) == 0:
		again(http.StatusBadRequest, "Paste a passport or choose a passport file.")
		return
	}
	claimed := claimedAgent(doc)
	target := agent
	if target == "" {
		target = claimed
	}
	res, err := p.svc.Verify(r.Context(), doc, target)
	if err != nil {
		p.fail(w, r, err, "")
		return
	}
	known := false
	if claimed != "" {
		_, err := p.svc.Agent(r.Context(), claimed)
		switch {
		case err == nil:
			known = true
		case !errors.Is(err, errkind.ErrNotFound):
			p.fail(w, r, err, "")
			return
		}
	}
	v.Result = &verifyResult{
		Valid: res.Valid, Tampering: res.DetectedTampering, Agent: claimed,
		Checks:   checksOf(res, claimed, known, agent != "", p.now()),
		Findings: res.Errors,
	}
	w.Header().Set("Cache-Control", "no-store")
	p.render(w, r, http.StatusOK, "verify", view{Title: "Verify a passport · SwarmScore", Section: "verify", Data: v})
}

var errTooLarge = errors.New("passport too large")

// readVerifyForm reads the passport (an uploaded file wins over pasted
// text) and the optional agent id from a urlencoded or multipart form.
func readVerifyForm(w http.ResponseWriter, r *http.Request) (doc []byte, agent string, err error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxVerifyForm)
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		err = r.ParseMultipartForm(maxVerifyForm)
	} else {
		err = r.ParseForm()
	}
	if err != nil {
		return nil, "", err
	}
	agent = strings.TrimSpace(r.PostFormValue("agent_id"))
	f, _, ferr := r.FormFile("passport_file")
	switch {
	case ferr == nil:
		defer f.Close()
		doc, err = io.ReadAll(io.LimitReader(f, passport.MaxDocumentSize+1))
		if err != nil {
			return nil, agent, err
		}
	case !errors.Is(ferr, http.ErrMissingFile) && !errors.Is(ferr, multipart.ErrMessageTooLarge) && !errors.Is(ferr, http.ErrNotMultipart):
		return nil, agent, ferr
	}
	if len(doc) == 0 {
		doc = []byte(r.PostFormValue("passport"))
	}
	if len(doc) > passport.MaxDocumentSize {
		return nil, agent, errTooLarge
	}
	return doc, agent, nil
}

// claimedAgent is the agent a document names, read as Verify reads it
// ("" when it is not a well-formed passport). The form's agent id is
// optional: without one the passport is checked for the agent it names.
// (Once Verify takes an optional agent itself, this goes.)
func claimedAgent(doc []byte) string {
	if p := passport.Verify(doc, nil, time.Time{}).Passport; p != nil {
		return p.AgentID
	}
	return ""
}

// The checks, in the order the page lists them, and which findings belong
// to each. A finding of no check here (a code added later) still appears
// in the page's list of findings.
const (
	checkDocument    = "document"
	checkSignature   = "Signature"
	checkConsistency = "Score consistency"
	checkExpiry      = "Expiry"
	checkLedger      = "Ledger"
	checkAgent       = "Agent"
)

var checkOfCode = map[string]string{
	passport.CodeTooLarge: checkDocument, passport.CodeInvalidJSON: checkDocument, passport.CodeTrailingData: checkDocument,
	passport.CodeDuplicateKey: checkDocument, passport.CodeTooDeep: checkDocument,

	passport.CodeSignatureMissing: checkSignature, passport.CodeSignatureMalformed: checkSignature,
	passport.CodeSignatureMismatch: checkSignature, passport.CodeNoKeys: checkSignature,

	passport.CodeWrongType: checkConsistency, passport.CodeMissingField: checkConsistency, passport.CodeInvalidValue: checkConsistency,
	passport.CodeUnsupportedVersion: checkConsistency, passport.CodeUnsupportedFormulaVersion: checkConsistency,
	passport.CodeInvalidCounts: checkConsistency, passport.CodeScoreMismatch: checkConsistency, passport.CodeTierMismatch: checkConsistency,
	passport.CodeContributionMismatch: checkConsistency, passport.CodeRateMismatch: checkConsistency,
	passport.CodeVolumeFactorMismatch: checkConsistency, passport.CodeEscrowMismatch: checkConsistency,
	passport.CodeGapsMismatch: checkConsistency, passport.CodeInvalidExpiry: checkConsistency,

	passport.CodeExpired:       checkExpiry,
	service.CodeLedgerMismatch: checkLedger,
	service.CodeAgentMismatch:  checkAgent,
}

// checksOf is the one place a verification becomes the checks the page
// shows: signature, score consistency, expiry and ledger, and the agent
// when the form named one. claimed is the agent the passport names ("" if
// it could not be read) and known whether this server holds that agent's
// ledger: the verification as it stands does not say whether its ledger
// level ran, so that is asked separately.
func checksOf(v service.Verification, claimed string, known, askedAgent bool, now time.Time) []checkView {
	first := map[string]string{}
	for _, e := range v.Errors {
		if c := checkOfCode[e.Code]; c != "" && first[c] == "" {
			first[c] = e.Message
		}
	}
	unread := first[checkDocument]
	if unread == "" && claimed == "" {
		unread = first[checkConsistency] // a passport missing a member, or of a wrong type
	}
	pass := func(name, reason string) checkView { return checkView{name, "pass", reason} }
	fail := func(name, reason string) checkView { return checkView{name, "fail", reason} }
	skip := func(name, reason string) checkView { return checkView{name, "skip", reason} }

	var out []checkView
	switch {
	case v.SignatureValid:
		out = append(out, pass(checkSignature, "Made with this server's signing key over the document as received."))
	case first[checkSignature] != "":
		out = append(out, fail(checkSignature, first[checkSignature]))
	case unread != "":
		out = append(out, fail(checkSignature, "Not checked: the document could not be read as a passport: "+unread))
	default:
		out = append(out, fail(checkSignature, "Not checked: the document could not be read as a passport."))
	}
	switch {
	case first[checkDocument] != "":
		out = append(out, fail(checkConsistency, "The document could not be read as a passport: "+unread))
	case first[checkConsistency] != "":
		out = append(out, fail(checkConsistency, first[checkConsistency]))
	default:
		out = append(out, pass(checkConsistency, "Score, tier, contributions, rates, escrow modifier and gaps are exactly what its counts give."))
	}
	switch {
	case first[checkExpiry] != "":
		out = append(out, fail(checkExpiry, first[checkExpiry]))
	case v.ExpiresAt.IsZero():
		out = append(out, fail(checkExpiry, "The document has no readable expires_at."))
	default:
		out = append(out, pass(checkExpiry, "Valid until "+datetime(v.ExpiresAt)+" ("+until(now, v.ExpiresAt)+")."))
	}
	switch {
	case first[checkLedger] != "":
		out = append(out, fail(checkLedger, first[checkLedger]))
	case claimed == "":
		out = append(out, skip(checkLedger, "Not checked: the document could not be read as a passport."))
	case known:
		out = append(out, pass(checkLedger, "This server's ledger gives the same counts as of the passport's computed_at."))
	default:
		out = append(out, skip(checkLedger, "Not applicable: this server holds no ledger for agent “"+claimed+"”; only the document itself was checked."))
	}
	if askedAgent {
		switch {
		case first[checkAgent] != "":
			out = append(out, fail(checkAgent, first[checkAgent]))
		case claimed == "":
			out = append(out, skip(checkAgent, "Not checked: the document could not be read as a passport."))
		default:
			out = append(out, pass(checkAgent, "The passport is for agent “"+claimed+"”."))
		}
	}
	return out
}
