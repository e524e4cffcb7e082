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
// LSN until an LSN read after it settles it, then to that LSN; one of every
// agent holds every read; reads about several agents need the largest. An
// invalidation seen while an LSN is being read stays pending.
func TestReadGate(t *testing.T) {
	g := newReadGate()
	if g.required("a") != unknownLSN {
		t.Fatal("before the first subscription, a read needs nothing less than everything")
	}
	settle := func(at lsn) {
		gen, _ := g.mark()
		g.settle(gen, at)
	}
	settle(10)
	if g.required("a") != 10 || g.required("") != 10 {
		t.Fatalf("after settling every agent at 10: %v %v", g.required("a"), g.required(""))
	}
	if _, any := g.mark(); any {
		t.Fatal("something pending after a settle")
	}
	g.saw([]string{"a"}, false)
	if g.required("a") != unknownLSN || g.required("b") != 10 || g.required("") != unknownLSN {
		t.Fatalf("a pending: %v %v %v", g.required("a"), g.required("b"), g.required(""))
	}
	gen, _ := g.mark()
	// While the LSN is read, a is still pending; b and a again are seen.
	if g.required("a") != unknownLSN {
		t.Fatal("a is not pending while its LSN is read")
	}
	g.saw([]string{"b"}, false)
	g.settle(gen, 20)
	if g.required("a") != 20 || g.required("b") != unknownLSN {
		t.Fatalf("a settled at 20, b pending: %v %v", g.required("a"), g.required("b"))
	}
	gen, _ = g.mark()
	g.saw([]string{"a"}, false) // a again, after the read began
	g.settle(gen, 25)
	if g.required("a") != unknownLSN || g.required("b") != 25 {
		t.Fatalf("a seen again during the read, b settled: %v %v", g.required("a"), g.required("b"))
	}
	settle(30)
	g.forget(27)
	if g.required("a") != 30 || g.required("b") != 10 || g.required("") != 30 {
		t.Fatalf("after forgetting up to 27: %v %v %v", g.required("a"), g.required("b"), g.required(""))
	}
	g.saw(nil, true)
	if g.required("c") != unknownLSN {
		t.Fatal("every agent pending, c is not")
	}
	gen, _ = g.mark()
	g.saw(nil, true)
	g.settle(gen, 40)
	if g.required("c") != unknownLSN {
		t.Fatal("every agent seen again during the read: c is not pending")
	}
	settle(41)
	if g.required("c") != 41 {
		t.Fatalf("c after every agent settled at 41: %v", g.required("c"))
	}
}
