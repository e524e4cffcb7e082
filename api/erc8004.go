package api

import "time"

// ERC8004Feedback is an agent's current passport as an ERC-8004 ("Trustless
// Agents") Reputation Registry feedback record, ready for a wallet to
// submit (GET /swarmscore/{agent_id}/erc8004, `swarmscore export erc8004`).
// Nothing is sent to a chain: the operator (or a client of the agent)
// submits it from its own wallet.
type ERC8004Feedback struct {
	// AgentID is SwarmScore's id of the agent; AgentPassportID, ComputedAt
	// and ExpiresAt name the passport the record was made from.
	AgentID         string    `json:"agent_id"`
	AgentPassportID string    `json:"agent_passport_id"`
	ComputedAt      time.Time `json:"computed_at"`
	ExpiresAt       time.Time `json:"expires_at"`
	// Function is the Reputation Registry's function (its canonical ABI
	// signature) and Selector its 4-byte selector, 0x and lower-case hex.
	Function string `json:"function"`
	Selector string `json:"selector"`
	// Feedback holds the function's arguments under the ERC's names.
	Feedback ERC8004Args `json:"feedback"`
	// Calldata is the ABI-encoded call (selector and arguments), 0x and
	// lower-case hex, when the agent's ERC-8004 agentId was given; absent
	// otherwise, since the call cannot be encoded without it.
	Calldata string `json:"calldata,omitempty"`
}

// ERC8004Args are giveFeedback's arguments, named as in ERC-8004.
type ERC8004Args struct {
	// AgentID is the agent's token id in the ERC-8004 Identity Registry
	// (uint256, in decimal), which only the caller knows: null unless
	// given with erc8004_agent_id.
	AgentID *string `json:"agentId"`
	// Value is the score (int128) with ValueDecimals 0.
	Value         int `json:"value"`
	ValueDecimals int `json:"valueDecimals"`
	// Tag1 is "swarmscore", Tag2 the tier (NONE, STANDARD, ELITE).
	Tag1 string `json:"tag1"`
	Tag2 string `json:"tag2"`
	// Endpoint is empty: the feedback is about the agent, not one of its
	// endpoints.
	Endpoint string `json:"endpoint"`
	// FeedbackURI is the agent's certificate URL; FeedbackHash the
	// Keccak-256 of the passport's bytes as that URL serves them (bytes32,
	// 0x and lower-case hex).
	FeedbackURI  string `json:"feedbackURI"`
	FeedbackHash string `json:"feedbackHash"`
}
