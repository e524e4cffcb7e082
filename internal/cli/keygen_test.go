package cli

import (
	"regexp"
	"testing"
)

func TestKeygen(t *testing.T) {
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}\n$`)
	seen := map[string]bool{}
	for range 8 {
		r := run(t, nil, nil, "keygen")
		if r.code != ExitOK || r.stderr != "" || !hex64.MatchString(r.stdout) {
			t.Fatalf("%+v", r)
		}
		if seen[r.stdout] {
			t.Fatalf("keygen repeated a key: %s", r.stdout)
		}
		seen[r.stdout] = true
	}
	runCases(t, []cliCase{{name: "keygen-extra-arg", args: []string{"keygen", "32"}, code: ExitUsage}})
}
