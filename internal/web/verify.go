package web

import (
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

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
	// Findings are the errors, Warnings what does not affect validity
	// (members this version does not know, a passport naming no agent).
	Findings, Warnings []service.VerifyError
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
	res, err := p.svc.Verifier.Verify(r.Context(), doc, agent)
	if err != nil {
		p.fail(w, r, err, "")
		return
	}
	v.Result = &verifyResult{
		Valid: res.Valid, Tampering: res.DetectedTampering, Agent: namedAgent(doc),
		Checks:   checksOf(res, agent, p.now()),
		Findings: res.Errors,
		Warnings: res.Warnings,
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

// namedAgent is the agent a passport names, for the verdict's heading;
// "" when the document does not read as a passport or names none.
func namedAgent(doc []byte) string {
	if p, err := passport.Parse(doc); err == nil {
		return p.AgentID
	}
	return ""
}

// checkGroup is the check each finding belongs to, for the reason a
// failed check gives; a finding of no check here (a code added later)
// still appears in the page's list of findings. checkDocument is the
// document as a whole: unreadable, so no check could run on it.
const checkDocument = "document"

var checkGroup = map[string]string{
	passport.CodeTooLarge: checkDocument, passport.CodeInvalidJSON: checkDocument, passport.CodeTrailingData: checkDocument,
	passport.CodeDuplicateKey: checkDocument, passport.CodeTooDeep: checkDocument,

	passport.CodeSignatureMissing: service.CheckSignature, passport.CodeSignatureMalformed: service.CheckSignature,
	passport.CodeSignatureMismatch: service.CheckSignature, passport.CodeNoKeys: service.CheckSignature,

	passport.CodeWrongType: service.CheckConsistency, passport.CodeMissingField: service.CheckConsistency,
	passport.CodeInvalidValue: service.CheckConsistency, passport.CodeUnsupportedVersion: service.CheckConsistency,
	passport.CodeUnsupportedFormulaVersion: service.CheckConsistency, passport.CodeFormulaOutOfWindow: service.CheckConsistency,
	passport.CodeInvalidCounts: service.CheckConsistency,
	passport.CodeScoreMismatch: service.CheckConsistency, passport.CodeTierMismatch: service.CheckConsistency,
	passport.CodeContributionMismatch: service.CheckConsistency, passport.CodeRateMismatch: service.CheckConsistency,
	passport.CodeVolumeFactorMismatch: service.CheckConsistency, passport.CodeEscrowMismatch: service.CheckConsistency,
	passport.CodeGapsMismatch: service.CheckConsistency, passport.CodeInvalidExpiry: service.CheckConsistency,

	passport.CodeExpired:        service.CheckExpiry,
	service.CodeLedgerMismatch:  service.CheckLedger,
	service.CodeAgentMismatch:   service.CheckAgent,
	service.CodePassportRevoked: service.CheckLedger,
}

// checkNames are the checks' names for people.
var checkNames = map[string]string{
	service.CheckSignature: "Signature", service.CheckConsistency: "Score consistency", service.CheckExpiry: "Expiry",
	service.CheckLedger: "Ledger", service.CheckAgent: "Agent",
}

// checksOf is the one place a verification's per-check report
// (service.Verification.Checks, in its order) becomes what the page shows:
// passed, failed or not checked, each with the reason in words: for a
// failure the first finding of that check, else why it passed or did not
// apply. agent is the agent id the form named ("" for none).
func checksOf(v service.Verification, agent string, now time.Time) []checkView {
	first := map[string]string{}
	for _, e := range v.Errors {
		if g := checkGroup[e.Code]; g != "" && first[g] == "" {
			first[g] = e.Message
		}
	}
	out := make([]checkView, 0, len(v.Checks))
	for _, c := range v.Checks {
		cv := checkView{Name: checkNames[c.Name]}
		if cv.Name == "" {
			cv.Name = c.Name
		}
		switch c.Result {
		case service.CheckOK, service.CheckConfirmed:
			cv.State = "pass"
		case service.CheckNotApplicable:
			cv.State = "skip"
		default:
			cv.State = "fail"
		}
		cv.Reason = checkReason(c.Name, cv.State, first, v, agent, now)
		out = append(out, cv)
	}
	return out
}

func checkReason(name, state string, first map[string]string, v service.Verification, agent string, now time.Time) string {
	if state == "fail" {
		switch {
		case first[name] != "":
			return first[name]
		case first[checkDocument] != "":
			return "The document could not be read as a passport: " + first[checkDocument]
		case name == service.CheckExpiry && v.ExpiresAt.IsZero():
			return "The document has no readable expires_at."
		}
		return "See the findings below."
	}
	switch name + "/" + state {
	case service.CheckSignature + "/pass":
		return "Made with this server's signing key over the document as received."
	case service.CheckConsistency + "/pass":
		return "Score, tier, contributions, rates, escrow modifier and gaps are exactly what its counts give."
	case service.CheckExpiry + "/pass":
		return "Valid until " + datetime(v.ExpiresAt) + " (" + until(now, v.ExpiresAt) + ")."
	case service.CheckLedger + "/pass":
		return "This server's ledger gives the same counts as of the passport's computed_at."
	case service.CheckLedger + "/skip":
		return "Not applicable: this server holds no ledger for the passport's agent (or the document names none, or could not be read); only the document itself was checked."
	case service.CheckAgent + "/pass":
		return "The passport is for agent “" + agent + "”."
	case service.CheckAgent + "/skip":
		if agent == "" {
			return "No agent id was given: the passport was checked for the agent it names."
		}
		return "Not checked: the document names no agent, or could not be read."
	}
	return ""
}
