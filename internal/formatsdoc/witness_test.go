package formatsdoc

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/swarmscore/swarmscore/internal/witness"
	"github.com/swarmscore/swarmscore/internal/witness/witnesstest"
)

// The witnessing example's names, keys and time. The keys' seeds are the
// SHA-256 of a label, so anyone can remake them.
const (
	exampleLogOrigin   = "example.com/swarmscore"
	exampleWitnessName = "witness.example/w1"
	exampleLogLabel    = "swarmscore example log key"
	exampleWitLabel    = "swarmscore example witness key"
	exampleCosignTime  = 1764288000 // 2025-11-28T00:00:00Z
)

// exampleWitness returns the add-checkpoint request for a log of 7 leaves
// ("leaf 0" … "leaf 6") whose witness cosigned its size 4, and the
// cosignature of that checkpoint, made by hand from the spec and checked
// with internal/witness's verifier and transparency-dev/formats'.
func exampleWitness(t *testing.T) (request, cosignature string) {
	t.Helper()
	logSeed := sha256.Sum256([]byte(exampleLogLabel))
	skey, vkey, err := note.GenerateKey(bytes.NewReader(logSeed[:]), exampleLogOrigin)
	if err != nil {
		t.Fatal(err)
	}
	log := witnesstest.NewLogWithKey(t, exampleLogOrigin, skey, vkey)
	for i := range 7 {
		log.Append(fmt.Sprintf("leaf %d", i))
	}
	signed, err := log.Note(7)
	if err != nil {
		t.Fatal(err)
	}
	proof, err := log.ConsistencyProof(context.Background(), 4, 7)
	if err != nil {
		t.Fatal(err)
	}
	var req strings.Builder
	req.WriteString("old 4\n")
	for _, h := range proof {
		req.WriteString(base64.StdEncoding.EncodeToString(h) + "\n")
	}
	req.WriteString("\n")
	req.Write(signed)

	witSeed := sha256.Sum256([]byte(exampleWitLabel))
	priv := ed25519.NewKeyFromSeed(witSeed[:])
	pub := priv.Public().(ed25519.PublicKey)
	typed := append([]byte{0x04}, pub...)
	idHash := sha256.Sum256(append([]byte(exampleWitnessName+"\n"), typed...))
	keyID := idHash[:4]
	wvkey := fmt.Sprintf("%s+%x+%s", exampleWitnessName, keyID, base64.StdEncoding.EncodeToString(typed))
	text := string(signed[:bytes.LastIndex(signed, []byte("\n\n"))+1])
	msg := fmt.Sprintf("cosignature/v1\ntime %d\n%s", exampleCosignTime, text)
	sig := ed25519.Sign(priv, []byte(msg))
	raw := append(append(append([]byte{}, keyID...), binary.BigEndian.AppendUint64(nil, exampleCosignTime)...), sig...)
	line := "— " + exampleWitnessName + " " + base64.StdEncoding.EncodeToString(raw)

	ours, err := witness.NewCosignatureVerifier(wvkey)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := fnote.NewVerifierForCosignatureV1(wvkey)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []note.Verifier{ours, theirs} {
		if _, err := note.Open(append(append([]byte{}, signed...), line+"\n"...), note.VerifierList(v)); err != nil {
			t.Fatalf("the example cosignature does not verify: %v", err)
		}
	}

	cosignature = fmt.Sprintf(`witness key seed:   SHA-256(%q)
                    %x
public key:         %x
key id:             SHA-256(%q ‖ 0x0a ‖ 0x04 ‖ public key)[:4] = %x
vkey (for --key):   %s

signed message, at time %d:
%s
Ed25519 signature:  %x

signature line: "— " name " " base64(key id ‖ time, 8 bytes big-endian ‖ signature)
%s`, exampleWitLabel, witSeed[:], []byte(pub), exampleWitnessName, keyID, wvkey,
		exampleCosignTime, msg, sig, line)
	return strings.TrimSuffix(req.String(), "\n"), cosignature
}
