package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/sqlite"
	"github.com/swarmscore/swarmscore/passport"
)

// session connects a go-sdk client, in memory, to the server acting for
// the public over a SQLite ledger with one agent of score 760.
func session(t *testing.T) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "mcp.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	key, _ := passport.NewKey([]byte("mcp-test-signing-key-0123456789abcdef"))
	u := service.New(st, service.Config{Key: key, Platform: "mcp-test"})
	end := time.Now().UTC().Add(-24 * time.Hour).Truncate(time.Second)
	var evs []ledger.Event
	for i := range 80 {
		s := ledger.Verified
		if i >= 76 {
			s = ledger.Failed
		}
		evs = append(evs, ledger.Event{Type: ledger.ConduitSession, ID: fmt.Sprint("c", i), AgentID: "agent-1", Status: s, StartedAt: end, EndedAt: end})
	}
	for i := range 40 {
		s := ledger.Settled
		if i >= 38 {
			s = ledger.Disputed
		}
		evs = append(evs, ledger.Event{Type: ledger.AP2Transaction, ID: fmt.Sprint("t", i), AgentID: "agent-1", BuyerID: "b", Status: s, EscrowAmountCents: 1000, StartedAt: end, EndedAt: end})
	}
	if _, err := u.Ingest.Ingest(ctx, "op", evs); err != nil {
		t.Fatal(err)
	}
	ct, stt := sdk.NewInMemoryTransports()
	if _, err := NewServer(ServicesOf(u), service.Caller{}, Options{Version: "test"}).Connect(ctx, stt, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestTools: the five tools are listed; get_score answers the ledger's
// score as structured content; a public caller's quote_escrow and an
// unknown agent are tool errors carrying a problem; the formula resource
// reads.
func TestTools(t *testing.T) {
	cs := session(t)
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "explain_score,get_certificate,get_score,quote_escrow,verify_passport" {
		t.Errorf("tools %s", got)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_score", Arguments: map[string]any{"agent_id": "agent-1"}})
	if err != nil || res.IsError {
		t.Fatalf("get_score: %+v %v", res, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var sc struct {
		Score int    `json:"score"`
		Tier  string `json:"tier"`
	}
	if err := json.Unmarshal(raw, &sc); err != nil || sc.Score != 760 || sc.Tier != "STANDARD" {
		t.Errorf("get_score content %s (%v)", raw, err)
	}
	for _, call := range []*sdk.CallToolParams{
		{Name: "get_score", Arguments: map[string]any{"agent_id": "nobody"}},
		{Name: "quote_escrow", Arguments: map[string]any{"agent_id": "agent-1", "amount_cents": 100}},
	} {
		res, err := cs.CallTool(ctx, call)
		if err != nil || !res.IsError || len(res.Content) == 0 {
			t.Errorf("%s %v: %+v %v, want a tool error", call.Name, call.Arguments, res, err)
			continue
		}
		if txt, ok := res.Content[0].(*sdk.TextContent); !ok || !strings.Contains(txt.Text, `"type"`) {
			t.Errorf("%s: the error carries no problem: %+v", call.Name, res.Content[0])
		}
	}
	r, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: FormulaURI})
	if err != nil || len(r.Contents) != 1 || !strings.Contains(r.Contents[0].Text, "ELITE") {
		t.Errorf("formula resource: %+v %v", r, err)
	}
}
