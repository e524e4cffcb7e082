// Package a2a speaks the Agent2Agent (A2A) protocol's discovery document,
// the agent card (A2A v1.0 JSON), for SwarmScore: the service's own card
// (a reputation-lookup skill, its interfaces and its authentication), and
// the SwarmScore passport extension, which any agent's card can carry to
// point at its SwarmScore certificate.
//
// The extension (docs/A2A-EXTENSION.md) is an entry of the card's
// capabilities.extensions:
//
//	{"uri": "https://swarmscore.dev/a2a/extensions/passport/v1",
//	 "description": "…", "required": false,
//	 "params": {"agent_id": "agent-7",
//	            "certificate_url": "https://scores.example.com/swarmscore/agent-7/certificate",
//	            "tier": "STANDARD",
//	            "keys_url": "https://scores.example.com/.well-known/swarmscore-keys.json"}}
//
// A client that knows the URI fetches the certificate, verifies it with
// the keys at keys_url (Ed25519 passports need no secret) and checks that
// it names agent_id; the tier is a hint, as of when the card was written.
package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/site"
)

// ExtensionURI identifies the SwarmScore passport extension. It is
// stable: a new, incompatible version of the params gets a new URI.
const ExtensionURI = "https://swarmscore.dev/a2a/extensions/passport/v1"

// ProtocolVersion is the A2A version the cards follow.
const ProtocolVersion = "1.0"

// MCPProtocolVersion is the MCP protocol version of the /mcp interface
// the card lists.
const MCPProtocolVersion = "2025-11-25"

// ExtensionParams are the extension's params.
type ExtensionParams struct {
	AgentID        string `json:"agent_id"`
	CertificateURL string `json:"certificate_url"`
	Tier           string `json:"tier"`
	KeysURL        string `json:"keys_url"`
}

// Extension is one entry of capabilities.extensions.
type Extension struct {
	URI         string          `json:"uri"`
	Description string          `json:"description,omitempty"`
	Required    bool            `json:"required,omitempty"`
	Params      json.RawMessage `json:"params,omitempty"`
}

const extensionDescription = "SwarmScore reputation: the agent's signed Execution Passport (score, tier, escrow modifier) " +
	"at certificate_url, verifiable with the Ed25519 keys at keys_url; tier is as of when the card was written."

// Card is the service's own agent card: one skill (reputation lookup), its
// MCP interface at /mcp, bearer-token authentication for the operator's
// tools (the lookups need none), and the documentation of its REST API.
func Card(s site.Site, version string) []byte {
	bearer := map[string]any{"httpAuthSecurityScheme": map[string]any{
		"scheme":      "Bearer",
		"description": "An operator's token (swarmscore token create), or an agent's own: needed for quote_escrow and for an unlisted agent's own data; the lookups are public.",
	}}
	card := map[string]any{
		"name":        "SwarmScore",
		"description": "Reputation of AI agents in marketplaces (SwarmScore V1, draft-stone-swarmscore-v1): an agent's 0-1000 score from its Conduit sessions and AP2 payments over 90 days, its trust tier, the escrow hold of a payment, and signed Execution Passports anyone can verify.",
		"version":     version,
		"supportedInterfaces": []map[string]any{{
			"url":             s.Path("/mcp"),
			"protocolBinding": "MCP",
			"protocolVersion": MCPProtocolVersion,
		}},
		"provider":         map[string]any{"organization": "SwarmScore", "url": s.URL()},
		"documentationUrl": s.Path("/openapi.json"),
		"capabilities": map[string]any{
			"streaming":         false,
			"pushNotifications": false,
			"extensions": []map[string]any{{
				"uri":         ExtensionURI,
				"description": "This service issues the passports the SwarmScore passport extension points to.",
				"required":    false,
			}},
		},
		"securitySchemes":      map[string]any{"bearer": bearer},
		"securityRequirements": []any{},
		"defaultInputModes":    []string{"application/json"},
		"defaultOutputModes":   []string{"application/json"},
		"skills": []map[string]any{{
			"id":   "reputation-lookup",
			"name": "Reputation lookup",
			"description": "Look up an agent's SwarmScore (score, tier, contributions and what it lacks for the next tier), its signed passport, " +
				"the escrow hold of a payment to it, or verify a passport someone presents. MCP tools: get_score, get_certificate, " +
				"verify_passport, quote_escrow, explain_score.",
			"tags":        []string{"reputation", "trust", "escrow", "swarmscore"},
			"examples":    []string{"What is the SwarmScore of agent atlas-research?", "Verify this Execution Passport.", "How much of a $1,000 payment to shadow-reseller is held in escrow?"},
			"inputModes":  []string{"application/json"},
			"outputModes": []string{"application/json"},
		}},
	}
	b, _ := json.Marshal(card) // maps of strings: cannot fail
	return b
}

