package store

import (
	"fmt"

	"github.com/swarmscore/swarmscore/internal/auth"
	"github.com/swarmscore/swarmscore/internal/errkind"
)

// MaxActionsPage bounds one read of the action log (service.MaxActionsPage).
const MaxActionsPage = 500

// ActionsLimit is the number of action log entries a read returns for a
// requested limit: MaxActionsPage when 0 or more.
func ActionsLimit(limit int) int {
	if limit <= 0 || limit > MaxActionsPage {
		return MaxActionsPage
	}
	return limit
}

// CheckAction refuses an action log entry both back ends would store
// wrongly: no time, kind, edge or outcome. Errors: ErrInvalid.
func CheckAction(a auth.Action) error {
	switch {
	case a.At.IsZero():
		return fmt.Errorf("%w: an action needs its time", errkind.ErrInvalid)
	case a.Kind == "":
		return fmt.Errorf("%w: an action needs its kind", errkind.ErrInvalid)
	case a.Via != auth.ViaAPI && a.Via != auth.ViaConsole && a.Via != auth.ViaCLI:
		return fmt.Errorf("%w: action edge %q is not api, console or cli", errkind.ErrInvalid, a.Via)
	case a.Outcome != auth.OK && a.Outcome != auth.Denied && a.Outcome != auth.Failed:
		return fmt.Errorf("%w: action outcome %q is not ok, denied or failed", errkind.ErrInvalid, a.Outcome)
	}
	return nil
}
