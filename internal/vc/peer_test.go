package vc

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/internal/nodetest"
	"github.com/swarmscore/swarmscore/internal/service"
)

// PeerResult is tools/node/vc-verify.mjs's verdict on one credential.
type peerResult struct {
	Verified bool     `json:"verified"`
	Errors   []string `json:"errors"`
	Revoked  *bool    `json:"revoked"`
}

func peerVerify(t *testing.T, creds [][]byte, docs map[string]json.RawMessage) []peerResult {
	t.Helper()
	raw := make([]json.RawMessage, len(creds))
	for i, c := range creds {
		raw[i] = c
	}
	in, _ := json.Marshal(map[string]any{"credentials": raw, "documents": docs})
	var out []peerResult
	if err := json.Unmarshal(nodetest.Run(t, "vc-verify.mjs", in), &out); err != nil || len(out) != len(creds) {
		t.Fatalf("vc-verify.mjs: %v (%d results)", err, len(out))
	}
	return out
}

// TestPeerVerifies: Digital Bazaar's @digitalbazaar/vc with the
// eddsa-jcs-2022 cryptosuite verifies the credentials, reads their status
// from the status list credential (which it verifies too) and refuses
// tampered ones.
func TestPeerVerifies(t *testing.T) {
	k := testKey(t)
	// Digital Bazaar checks validFrom and validUntil against its clock.
	now := time.Now().UTC().Truncate(time.Second)
	doc := testPassport(t, k, now.Add(-time.Hour))
	cred, err := Credential(doc, k, testSite, 1, 41)
	if err != nil {
		t.Fatal(err)
	}
	revokedCred, err := Credential(doc, k, testSite, 1, 42)
	if err != nil {
		t.Fatal(err)
	}
	did, err := DIDDocument(testSite, []service.VerificationKey{{ID: k.ID(), Public: k.Public(), State: keyring.Active}})
	if err != nil {
		t.Fatal(err)
	}
	list, err := StatusListCredential(testSite, service.StatusList{List: 1, Revoked: []int64{42}, Key: k, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Replace(cred, []byte(`"value":760`), []byte(`"value":999`), 1)
	docs := map[string]json.RawMessage{testSite.DID(): did, testSite.StatusListURL(1): list}
	got := peerVerify(t, [][]byte{cred, revokedCred, tampered}, docs)
	if !got[0].Verified || got[0].Revoked == nil || *got[0].Revoked {
		t.Errorf("credential: %+v\n%s", got[0], cred)
	}
	if !got[1].Verified || got[1].Revoked == nil || !*got[1].Revoked {
		t.Errorf("revoked credential: %+v", got[1])
	}
	if got[2].Verified {
		t.Errorf("tampered credential verified: %+v", got[2])
	}
	// The key revoked: the DID document marks its method revoked and
	// leaves it out of assertionMethod, and nothing it signed verifies.
	did, err = DIDDocument(testSite, []service.VerificationKey{{ID: k.ID(), Public: k.Public(), State: keyring.Revoked,
		StateChangedAt: now}})
	if err != nil {
		t.Fatal(err)
	}
	docs[testSite.DID()] = did
	if got := peerVerify(t, [][]byte{cred}, docs); got[0].Verified {
		t.Errorf("a credential of a revoked key verified: %+v", got[0])
	}
}
