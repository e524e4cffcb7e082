package errkind

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestOf(t *testing.T) {
	own := Sentinel(ErrInvalid, "invalid widget")
	cases := []struct {
		err  error
		want Kind
	}{
		{nil, Unknown},
		{errors.New("boom"), Unknown},
		{fmt.Errorf("%w: agent %q", ErrNotFound, "a"), NotFound},
		{fmt.Errorf("ingest: %w", fmt.Errorf("%w: id reused", ErrConflict)), Conflict},
		{fmt.Errorf("%w: bad", ErrInvalid), Invalid},
		{own, Invalid},
		{fmt.Errorf("%w: no such widget", Sentinel(ErrNotFound, "widget")), NotFound},
		{fmt.Errorf("%w: bad size", own), Invalid},
		{ErrUnauthorized, Unauthorized},
		{ErrForbidden, Forbidden},
		{fmt.Errorf("db: %w", ErrUnavailable), Unavailable},
		// A wait for the database that ran out of time, as pgxpool's
		// Acquire and database/sql return it.
		{fmt.Errorf("postgres: acquire: %w", context.DeadlineExceeded), Unavailable},
		{context.DeadlineExceeded, Unavailable},
		// Someone gave up: not the database's fault.
		{fmt.Errorf("sqlite: query: %w", context.Canceled), Unknown},
		// The store's kind wins over the deadline it also carries.
		{fmt.Errorf("%w: %w", ErrNotFound, context.DeadlineExceeded), NotFound},
	}
	for _, c := range cases {
		if got := Of(c.err); got != c.want {
			t.Errorf("Of(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	seen := map[string]bool{}
	for i, k := range Kinds() {
		if k != Kind(i) {
			t.Errorf("Kinds()[%d] = %v", i, k)
		}
		if seen[k.String()] {
			t.Errorf("duplicate name %q", k)
		}
		seen[k.String()] = true
	}
	if next := Kind(len(Kinds())); next.String() != Unknown.String() {
		t.Errorf("kind %d (%v) is missing from Kinds", next, next)
	}
}

// TestSentinel: a package's own sentinel keeps its message and identity,
// and has errkind's kind.
func TestSentinel(t *testing.T) {
	a, b := Sentinel(ErrInvalid, "invalid widget"), Sentinel(ErrInvalid, "invalid widget")
	err := fmt.Errorf("%w: size 0", a)
	switch {
	case a.Error() != "invalid widget" || err.Error() != "invalid widget: size 0":
		t.Errorf("messages %q, %q", a, err)
	case !errors.Is(err, a) || !errors.Is(err, ErrInvalid) || errors.Is(err, b) || errors.Is(err, ErrNotFound):
		t.Errorf("errors.Is: %v matches the wrong sentinels", err)
	case errors.Is(ErrInvalid, a):
		t.Error("errkind's sentinel matches the package's")
	}
}

func TestPublicDetail(t *testing.T) {
	inner := fmt.Errorf("postgres: cache stamp: %w", fmt.Errorf("%w: agent %q", ErrNotFound, "ghost"))
	err := fmt.Errorf("certificate: %w", WithPublic(inner, `agent "ghost" is unknown`))
	if d, ok := PublicDetail(err); !ok || d != `agent "ghost" is unknown` {
		t.Fatalf("PublicDetail = %q, %v", d, ok)
	}
	if Of(err) != NotFound || err.Error() != "certificate: "+inner.Error() {
		t.Fatalf("WithPublic changed the error: %v (%v)", err, Of(err))
	}
	if _, ok := PublicDetail(inner); ok {
		t.Fatal("a plain error has a public detail")
	}
	if WithPublic(nil, "x") != nil {
		t.Fatal("WithPublic(nil) is not nil")
	}
}

func TestCode(t *testing.T) {
	base := fmt.Errorf("%w: agent_id %q", ErrInvalid, "..")
	coded := WithCode(base, "invalid_id")
	if Of(coded) != Invalid || coded.Error() != base.Error() || !errors.Is(coded, ErrInvalid) {
		t.Fatalf("WithCode changed the error: %v", coded)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{base, ""},
		{coded, "invalid_id"},
		{fmt.Errorf("ingest: %w", coded), "invalid_id"},
		{WithPublic(coded, "bad id"), "invalid_id"},
		{WithCode(coded, "outer"), "outer"},
		{errors.Join(base, fmt.Errorf("x: %w", coded)), "invalid_id"},
		{typedCode{}, "typed"},
		{fmt.Errorf("w: %w", typedCode{}), "typed"},
	} {
		if got := Code(c.err); got != c.want {
			t.Errorf("Code(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if WithCode(nil, "x") != nil {
		t.Error("WithCode(nil) is not nil")
	}
}

type typedCode struct{}

func (typedCode) Error() string     { return "typed" }
func (typedCode) ErrorCode() string { return "typed" }
