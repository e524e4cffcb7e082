// Package vc serves SwarmScore passports as W3C Verifiable Credentials
// (VC Data Model 2.0) secured with Data Integrity proofs of the
// eddsa-jcs-2022 cryptosuite (W3C vc-di-eddsa), the deployment's did:web
// DID document listing its Ed25519 keys, and revocation through W3C
// Bitstring Status Lists.
//
// A credential is a function of the passport, the key that signed it, the
// site and the passport's status index, with no clock or randomness:
// validFrom and the proof's created are the passport's computed_at,
// validUntil its expires_at, the id urn:uuid: and its agent_passport_id,
// and Ed25519 signatures are deterministic. The same passport therefore
// gives the same bytes from the HTTP route and the CLI, and the
// credentialSubject is the passport itself, member for member (its own
// signature included, so that it can still be checked as a passport).
//
// Documents are written in their JCS (RFC 8785) canonical form: the bytes
// the proof's hash covers, less the proof.
package vc

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/site"
	"github.com/swarmscore/swarmscore/passport"
)

// The vocabulary this package writes.
const (
	// ContextV2 is the VC Data Model 2.0 context, the credentials' only
	// one: their other terms fall under its @vocab (issuer-dependent).
	ContextV2 = "https://www.w3.org/ns/credentials/v2"
	// ContextDID and ContextMultikey are the DID document's contexts.
	ContextDID      = "https://www.w3.org/ns/did/v1"
	ContextMultikey = "https://w3id.org/security/multikey/v1"
	// CredentialType is the credentials' own type, after
	// VerifiableCredential.
	CredentialType = "SwarmScoreCredential"
	// Cryptosuite is the Data Integrity cryptosuite of every proof.
	Cryptosuite = "eddsa-jcs-2022"
	// MediaType is the credentials' media type (VC 2.0 §6.3).
	MediaType = "application/vc+ld+json"
)

// Credential is the W3C Verifiable Credential of a signed passport doc
// (its bytes as the certificate route serves them), signed by key (the
// Ed25519 key that signed the passport, with its private half), whose
// entry is index in status list list. Errors: ErrInvalid for a document
// that is not a passport or a key that cannot sign with Ed25519 or has no
// id.
func Credential(doc []byte, key passport.Key, s site.Site, list, index int64) ([]byte, error) {
	p, err := passport.Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: the certificate is not a passport: %v", errkind.ErrInvalid, err)
	}
	statusURL := s.StatusListURL(list)
	pos := strconv.FormatInt(index, 10)
	cred := map[string]any{
		"@context":          []string{ContextV2},
		"id":                "urn:uuid:" + p.AgentPassportID,
		"type":              []string{"VerifiableCredential", CredentialType},
		"issuer":            s.DID(),
		"validFrom":         stamp(p.Issuer.ComputedAt),
		"validUntil":        stamp(p.ExpiresAt),
		"credentialSubject": json.RawMessage(doc),
		"credentialStatus": map[string]any{
			"id":                   statusURL + "#" + pos,
			"type":                 "BitstringStatusListEntry",
			"statusPurpose":        "revocation",
			"statusListIndex":      pos,
			"statusListCredential": statusURL,
		},
	}
	return secure(cred, key, s, p.Issuer.ComputedAt)
}

