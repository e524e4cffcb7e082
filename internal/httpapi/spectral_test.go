package httpapi

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/swarmscore/swarmscore/internal/nodetest"
)

// TestSpectralLint: Stoplight's Spectral, with its OpenAPI ruleset
// (extends spectral:oas, tools/node/.spectral.yaml), finds nothing in the
// document: no error, warning, information or hint.
func TestSpectralLint(t *testing.T) {
	spectral := nodetest.Bin(t, "spectral")
	ruleset := filepath.Join(nodetest.Dir(), ".spectral.yaml")
	doc, err := filepath.Abs("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "results.json")
	cmd := exec.Command(spectral, "lint", "--ruleset", ruleset, "--format", "json", "--output", out, "--fail-severity", "hint", doc)
	msg, err := cmd.CombinedOutput()
	b, rerr := os.ReadFile(out)
	if rerr != nil {
		t.Fatalf("spectral wrote no results: %v %v\n%s", err, rerr, msg)
	}
	var results []struct {
		Code     string `json:"code"`
		Message  string `json:"message"`
		Path     []any  `json:"path"`
		Severity int    `json:"severity"`
	}
	if jerr := json.Unmarshal(b, &results); jerr != nil {
		t.Fatalf("spectral's results: %v\n%s\n%s", jerr, b, msg)
	}
	for _, r := range results {
		t.Errorf("spectral %s (severity %d) at %v: %s", r.Code, r.Severity, r.Path, r.Message)
	}
	if err != nil && len(results) == 0 {
		t.Fatalf("spectral failed: %v\n%s", err, msg)
	}
}
