package site

import (
	"errors"
	"testing"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

func TestNew(t *testing.T) {
	for _, c := range []struct{ in, url, did string }{
		{"https://scores.example.com", "https://scores.example.com", "did:web:scores.example.com"},
		{"https://Scores.Example.com/", "https://scores.example.com", "did:web:scores.example.com"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080", "did:web:127.0.0.1%3A8080"},
		{"http://[::1]:8080", "http://[::1]:8080", "did:web:[%3A%3A1]%3A8080"},
	} {
		s, err := New(c.in)
		if err != nil || s.URL() != c.url || s.DID() != c.did {
			t.Errorf("New(%q) = %q %q, %v; want %q %q", c.in, s.URL(), s.DID(), err, c.url, c.did)
		}
	}
	for _, bad := range []string{"", "scores.example.com", "ftp://x", "https://", "https://u:p@x", "https://x/scores", "https://x?a=1", "https://x#f", "https://x:0", "https://x:99999", "https://x:port"} {
		if _, err := New(bad); !errors.Is(err, errkind.ErrInvalid) {
			t.Errorf("New(%q): %v, want ErrInvalid", bad, err)
		}
	}
	s := MustNew("https://scores.example.com")
	if got := s.CertificateURL("agent-7"); got != "https://scores.example.com/swarmscore/agent-7/certificate" {
		t.Error(got)
	}
	if got := s.StatusListURL(1); got != "https://scores.example.com/swarmscore/credentials/status/1" {
		t.Error(got)
	}
	if got := s.VerificationMethod("eddsa-1"); got != "did:web:scores.example.com#eddsa-1" {
		t.Error(got)
	}
}