func stamp(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// secure adds an eddsa-jcs-2022 proof made by key at created to doc and
// returns the document in its canonical form (vc-di-eddsa §3.3: the hash
// of the proof configuration, with the document's @context, then the hash
// of the document, both JCS, signed with Ed25519).
func secure(doc map[string]any, key passport.Key, s site.Site, created time.Time) ([]byte, error) {
	if key.Alg() != passport.AlgEdDSA || !key.CanSign() || key.ID() == "" {
		return nil, fmt.Errorf("%w: a credential is signed with an Ed25519 private key that has an id", errkind.ErrInvalid)
	}
	proof := map[string]any{
		"type":               "DataIntegrityProof",
		"cryptosuite":        Cryptosuite,
		"created":            stamp(created),
		"verificationMethod": s.VerificationMethod(key.ID()),
		"proofPurpose":       "assertionMethod",
	}
	// The proof carries the document's @context, as the proof
	// configuration does (vc-di-eddsa §3.3.5): a verifier that hashes the
	// proof options as they are and one that sets @context from the
	// document then hash the same bytes.
	if c, ok := doc["@context"]; ok {
		proof["@context"] = c
	}
	hash, err := hashData(doc, proof)
	if err != nil {
		return nil, err
	}
	sig, err := key.SignMessage(hash)
	if err != nil {
		return nil, err
	}
	proof["proofValue"] = "z" + base58(sig)
	doc["proof"] = proof
	return canonical(doc)
}

// hashData is SHA-256(JCS(proof options without proofValue, with the
// document's @context when they have none)) ||
// SHA-256(JCS(document without its proof)).
func hashData(doc, proof map[string]any) ([]byte, error) {
	cfg := make(map[string]any, len(proof)+1)
	for k, v := range proof {
		if k != "proofValue" {
			cfg[k] = v
		}
	}
	if _, ok := cfg["@context"]; !ok {
		if c, ok := doc["@context"]; ok {
			cfg["@context"] = c
		}
	}
	unsecured := make(map[string]any, len(doc))
	for k, v := range doc {
		if k != "proof" {
			unsecured[k] = v
		}
	}
	a, err := canonical(cfg)
	if err != nil {
		return nil, err
	}
	b, err := canonical(unsecured)
	if err != nil {
		return nil, err
	}
	ha, hb := sha256.Sum256(a), sha256.Sum256(b)
	return append(ha[:], hb[:]...), nil
}

// canonical is v's JCS (RFC 8785) form.
func canonical(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}

// MaxSize bounds a credential Verify reads.
const MaxSize = 256 << 10

// Verify checks the eddsa-jcs-2022 proof of a secured document against
// the public key pub: the proof is the document's single proof, of this
// cryptosuite, and its signature covers the document as it is. It checks
// the proof only (not validity dates, status or the issuer's DID). Errors:
// ErrInvalid saying why.
func Verify(doc []byte, pub ed25519.PublicKey) error {
	if len(doc) > MaxSize {
		return fmt.Errorf("%w: the document is %d bytes, the limit is %d", errkind.ErrInvalid, len(doc), MaxSize)
	}
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("%w: the document is not a JSON object: %v", errkind.ErrInvalid, err)
	}
	proof, ok := m["proof"].(map[string]any)
	if !ok {
		return fmt.Errorf("%w: the document has no proof object", errkind.ErrInvalid)
	}
	if proof["type"] != "DataIntegrityProof" || proof["cryptosuite"] != Cryptosuite {
		return fmt.Errorf("%w: the proof is not a DataIntegrityProof of %s", errkind.ErrInvalid, Cryptosuite)
	}
	pv, _ := proof["proofValue"].(string)
	sig, ok := unbase58(strings.TrimPrefix(pv, "z"))
	if !strings.HasPrefix(pv, "z") || !ok || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("%w: proofValue is not a base58btc Ed25519 signature", errkind.ErrInvalid)
	}
	if p, ok := proof["@context"]; ok && !jsonEqual(p, m["@context"]) {
		// vc-di-eddsa §3.3.2 allows a document whose @context extends
		// the proof's; SwarmScore's are always equal.
		return fmt.Errorf("%w: the proof's @context is not the document's", errkind.ErrInvalid)
	}
	hash, err := hashData(m, proof)
	if err != nil {
		return fmt.Errorf("%w: %v", errkind.ErrInvalid, err)
	}
	if !ed25519.Verify(pub, hash, sig) {
		return fmt.Errorf("%w: the proof's signature does not match the document", errkind.ErrInvalid)
	}
	return nil
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return errors.Join(err1, err2) == nil && string(x) == string(y)
}

// Multikey is an Ed25519 public key as a Multikey publicKeyMultibase:
// "z", then base58btc of the multicodec prefix ed25519-pub (0xed 0x01) and
// the key's 32 bytes.
func Multikey(pub ed25519.PublicKey) string {
	return "z" + base58(append([]byte{0xed, 0x01}, pub...))
}