// Annotate returns card (an A2A agent card, any version) with the
// passport extension for agentID, whose certificate is on the site s and
// whose tier is tier, in capabilities.extensions; an entry of the
// extension already there is replaced, every other member kept. The card
// is written back with two-space indentation. Errors: ErrInvalid for a
// card that is not a JSON object, or whose capabilities or extensions are
// of another JSON type.
func Annotate(card []byte, agentID string, s site.Site, tier string) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := strictObject(card, &doc); err != nil {
		return nil, fmt.Errorf("%w: the agent card is not a JSON object: %v", errkind.ErrInvalid, err)
	}
	caps := map[string]json.RawMessage{}
	if raw, ok := doc["capabilities"]; ok && string(raw) != "null" {
		if err := strictObject(raw, &caps); err != nil {
			return nil, fmt.Errorf("%w: the card's capabilities is not a JSON object", errkind.ErrInvalid)
		}
	}
	var exts []json.RawMessage
	if raw, ok := caps["extensions"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &exts); err != nil {
			return nil, fmt.Errorf("%w: the card's capabilities.extensions is not a JSON array", errkind.ErrInvalid)
		}
	}
	params, _ := json.Marshal(ExtensionParams{AgentID: agentID, CertificateURL: s.CertificateURL(agentID), Tier: tier, KeysURL: s.KeySetURL()})
	ext, _ := json.Marshal(Extension{URI: ExtensionURI, Description: extensionDescription, Params: params})
	kept := make([]json.RawMessage, 0, len(exts)+1)
	for _, e := range exts {
		var x Extension
		if json.Unmarshal(e, &x) == nil && x.URI == ExtensionURI {
			continue
		}
		kept = append(kept, e)
	}
	kept = append(kept, ext)
	caps["extensions"], _ = json.Marshal(kept)
	doc["capabilities"], _ = json.Marshal(caps)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errkind.ErrInvalid, err)
	}
	return append(out, '\n'), nil
}

// FindExtension returns the params of the passport extension in card.
// Errors: ErrInvalid for a card that is not a JSON object, ErrNotFound
// when it carries no such extension (or one without the four params).
func FindExtension(card []byte) (ExtensionParams, error) {
	var doc struct {
		Capabilities *struct {
			Extensions []Extension `json:"extensions"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(card, &doc); err != nil {
		return ExtensionParams{}, fmt.Errorf("%w: the agent card is not an A2A agent card: %v", errkind.ErrInvalid, err)
	}
	if doc.Capabilities != nil {
		for _, e := range doc.Capabilities.Extensions {
			if e.URI != ExtensionURI {
				continue
			}
			var p ExtensionParams
			if err := json.Unmarshal(e.Params, &p); err != nil || p.AgentID == "" || p.CertificateURL == "" || p.KeysURL == "" {
				return ExtensionParams{}, fmt.Errorf("%w: the card's %s extension lacks agent_id, certificate_url or keys_url", errkind.ErrInvalid, ExtensionURI)
			}
			return p, nil
		}
	}
	return ExtensionParams{}, fmt.Errorf("%w: the card carries no %s extension (add it with swarmscore agent-card annotate)", errkind.ErrNotFound, ExtensionURI)
}

// strictObject decodes a JSON object into v, refusing trailing data.
func strictObject(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the object")
	}
	return nil
}
