package postgres

import "testing"

func TestParseLSN(t *testing.T) {
	for in, want := range map[string]lsn{"": 0, "0/0": 0, "16/B374D848": 0x16_B374D848, "FFFFFFFF/FFFFFFFF": 1<<64 - 1} {
		got, err := parseLSN(in)
		if err != nil || got != want {
			t.Errorf("parseLSN(%q) = %v, %v; want %v", in, got, err, want)
		}
		if in != "" && got.String() != in {
			t.Errorf("%q printed back as %q", in, got.String())
		}
	}
	for _, bad := range []string{"16", "x/1", "1/", "1/100000000"} {
		if _, err := parseLSN(bad); err == nil {
			t.Errorf("parseLSN(%q) accepted", bad)
		}
	}
}

// TestReadGate: an invalidation holds reads about its agent to an unknown
// LSN until it is settled, then to the LSN it was settled with; one of
// every agent holds every read; reads about several agents need the
// largest.
func TestReadGate(t *testing.T) {
	g := newReadGate()
	if g.required("a") != unknownLSN {
		t.Fatal("before the first subscription, a read needs nothing less than everything")
	}
	settle := func(at lsn) {
		agents, all := g.take()
		g.settle(agents, all, at)
	}
	settle(10)
	if g.required("a") != 10 || g.required("") != 10 {
		t.Fatalf("after settling every agent at 10: %v %v", g.required("a"), g.required(""))
	}
	g.saw([]string{"a"}, false)
	if g.required("a") != unknownLSN || g.required("b") != 10 || g.required("") != unknownLSN {
		t.Fatalf("a pending: %v %v %v", g.required("a"), g.required("b"), g.required(""))
	}
	agents, all := g.take()
	g.saw([]string{"b"}, false) // seen after the LSN query was sent
	g.settle(agents, all, 20)
	if g.required("a") != 20 || g.required("b") != unknownLSN {
		t.Fatalf("a settled at 20, b pending: %v %v", g.required("a"), g.required("b"))
	}
	agents, all = g.take()
	g.untake(agents, all) // the LSN query failed
	if g.required("b") != unknownLSN {
		t.Fatal("an invalidation given back is not pending")
	}
	settle(30)
	g.forget(25)
	if g.required("a") != 10 || g.required("b") != 30 || g.required("") != 30 {
		t.Fatalf("after forgetting up to 25: %v %v %v", g.required("a"), g.required("b"), g.required(""))
	}
	g.saw(nil, true)
	if g.required("c") != unknownLSN {
		t.Fatal("every agent pending, c is not")
	}
}
