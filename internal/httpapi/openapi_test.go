package httpapi

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/appeal"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// pointer returns the value at the JSON pointer ptr (RFC 6901) of doc, or
// nil when there is none.
func pointer(doc any, ptr string) any {
	v := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil
			}
		case []any:
			var i int
			if err := json.Unmarshal([]byte(tok), &i); err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// TestOpenAPILimits: every limit the document states is the server's, as
// its constants say: lengths, counts, ranges, and each request body's size
// (x-max-body-bytes, which every operation with a body states and which is
// the limit its route was registered with).
func TestOpenAPILimits(t *testing.T) {
	h := newHarness(t, Options{MCP: http.NotFoundHandler()})
	var doc any
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := "/components/schemas/"
	for _, c := range []struct {
		ptr  string
		want float64
	}{
		{schemas + "ID/maxLength", ledger.MaxIDLen},
		{"/paths/~1swarmscore~1events/post/requestBody/content/application~1json/schema/maxItems", api.MaxEvents},
		{"/paths/~1swarmscore~1events/post/x-max-line-bytes", api.MaxLineBytes},
		{"/paths/~1swarmscore~1agents/get/parameters/1/schema/maximum", score.MaxScore},
		{"/paths/~1swarmscore~1agents/get/parameters/2/schema/maximum", ledger.MaxListLimit},
		{"/paths/~1swarmscore~1checkpoints~1{number}/get/parameters/0/schema/maximum", math.MaxInt64},
		{schemas + "CorrectionRequest/properties/reason/maxLength", ledger.MaxReasonLen},
		{schemas + "AppealFiling/properties/statement/maxLength", appeal.MaxTextLen},
		{schemas + "AppealNote/properties/reason/maxLength", appeal.MaxTextLen},
		{schemas + "AppealUphold/properties/reason/maxLength", appeal.MaxTextLen},
		{schemas + "AppealUphold/properties/corrections/maxItems", maxUpholdCorrections},
		{schemas + "EraseRequest/properties/reason/maxLength", service.MaxErasureReasonLen},
		{schemas + "EscrowRequest/properties/amount_cents/maximum", ledger.MaxEscrowCents},
		{schemas + "AP2Transaction/properties/escrow_amount_cents/maximum", ledger.MaxEscrowCents},
		{schemas + "Passport/properties/score/properties/value/maximum", score.MaxScore},
		{schemas + "AgentScore/properties/score/maximum", score.MaxScore},
		{schemas + "Dimension/properties/sessions_90d/maximum", passport.MaxCount},
		{schemas + "Dimension/properties/successful_sessions_90d/maximum", passport.MaxCount},
		{schemas + "Passport/x-max-bytes", passport.MaxDocumentSize},
	} {
		if got, ok := pointer(doc, c.ptr).(float64); !ok || got != c.want {
			t.Errorf("%s is %v, the server's limit is %v", c.ptr, pointer(doc, c.ptr), c.want)
		}
	}
	paths := pointer(doc, "/paths").(map[string]any)
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			pattern := strings.ToUpper(method) + " " + path
			o := op.(map[string]any)
			got, stated := o["x-max-body-bytes"].(float64)
			_, hasBody := o["requestBody"]
			switch {
			case hasBody && !stated:
				t.Errorf("%s takes a body and states no x-max-body-bytes (the server's limit is %d)", pattern, h.s.limits[pattern])
			case stated && int64(got) != h.s.limits[pattern]:
				t.Errorf("%s: x-max-body-bytes is %v, the server's limit is %d", pattern, got, h.s.limits[pattern])
			}
		}
	}
}
