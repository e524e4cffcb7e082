package passport_test

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

func Example() {
	// The key is the literal bytes of the configured secret (32 or more).
	key, err := passport.NewKey([]byte("swarmscore-example-key-0123456789abcdef"))
	if err != nil {
		panic(err)
	}
	r, err := score.Compute(score.Counts{ConduitTotal: 80, ConduitSuccess: 76, AP2Total: 40, AP2Success: 38})
	if err != nil {
		panic(err)
	}
	computed := time.Date(2026, 3, 17, 14, 30, 0, 0, time.UTC)
	p, err := passport.New("agent-7", "swarmsync.ai", r, computed)
	if err != nil {
		panic(err)
	}
	doc, err := p.Sign(key)
	if err != nil {
		panic(err)
	}

	// A verifier holds a keyring: during a rotation, the old and the new key.
	v := passport.Verify(doc, []passport.Key{key}, computed.Add(24*time.Hour))
	fmt.Println(v.Passport.AgentID, v.Passport.Score.Value, v.Passport.Score.Tier, v.Passport.EscrowModifier)
	enc := json.NewEncoder(os.Stdout)
	_ = enc.Encode(v)

	// Eight days later it has expired.
	v = passport.Verify(doc, []passport.Key{key}, computed.Add(8*24*time.Hour))
	_ = enc.Encode(v)
	// Output:
	// agent-7 760 STANDARD 0.392
	// {"valid":true,"signature_valid":true,"score_valid":true,"expires_at":"2026-03-24T14:30:00Z","detected_tampering":false,"checks":{"signature":"ok","consistency":"ok","expiry":"ok"},"errors":[],"warnings":[]}
	// {"valid":false,"signature_valid":true,"score_valid":true,"expires_at":"2026-03-24T14:30:00Z","detected_tampering":false,"checks":{"signature":"ok","consistency":"ok","expiry":"expired"},"errors":[{"code":"expired","message":"expired at 2026-03-24T14:30:00Z; verified at 2026-03-25T14:30:00Z"}],"warnings":[]}
}

func ExampleNewKey() {
	key, _ := passport.NewKey([]byte("swarmscore-example-key-0123456789abcdef"))
	fmt.Printf("%v %s %#v\n", key, key, key)
	_, err := passport.NewKey([]byte("too short"))
	fmt.Println(err)
	// Output:
	// [REDACTED] [REDACTED] [REDACTED]
	// invalid passport: signing key is 9 bytes, need at least 32
}
