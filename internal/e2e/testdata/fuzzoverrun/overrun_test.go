// Package fuzzoverrun holds a fuzz target for TestCIFuzzStep: with
// SWARMSCORE_FUZZ_HANG set, its setup never returns, so the fuzzing engine
// never starts and its -fuzztime never ends the run.
package fuzzoverrun

import (
	"os"
	"testing"
	"time"
)

func FuzzOverrun(f *testing.F) {
	if os.Getenv("SWARMSCORE_FUZZ_HANG") != "" {
		time.Sleep(time.Hour)
	}
	f.Add([]byte("x"))
	f.Fuzz(func(t *testing.T, b []byte) {})
}
