package erc8004

import (
	"encoding/hex"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/passport"
	"github.com/swarmscore/swarmscore/score"
)

// Published Keccak-256 values: the Keccak team's ShortMsgKAT_256 for the
// empty message, the well-known "abc", and two identifiers every Ethereum
// tool agrees on (the ERC-20 transfer selector and the ERC-721/ERC-20
// Transfer event topic). The empty message's SHA3-256 (FIPS 202) differs:
// a87ff… would mean the wrong padding.
func TestKeccakVectors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"},
		{"abc", "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"},
		{"Transfer(address,address,uint256)", "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"},
		{"The quick brown fox jumps over the lazy dog", "4d741b6f1eb29cb2a9b9911c82f56fa8d73b04959d3d9d222895df6c0b28aa15"},
	} {
		got := Keccak256([]byte(c.in))
		if hex.EncodeToString(got[:]) != c.want {
			t.Errorf("Keccak256(%q) = %x, want %s", c.in, got, c.want)
		}
	}
	if sel := Keccak256([]byte("transfer(address,uint256)")); hex.EncodeToString(sel[:4]) != "a9059cbb" {
		t.Errorf("transfer selector %x, want a9059cbb", sel[:4])
	}
}

func testPassport(t *testing.T) []byte {
	t.Helper()
	r, err := score.Compute(score.Counts{ConduitTotal: 120, ConduitSuccess: 118, AP2Total: 60, AP2Success: 59})
	if err != nil {
		t.Fatal(err)
	}
	p, err := passport.New("agent-7", "swarmscore", r, time.Date(2026, 11, 28, 11, 16, 2, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	p.AgentPassportID = "c8e0a5d1-c2ae-435e-9f74-2619d7edb4aa"
	k, _ := passport.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	doc, err := p.Sign(k)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestFeedback(t *testing.T) {
	doc := testPassport(t)
	url := "https://scores.example.com/swarmscore/agent-7/certificate"
	f, err := Feedback(doc, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := Keccak256(doc)
	a := f.Feedback
	if a.Value != 983 || a.ValueDecimals != 0 || a.Tag1 != "swarmscore" || a.Tag2 != "ELITE" || a.Endpoint != "" ||
		a.FeedbackURI != url || a.FeedbackHash != "0x"+hex.EncodeToString(sum[:]) || a.AgentID != nil || f.Calldata != "" {
		t.Fatalf("feedback %+v", f)
	}
	if f.AgentID != "agent-7" || f.AgentPassportID != "c8e0a5d1-c2ae-435e-9f74-2619d7edb4aa" || f.Function != Function {
		t.Fatalf("record %+v", f)
	}
	fn := Keccak256([]byte(Function))
	if f.Selector != "0x"+hex.EncodeToString(fn[:4]) || len(f.Selector) != 10 {
		t.Fatalf("selector %s", f.Selector)
	}
	if _, err := Feedback([]byte(`{"not":"a passport"}`), url, nil); !errors.Is(err, errkind.ErrInvalid) {
		t.Fatalf("not a passport: %v", err)
	}
}

// TestCalldataLayout decodes the call by the ABI's rules, independently of
// how Calldata builds it: the selector, eight head words, and each string
// found through its offset.
func TestCalldataLayout(t *testing.T) {
	doc := testPassport(t)
	id, _ := new(big.Int).SetString("115792089237316195423570985008687907853269984665640564039457584007913129639935", 10) // 2^256-1
	f, err := Feedback(doc, "https://scores.example.com/swarmscore/agent-7/certificate", id)
	if err != nil {
		t.Fatal(err)
	}
	if f.Feedback.AgentID == nil || *f.Feedback.AgentID != id.String() {
		t.Fatalf("agentId %v", f.Feedback.AgentID)
	}
	b, err := hex.DecodeString(strings.TrimPrefix(f.Calldata, "0x"))
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(b[:4]) != strings.TrimPrefix(f.Selector, "0x") {
		t.Fatalf("selector %x", b[:4])
	}
	args := b[4:]
	word := func(i int) []byte { return args[32*i : 32*i+32] }
	if new(big.Int).SetBytes(word(0)).Cmp(id) != 0 {
		t.Errorf("agentId word %x", word(0))
	}
	if new(big.Int).SetBytes(word(1)).Int64() != 983 || new(big.Int).SetBytes(word(2)).Int64() != 0 {
		t.Errorf("value %x decimals %x", word(1), word(2))
	}
	str := func(head int) string {
		off := int(new(big.Int).SetBytes(word(head)).Int64())
		n := int(new(big.Int).SetBytes(args[off : off+32]).Int64())
		pad := args[off+32+n : off+32+(n+31)/32*32]
		for _, c := range pad {
			if c != 0 {
				t.Errorf("string at %d: nonzero padding", head)
			}
		}
		return string(args[off+32 : off+32+n])
	}
	if got := []string{str(3), str(4), str(5), str(6)}; strings.Join(got, "|") != "swarmscore|ELITE||https://scores.example.com/swarmscore/agent-7/certificate" {
		t.Errorf("strings %q", got)
	}
	if "0x"+hex.EncodeToString(word(7)) != f.Feedback.FeedbackHash {
		t.Errorf("hash word %x", word(7))
	}
	if len(args)%32 != 0 {
		t.Errorf("calldata of %d bytes after the selector", len(args))
	}
	// Negative values sign-extend (int128 in a 256-bit word).
	if w := int256(-32); hex.EncodeToString(w) != strings.Repeat("ff", 31)+"e0" {
		t.Errorf("int256(-32) = %x", w)
	}
}

func TestParseAgentID(t *testing.T) {
	for _, ok := range []string{"0", "22", "115792089237316195423570985008687907853269984665640564039457584007913129639935"} {
		if _, err := ParseAgentID("erc8004_agent_id", ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-1", "+1", "01", "1e3", "0x16", "22 ", "115792089237316195423570985008687907853269984665640564039457584007913129639936"} {
		_, err := ParseAgentID("erc8004_agent_id", bad)
		if !errors.Is(err, errkind.ErrInvalid) || errkind.Code(err) != "invalid_erc8004_agent_id" {
			t.Errorf("%q: %v (code %q)", bad, err, errkind.Code(err))
		}
	}
}
