package service

import (
	"errors"
	"strings"
	"testing"
)

// TestReadEventsTrailingData: whatever follows a JSON array of events,
// even a token cut short, is malformed input (a 400 over HTTP), never a
// failure to read (a 500).
func TestReadEventsTrailingData(t *testing.T) {
	for _, in := range []string{`[]"`, `[] "abc`, `[] {`, `[] 1`, `[]]`} {
		_, err := ReadEvents(strings.NewReader(in))
		var ie *InputError
		if !errors.As(err, &ie) || ie.Problem != InputMalformed {
			t.Errorf("%q: %v", in, err)
		}
	}
}
