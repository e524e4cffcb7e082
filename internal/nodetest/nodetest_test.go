package nodetest

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir is the module's tools/node, and Bin finds an installed package's
// executable there.
func TestBin(t *testing.T) {
	if _, err := os.Stat(filepath.Join(Dir(), "package.json")); err != nil {
		t.Fatal(err)
	}
	p := Bin(t, "spectral")
	if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("spectral at %s: %v", p, err)
	}
}
