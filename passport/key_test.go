package passport

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestNewKeyLength(t *testing.T) {
	t.Parallel()
	secret := []byte(strings.Repeat("Q", MinKeySize))
	if _, err := NewKey(secret); err != nil {
		t.Fatalf("a %d-byte key: %v", MinKeySize, err)
	}
	for _, n := range []int{0, 1, MinKeySize - 1} {
		_, err := NewKey(secret[:n])
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("a %d-byte key: err = %v, want ErrInvalid", n, err)
		}
		if n > 0 && err != nil && strings.Contains(err.Error(), string(secret[:n])) {
			t.Errorf("the error discloses the key: %v", err)
		}
	}
}

// The key is the literal bytes of the configured string: a key that looks
// like hex is not decoded, exactly as Node and Python use a string key.
func TestKeyIsLiteralBytes(t *testing.T) {
	t.Parallel()
	secret := strings.Repeat("ab", 32) // 64 "hex" characters
	k, err := NewKey([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte(`{"a":1}`)
	want := hmac.New(sha256.New, []byte(secret))
	want.Write(msg)
	if got := k.mac(nil, msg); !bytes.Equal(got, want.Sum(nil)) {
		t.Fatalf("mac = %x, want HMAC keyed with the literal string", got)
	}
	// Reusing pooled HMAC states must not carry data between messages.
	if got := k.mac(nil, msg); !bytes.Equal(got, want.Sum(nil)) {
		t.Fatalf("second mac = %x", got)
	}
}

func TestNewKeyCopies(t *testing.T) {
	t.Parallel()
	secret := []byte(testSecret)
	k, err := NewKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	before := k.mac(nil, []byte("m"))
	secret[0] ^= 0xff
	if after := k.mac(nil, []byte("m")); !bytes.Equal(before, after) {
		t.Fatal("changing the caller's slice changed the key")
	}
}

func TestKeyNeverPrints(t *testing.T) {
	t.Parallel()
	k := testKey(t)
	leaks := []string{testSecret, hex.EncodeToString([]byte(testSecret)), strings.ToUpper(hex.EncodeToString([]byte(testSecret))), testSecret[:16]}
	holder := struct {
		Name string
		Key  Key
	}{"signer", k}
	// fmt cannot call methods through an unexported field; the secret sits
	// behind a pointer so that it still prints as an address only.
	hidden := struct{ key Key }{k}
	var outputs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v"} {
		outputs = append(outputs, fmt.Sprintf(verb, k), fmt.Sprintf(verb, holder), fmt.Sprintf(verb, &holder), fmt.Sprintf(verb, hidden))
	}
	outputs = append(outputs, fmt.Sprint(k), fmt.Sprintln([]Key{k}), k.String(), k.GoString())
	for _, v := range []any{k, holder, []Key{k}, map[string]Key{"k": k}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		outputs = append(outputs, string(b))
	}
	var logged bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logged, nil))
	log.Info("signing", "key", k, "holder", holder)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("signing", "key", k)
	outputs = append(outputs, logged.String())

	for _, out := range outputs {
		for _, leak := range leaks {
			if strings.Contains(out, leak) {
				t.Fatalf("output %q contains key material", out)
			}
		}
	}
	if got := fmt.Sprintf("%v", k); got != "[REDACTED]" {
		t.Errorf("%%v = %q, want [REDACTED]", got)
	}
	if !strings.Contains(logged.String(), `"key":"[REDACTED]"`) {
		t.Errorf("slog output %q does not show the key as [REDACTED]", logged.String())
	}
}

func TestSignMessage(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(nil)
	k, err := NewEd25519Key(priv)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("a Data Integrity proof's hash data")
	sig, err := k.SignMessage(msg)
	if err != nil || !ed25519.Verify(priv.Public().(ed25519.PublicKey), msg, sig) {
		t.Fatalf("SignMessage: %x, %v", sig, err)
	}
	pub, _ := NewEd25519PublicKey(priv.Public().(ed25519.PublicKey))
	hk, _ := NewKey([]byte("0123456789abcdef0123456789abcdef"))
	for name, k := range map[string]Key{"public": pub, "hmac": hk, "zero": {}} {
		if _, err := k.SignMessage(msg); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s key: SignMessage error %v, want ErrInvalid", name, err)
		}
	}
}
