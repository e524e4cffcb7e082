package client

import (
	"context"
	"testing"
)

func TestErasureRequests(t *testing.T) {
	ctx := context.Background()
	one := `{"erasure_id":"erasure-1","pseudonym":"erased-0011223344556677","erased_at":"2026-03-17T14:30:00Z","erased_by":"acme","identity":"` +
		"ab00000000000000000000000000000000000000000000000000000000000000" + `","sealed_records":3`
	c, s := newTest(t, map[string]reply{
		"POST /swarmscore/a:1/erase": {201, one + `,"opening":{"category":"agents","salt":"00112233445566778899aabbccddeeff"},"reason":"r"}`, nil},
		"GET /swarmscore/erasures":   {200, `{"erasures":[` + one + `}]}`, nil},
	})
	e, err := c.EraseAgent(ctx, "a:1", "r")
	if err != nil || e.Pseudonym != "erased-0011223344556677" || e.Opening == nil || e.Opening.Salt != "00112233445566778899aabbccddeeff" ||
		e.SealedRecords != 3 || e.ErasedAt.IsZero() || s.gotBody != `{"reason":"r"}` || s.got.Header.Get("Authorization") != "Bearer sst_secret" {
		t.Fatalf("erase %+v %v, sent %s", e, err, s.gotBody)
	}
	if _, err := c.EraseAgent(ctx, "a:1", ""); err != nil || s.gotBody != "" {
		t.Fatalf("erase without a reason sent %q: %v", s.gotBody, err)
	}
	es, err := c.Erasures(ctx)
	if err != nil || len(es) != 1 || es[0].Opening != nil || es[0].Identity == "" {
		t.Fatalf("erasures %+v %v", es, err)
	}
}
