// Package erc8004 turns a SwarmScore passport into an ERC-8004 ("Trustless
// Agents") Reputation Registry feedback record: the arguments of
// giveFeedback, and the ABI-encoded call when the agent's on-chain agentId
// is known, ready for a wallet to submit. Nothing here reaches a chain.
//
// The record follows the ERC's Reputation Registry:
//
//	function giveFeedback(uint256 agentId, int128 value, uint8 valueDecimals,
//	    string calldata tag1, string calldata tag2, string calldata endpoint,
//	    string calldata feedbackURI, bytes32 feedbackHash) external
//
// value is the score with valueDecimals 0, tag1 "swarmscore", tag2 the
// tier, feedbackURI the agent's certificate URL and feedbackHash the
// KECCAK-256 (Ethereum's keccak256, the original Keccak padding, not
// FIPS 202 SHA3-256) of the passport's bytes exactly as that URL serves
// them, so that anyone can fetch the certificate, hash it and compare.
package erc8004

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/big"

	"golang.org/x/crypto/sha3"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/passport"
)

// Function is giveFeedback's canonical signature, whose Keccak-256 gives
// the selector.
const Function = "giveFeedback(uint256,int128,uint8,string,string,string,string,bytes32)"

// Tag1 is the tag1 of every SwarmScore record: what the value measures.
const Tag1 = "swarmscore"

// Keccak256 is Ethereum's keccak256 of b (legacy Keccak-256).
func Keccak256(b []byte) [32]byte {
	h := sha3.NewLegacyKeccak256()
	h.Write(b)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// Selector is the first four bytes of the Keccak-256 of Function.
func Selector() [4]byte {
	h := Keccak256([]byte(Function))
	return [4]byte(h[:4])
}

// Hex renders b as 0x and lower-case hex, as Ethereum tools write bytes.
func Hex(b []byte) string { return "0x" + hex.EncodeToString(b) }

// maxUint256 bounds an agentId.
var maxUint256 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))

// ParseAgentID reads an ERC-8004 agentId (a uint256 in decimal, as the
// Identity Registry's tokenId). Errors: ErrInvalid naming what.
func ParseAgentID(what, s string) (*big.Int, error) {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok || s == "" || s[0] == '+' || s[0] == '-' || n.Sign() < 0 || n.Cmp(maxUint256) > 0 || (len(s) > 1 && s[0] == '0') {
		return nil, errkind.WithCode(fmt.Errorf("%w: %s %q is not an ERC-8004 agentId (a whole number from 0 to 2^256-1, in decimal, without leading zeros)",
			errkind.ErrInvalid, what, clip(s)), "invalid_erc8004_agent_id")
	}
	return n, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Feedback makes the record of the passport doc (its bytes as the
// certificate route serves them) whose certificate is at certificateURL;
// chainAgentID, when not nil, is the agent's ERC-8004 agentId, and the
// record then carries the encoded call. The passport is read, not
// verified: it is the server's own, as served. Errors: ErrInvalid for a
// document that is not a passport.
func Feedback(doc []byte, certificateURL string, chainAgentID *big.Int) (api.ERC8004Feedback, error) {
	p, err := passport.Parse(doc)
	if err != nil {
		return api.ERC8004Feedback{}, fmt.Errorf("%w: the certificate is not a passport: %v", errkind.ErrInvalid, err)
	}
	sum := Keccak256(doc)
	sel := Selector()
	f := api.ERC8004Feedback{
		AgentID:         p.AgentID,
		AgentPassportID: p.AgentPassportID,
		ComputedAt:      p.Issuer.ComputedAt,
		ExpiresAt:       p.ExpiresAt,
		Function:        Function,
		Selector:        Hex(sel[:]),
		Feedback: api.ERC8004Args{
			Value:         p.Score.Value,
			ValueDecimals: 0,
			Tag1:          Tag1,
			Tag2:          p.Score.Tier.String(),
			Endpoint:      "",
			FeedbackURI:   certificateURL,
			FeedbackHash:  Hex(sum[:]),
		},
	}
	if chainAgentID != nil {
		if chainAgentID.Sign() < 0 || chainAgentID.Cmp(maxUint256) > 0 {
			return api.ERC8004Feedback{}, fmt.Errorf("%w: agentId %s is out of the uint256 range", errkind.ErrInvalid, chainAgentID)
		}
		s := chainAgentID.String()
		f.Feedback.AgentID = &s
		f.Calldata = Hex(Calldata(chainAgentID, &f.Feedback, sum))
	}
	return f, nil
}

// Calldata ABI-encodes giveFeedback(agentId, a's value, valueDecimals,
// tag1, tag2, endpoint, feedbackURI, hash) with its selector, by the
// Solidity ABI's rules: eight head words (static values in place, the
// strings as offsets from the start of the arguments), then each string
// as its length and its bytes padded with zeros to a whole word. agentId
// must be in the uint256 range and a.Value and a.ValueDecimals in those
// of int128 and uint8.
func Calldata(agentID *big.Int, a *api.ERC8004Args, hash [32]byte) []byte {
	sel := Selector()
	strs := []string{a.Tag1, a.Tag2, a.Endpoint, a.FeedbackURI}
	const heads = 8
	out := append([]byte(nil), sel[:]...)
	out = append(out, uint256(agentID)...)
	out = append(out, int256(int64(a.Value))...)
	out = append(out, uint256(big.NewInt(int64(a.ValueDecimals)))...)
	offset := heads * 32
	var tail []byte
	for _, s := range strs {
		out = append(out, uint256(big.NewInt(int64(offset)))...)
		enc := encodeString(s)
		tail = append(tail, enc...)
		offset += len(enc)
	}
	out = append(out, hash[:]...)
	return append(out, tail...)
}

// uint256 is n as one big-endian 32-byte word.
func uint256(n *big.Int) []byte {
	var w [32]byte
	n.FillBytes(w[:])
	return w[:]
}

// int256 is n sign-extended to one 32-byte word (two's complement).
func int256(n int64) []byte {
	var w [32]byte
	if n < 0 {
		for i := range w {
			w[i] = 0xff
		}
	}
	binary.BigEndian.PutUint64(w[24:], uint64(n))
	return w[:]
}

// encodeString is a string's tail: its length word, then its bytes padded
// to a multiple of 32.
func encodeString(s string) []byte {
	out := uint256(big.NewInt(int64(len(s))))
	out = append(out, s...)
	if r := len(s) % 32; r != 0 {
		out = append(out, make([]byte, 32-r)...)
	}
	return out
}
