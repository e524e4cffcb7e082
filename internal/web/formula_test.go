package web

import (
	"testing"

	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/passport"
)

// The formula-version findings are consistency failures on the page, so
// the consistency check gives them as its reason.
func TestFormulaCodesAreConsistency(t *testing.T) {
	for _, code := range []string{passport.CodeUnsupportedFormulaVersion, passport.CodeFormulaOutOfWindow} {
		if g := checkGroup[code]; g != service.CheckConsistency {
			t.Errorf("%s is in check %q, want %q", code, g, service.CheckConsistency)
		}
	}
}
