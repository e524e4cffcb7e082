package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// testCredentials: a passport's credential gets one status index, the
// same on every call, the next one for the next passport; the revoked
// ones in a range are those whose passport was revoked by an erasure or
// whose key is named revoked.
func testCredentials(t *testing.T, h Harness) {
	s := h.Open(t)
	start, end := base.Add(-2*time.Hour), base.Add(-time.Hour)
	issueWith := func(kid string) ledger.IssueFunc {
		return func(e *ledger.ScoreEntry) ([]byte, string, error) {
			e.PassportID, e.KeyID = fmt.Sprintf("p-%s-%s", e.AgentID, kid), kid
			return []byte(`{"doc":"` + e.PassportID + `"}`), "sig-" + e.PassportID, nil
		}
	}
	for _, a := range []string{"a", "b", victim} {
		ingest(t, s, "op-a", conduit(a+"-c1", a, ledger.Verified, start, end))
	}
	if _, _, err := s.RevokedCredentials(ctx(t), 1, 100, nil); err != nil {
		t.Fatalf("an empty list: %v", err)
	}
	for _, p := range []struct{ agent, kid string }{{"a", "k1"}, {"b", "k2"}, {victim, "k1"}} {
		if _, err := s.RefreshScore(ctx(t), p.agent, base, issueWith(p.kid)); err != nil {
			t.Fatal(err)
		}
	}
	index := func(id string) int64 {
		t.Helper()
		i, err := s.CredentialIndex(ctx(t), id)
		if err != nil {
			t.Fatalf("CredentialIndex(%s): %v", id, err)
		}
		return i
	}
	ia, ib, iv := index("p-a-k1"), index("p-b-k2"), index("p-"+victim+"-k1")
	if ia < 1 || ib != ia+1 || iv != ib+1 || index("p-a-k1") != ia || index("p-b-k2") != ib {
		t.Fatalf("indexes %d %d %d: want consecutive from 1, stable", ia, ib, iv)
	}
	if _, err := s.CredentialIndex(ctx(t), "p-nope"); errkind.Of(err) != errkind.NotFound {
		t.Errorf("an unknown passport: %v", err)
	}
	revoked := func(from, to int64, keys ...string) []int64 {
		t.Helper()
		r, highest, err := s.RevokedCredentials(ctx(t), from, to, keys)
		if err != nil || highest != iv {
			t.Fatalf("RevokedCredentials: highest %d, %v", highest, err)
		}
		return r
	}
	if r := revoked(1, 100); len(r) != 0 {
		t.Errorf("nothing revoked yet: %v", r)
	}
	if r := revoked(1, 100, "k2", "k9"); !slices.Equal(r, []int64{ib}) {
		t.Errorf("key k2 revoked: %v, want [%d]", r, ib)
	}
	if _, err := s.Erase(ctx(t), ledger.ErasureRequest{AgentID: victim, Pseudonym: "erased-1", Identity: identity, ID: "era-1", By: "op-a", At: base.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if r := revoked(1, 100, "k2"); !slices.Equal(r, []int64{ib, iv}) {
		t.Errorf("after the erasure: %v, want [%d %d]", r, ib, iv)
	}
	if r := revoked(iv, iv+1); !slices.Equal(r, []int64{iv}) {
		t.Errorf("the range [%d,%d): %v", iv, iv+1, r)
	}
	if r := revoked(1, iv, "k2"); !slices.Equal(r, []int64{ib}) {
		t.Errorf("the range [1,%d): %v", iv, r)
	}
}
