package a2a

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/site"
)

func testSite(t *testing.T) site.Site {
	t.Helper()
	s, err := site.New("https://scores.example.com")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCard: the service's card is a JSON object naming the protocol
// version and the MCP interface on the site.
func TestCard(t *testing.T) {
	var card map[string]any
	if err := json.Unmarshal(Card(testSite(t), "v1.2.3"), &card); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(card)
	for _, want := range []string{`"name":"SwarmScore"`, "https://scores.example.com/mcp", `"protocolVersion":"` + MCPProtocolVersion + `"`, `"version":"v1.2.3"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("card lacks %s: %s", want, raw)
		}
	}
}

// TestAnnotate: the extension is added once (replacing an earlier one),
// every other member and extension is kept, and FindExtension reads it
// back; cards of the wrong shape are refused.
func TestAnnotate(t *testing.T) {
	s := testSite(t)
	card := []byte(`{"name":"agent-7","x-other":{"a":1},"capabilities":{"streaming":true,"extensions":[{"uri":"urn:other"},{"uri":"` + ExtensionURI + `","params":{"agent_id":"old"}}]}}`)
	out, err := Annotate(card, "agent-7", s, "STANDARD")
	if err != nil {
		t.Fatal(err)
	}
	p, err := FindExtension(out)
	want := ExtensionParams{AgentID: "agent-7", CertificateURL: s.CertificateURL("agent-7"), Tier: "STANDARD", KeysURL: s.KeySetURL()}
	if err != nil || p != want {
		t.Fatalf("FindExtension = %+v, %v; want %+v", p, err, want)
	}
	if strings.Count(string(out), ExtensionURI) != 1 || !strings.Contains(string(out), "urn:other") ||
		!strings.Contains(string(out), `"streaming": true`) || !strings.Contains(string(out), `"x-other"`) {
		t.Errorf("annotated card:\n%s", out)
	}
	for _, bad := range []string{`[]`, `{"capabilities":3}`, `{"capabilities":{"extensions":{}}}`, `{} {}`} {
		if _, err := Annotate([]byte(bad), "a", s, "NONE"); errkind.Of(err) != errkind.Invalid {
			t.Errorf("Annotate(%s) = %v, want invalid", bad, err)
		}
	}
	if _, err := FindExtension([]byte(`{"name":"x"}`)); errkind.Of(err) != errkind.NotFound {
		t.Errorf("no extension: %v", err)
	}
	if _, err := FindExtension([]byte(`{"capabilities":{"extensions":[{"uri":"` + ExtensionURI + `","params":{"agent_id":"a"}}]}}`)); errkind.Of(err) != errkind.Invalid {
		t.Errorf("incomplete extension: %v", err)
	}
}
