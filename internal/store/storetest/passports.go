package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// testPassports: every passport issued with an id is kept in the history,
// the cache entry remembers its key, and StalePassports pages through the
// agents whose unexpired passport another key signed.
func testPassports(t *testing.T, h Harness) {
	s := h.Open(t)
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	for _, a := range []string{"a", "b", "c", "d"} {
		ingest(t, s, "op-a", conduit(a+"-c1", a, ledger.Verified, start, end))
	}
	issueWith := func(kid string) ledger.IssueFunc {
		return func(e *ledger.ScoreEntry) ([]byte, string, error) {
			e.PassportID, e.KeyID = fmt.Sprintf("p-%s-%s-%d", e.AgentID, kid, e.ComputedAt.Unix()), kid
			return []byte(`{"doc":"` + e.PassportID + `"}`), "sig-" + e.PassportID, nil
		}
	}
	for _, a := range []string{"a", "b", "c"} {
		if _, err := s.RefreshScore(ctx(t), a, base, issueWith("k1")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RefreshScore(ctx(t), "b", base.Add(time.Minute), issueWith("k2")); err != nil {
		t.Fatal(err)
	}
	refresh(t, s, "d", base) // no passport
	if e, ok := cached(t, s, "b", base.Add(time.Minute)); !ok || e.KeyID != "k2" {
		t.Errorf("cache entry of b: %+v", e)
	}
	p, err := s.Passport(ctx(t), fmt.Sprintf("p-a-k1-%d", base.Unix()))
	if err != nil || p.AgentID != "a" || p.KeyID != "k1" || !p.ComputedAt.Equal(base) || !p.ExpiresAt.Equal(base.Add(ledger.CacheLifetime)) ||
		string(p.Document) != `{"doc":"`+p.ID+`"}` || p.Signature != "sig-"+p.ID {
		t.Errorf("Passport = %+v, %v", p, err)
	}
	if _, err := s.Passport(ctx(t), "nope"); errkind.Of(err) != errkind.NotFound {
		t.Errorf("unknown passport: %v", err)
	}
	if list, err := s.Passports(ctx(t), "b"); err != nil || len(list) != 2 || list[0].KeyID != "k1" || list[1].KeyID != "k2" {
		t.Errorf("Passports(b) = %+v, %v", list, err)
	}
	page, err := s.StalePassports(ctx(t), "k2", base.Add(time.Hour), "", 1)
	if err != nil || len(page) != 1 || page[0] != "a" {
		t.Fatalf("first page %v %v", page, err)
	}
	page, err = s.StalePassports(ctx(t), "k2", base.Add(time.Hour), page[0], 10)
	if err != nil || len(page) != 1 || page[0] != "c" {
		t.Errorf("second page %v %v, want c (b is on k2, d has no passport)", page, err)
	}
	if page, _ := s.StalePassports(ctx(t), "k2", base.Add(8*24*time.Hour), "", 10); len(page) != 0 {
		t.Errorf("expired passports listed: %v", page)
	}
	if _, err := s.RecomputeAll(ctx(t), base.Add(2*time.Minute), false); err != nil {
		t.Fatal(err)
	}
	if page, _ := s.StalePassports(ctx(t), "k2", base.Add(time.Hour), "", 10); len(page) != 0 {
		t.Errorf("entries without passports listed after RecomputeAll: %v", page)
	}
	if list, _ := s.Passports(ctx(t), "b"); len(list) != 2 {
		t.Errorf("the history lost passports: %d", len(list))
	}
}
