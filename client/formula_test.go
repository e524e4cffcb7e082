package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
	"github.com/swarmscore/swarmscore/score/scoretest"
)

// VerifyOffline accepts the formula versions of WithFormulas.
func TestVerifyOfflineFormulas(t *testing.T) {
	k, j := edKey(t, 1, "eddsa-one")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		json.NewEncoder(w).Encode(passport.JWKSet{Keys: []passport.JWK{j}})
	}))
	defer srv.Close()
	at := time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)
	v1 := signed(t, k, at)
	acc, err := passport.Transition(scoretest.V11Test, at.Add(-91*24*time.Hour), score.V1)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := New(srv.URL)
	withAcc, _ := New(srv.URL, WithFormulas(acc))
	if v, err := plain.VerifyOffline(context.Background(), v1, at); err != nil || !v.Valid {
		t.Fatalf("default: %+v %v", v, err)
	}
	v, err := withAcc.VerifyOffline(context.Background(), v1, at)
	if err != nil || v.Valid || len(v.Errors) != 1 || v.Errors[0].Code != passport.CodeFormulaOutOfWindow {
		t.Fatalf("V1 after its 90 days: %+v %v", v, err)
	}
}
