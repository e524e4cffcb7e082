package postgres

import (
	"fmt"
	"sync"
	"testing"
)

func TestInvalidations(t *testing.T) {
	v := newInvalidations()
	m0 := v.Mark()
	if !v.Unchanged("a", m0) {
		t.Fatal("fresh table: a changed")
	}
	v.Agents([]string{"a", "b"})
	if v.Unchanged("a", m0) || v.Unchanged("b", m0) {
		t.Fatal("named agents unchanged")
	}
	// Others are unchanged unless they share a slot: with 4096 slots, two
	// named agents touch at most two.
	others := 0
	for i := range 1000 {
		if v.Unchanged(fmt.Sprint("other-", i), m0) {
			others++
		}
	}
	if others < 990 {
		t.Fatalf("%d of 1000 other agents unchanged", others)
	}
	m1 := v.Mark()
	if m1 <= m0 || !v.Unchanged("a", m1) {
		t.Fatal("a mark after the invalidation does not hold")
	}
	v.Agents(nil)
	if v.Mark() != m1 {
		t.Fatal("an empty invalidation moved the mark")
	}
	v.All()
	for _, id := range []string{"a", "b", "other-1"} {
		if v.Unchanged(id, m1) {
			t.Fatalf("All: %s unchanged", id)
		}
	}
	if m2 := v.Mark(); !v.Unchanged("a", m2) {
		t.Fatal("a mark after All does not hold")
	}
}

// TestInvalidationsConcurrent: whatever order concurrent invalidations
// finish in, a mark taken before one of them never holds after it returns.
func TestInvalidationsConcurrent(t *testing.T) {
	v := newInvalidations()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				id := fmt.Sprint("agent-", (i+g)%7)
				m := v.Mark()
				v.Agents([]string{id})
				if v.Unchanged(id, m) {
					t.Errorf("%s unchanged after its invalidation", id)
					return
				}
				if i%500 == 0 {
					m = v.Mark()
					v.All()
					if v.Unchanged(id, m) {
						t.Errorf("%s unchanged after All", id)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}
