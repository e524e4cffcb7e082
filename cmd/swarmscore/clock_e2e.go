//go:build e2eclock

package main

import (
	"os"
	"strings"
	"time"
)

// clock, in a binary built with the e2eclock tag for internal/e2e only,
// runs the use cases' clock ahead of the system's by the Go duration held in
// the file SWARMSCORE_E2E_CLOCK names, read on every call, so that a test
// can move a running server's clock past a deadline (§11.3's 7 and 21
// days). A missing or unreadable file means no offset. Released binaries
// are built without the tag and have no such file (clock.go).
func clock() func() time.Time {
	path := os.Getenv("SWARMSCORE_E2E_CLOCK")
	if path == "" {
		return nil
	}
	return func() time.Time {
		b, err := os.ReadFile(path)
		if err != nil {
			return time.Now()
		}
		d, err := time.ParseDuration(strings.TrimSpace(string(b)))
		if err != nil {
			return time.Now()
		}
		return time.Now().Add(d)
	}
}
