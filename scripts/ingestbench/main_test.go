package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestGenerate: the events are the same for the same arguments (runs are
// compared), new and final, within the window, over the agents asked for,
// and written as the ingest format's NDJSON.
func TestGenerate(t *testing.T) {
	asOf := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	evs := generate(300, 7, asOf)
	if !reflect.DeepEqual(evs, generate(300, 7, asOf)) {
		t.Fatal("generate is not deterministic")
	}
	agents := map[string]bool{}
	for _, e := range evs {
		agents[e.agent] = true
		if e.ended.After(asOf) || asOf.Sub(e.ended) > 89*24*time.Hour || e.started.After(e.ended) {
			t.Fatalf("event out of the window: %+v", e)
		}
	}
	if len(agents) != 7 {
		t.Errorf("%d agents, want 7", len(agents))
	}
	path := filepath.Join(t.TempDir(), "e.ndjson")
	if err := writeNDJSON(path, evs); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for ; sc.Scan(); n++ {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		e := evs[n]
		want := "conduit_session"
		agentKey, endKey := "agent_id", "completed_at"
		if e.ap2 {
			want, agentKey, endKey = "ap2_transaction", "provider_id", "settled_at"
		}
		if m["type"] != want || m["id"] != e.id || m[agentKey] != e.agent || m[endKey] != e.ended.Format(time.RFC3339) || m["status"] != e.status {
			t.Fatalf("line %d: %v for %+v", n+1, m, e)
		}
	}
	if n != len(evs) {
		t.Errorf("%d lines, want %d", n, len(evs))
	}
}
