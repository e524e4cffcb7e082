//go:build !e2eclock

package main

import "time"

// clock is the use cases' clock: nil, the system's. Only a binary built
// with the e2eclock tag, for the end-to-end tests of deadlines, has another
// (clock_e2e.go).
func clock() func() time.Time { return nil }
