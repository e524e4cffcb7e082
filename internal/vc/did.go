package vc

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/keyring"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/site"
)

// DIDDocument is the deployment's did:web document, served at
// /.well-known/did.json: every Ed25519 key of the key history as a
// Multikey verification method, oldest first. A revoked key carries its
// revocation time (revoked, W3C Controlled Identifiers) and, like a
// retired one, is left out of assertionMethod, so that nothing it signs
// verifies as the deployment's assertion; the credentials it signed are
// revoked in the status list too.
func DIDDocument(s site.Site, keys []service.VerificationKey) ([]byte, error) {
	did := s.DID()
	methods := make([]map[string]any, 0, len(keys))
	assert := make([]string, 0, len(keys))
	for _, k := range keys {
		m := map[string]any{
			"id":                 s.VerificationMethod(k.ID),
			"type":               "Multikey",
			"controller":         did,
			"publicKeyMultibase": Multikey(k.Public),
		}
		switch k.State {
		case keyring.Revoked:
			m["revoked"] = stamp(k.StateChangedAt)
		case keyring.Active, keyring.VerifyOnly:
			assert = append(assert, s.VerificationMethod(k.ID))
		}
		methods = append(methods, m)
	}
	return canonical(map[string]any{
		"@context":           []string{ContextDID, ContextMultikey},
		"id":                 did,
		"verificationMethod": methods,
		"assertionMethod":    assert,
	})
}

// StatusListCredential is status list l as a BitstringStatusListCredential
// (W3C Bitstring Status List v1.0) whose statusPurpose is revocation,
// valid from l.Now and signed by the active key: its encodedList is the
// GZIP-compressed bitstring of service.StatusListSize entries, entry 0 the
// most significant bit of the first byte, in Multibase base64url ("u",
// no padding). Errors: ErrInvalid for a revoked index out of the list or a
// key that cannot sign with Ed25519.
func StatusListCredential(s site.Site, l service.StatusList) ([]byte, error) {
	bits := make([]byte, service.StatusListSize/8)
	for _, i := range l.Revoked {
		if i < 0 || i >= service.StatusListSize {
			return nil, fmt.Errorf("%w: status index %d is outside the list", errkind.ErrInvalid, i)
		}
		bits[i/8] |= 0x80 >> (i % 8)
	}
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	w.Write(bits)
	w.Close()
	url := s.StatusListURL(l.List)
	doc := map[string]any{
		"@context":  []string{ContextV2},
		"id":        url,
		"type":      []string{"VerifiableCredential", "BitstringStatusListCredential"},
		"issuer":    s.DID(),
		"validFrom": stamp(l.Now),
		"credentialSubject": map[string]any{
			"id":            url + "#list",
			"type":          "BitstringStatusList",
			"statusPurpose": "revocation",
			"encodedList":   "u" + base64.RawURLEncoding.EncodeToString(z.Bytes()),
		},
	}
	return secure(doc, l.Key, s, l.Now)
}

// Revoked reads the entries set in a status list credential's
// encodedList, for tests and tools: the indexes, increasing. Errors:
// ErrInvalid for a document that is not a status list credential.
func Revoked(encodedList string) ([]int64, error) {
	if len(encodedList) < 1 || encodedList[0] != 'u' {
		return nil, fmt.Errorf("%w: encodedList is not Multibase base64url", errkind.ErrInvalid)
	}
	z, err := base64.RawURLEncoding.DecodeString(encodedList[1:])
	if err != nil {
		return nil, fmt.Errorf("%w: encodedList: %v", errkind.ErrInvalid, err)
	}
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, fmt.Errorf("%w: encodedList is not GZIP: %v", errkind.ErrInvalid, err)
	}
	bits, err := io.ReadAll(io.LimitReader(r, service.StatusListSize/8+1))
	if err != nil || len(bits) > service.StatusListSize/8 {
		return nil, fmt.Errorf("%w: encodedList does not decompress to a list of at most %d entries", errkind.ErrInvalid, service.StatusListSize)
	}
	var out []int64
	for i, b := range bits {
		for j := range 8 {
			if b&(0x80>>j) != 0 {
				out = append(out, int64(i*8+j))
			}
		}
	}
	return out, nil
}
