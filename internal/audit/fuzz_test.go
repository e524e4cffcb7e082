package audit_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"reflect"
	"regexp"
	"testing"

	"github.com/swarmscore/swarmscore/internal/audit"
	"github.com/swarmscore/swarmscore/internal/audit/audittest"
)

// seedBundles are the hold scenario's bundle (every kind of record, and
// escrow holds) in full and with everything withheld, and its openings.
func seedBundles(f *testing.F) (full, withheld, openings []byte) {
	_, src := audittest.HoldScenario(f)
	b, err := audit.Build(src)
	if err != nil {
		f.Fatal(err)
	}
	full = b.AppendJSON(nil)
	o, err := b.Withhold(audit.Categories, rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	return full, b.AppendJSON(nil), o.AppendJSON(nil)
}

// FuzzParse: Parse never panics, and what it accepts it writes back to a
// document it reads the same way; Verify never panics on it.
func FuzzParse(f *testing.F) {
	full, withheld, _ := seedBundles(f)
	f.Add(full)
	f.Add(withheld)
	f.Add([]byte(`{"type":"swarmscore-audit/v1"}`))
	f.Add([]byte(`{"a":"\ud800"}`))
	f.Add(bytes.Replace(full, []byte(`"records":[`), []byte(`"records":[{"hash":"00","content":{"x":1e3}},`), 1))
	// A summary record of pruned events, and one with an empty rows array.
	summary := `{"hash":"0000000000000000000000000000000000000000000000000000000000000000","content":{"agent_id":"a","anchor":"` +
		"0000000000000000000000000000000000000000000000000000000000000000" + `","at":"2026-11-24T00:00:00Z","pruned_through":1,` +
		`"rows":[{"count":1,"escrow_cents":0,"month":"2026-05","status":"VERIFIED","type":"conduit_session","voided":false}],"seq":2,"type":"summary"}},`
	f.Add(bytes.Replace(full, []byte(`"records":[`), []byte(`"records":[`+summary), 1))
	f.Add(bytes.Replace(full, []byte(`"records":[`), []byte(`"records":[{"hash":"00","content":{"rows":[]}},`), 1))
	keys := audittest.Keys(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := audit.Parse(data)
		if err != nil {
			if r := audit.VerifyDocument(data, keys); r.Valid || r.Discrepancy.Code != audit.CodeMalformed {
				t.Fatalf("unparseable input verified as %+v", r)
			}
			return
		}
		doc := b.AppendJSON(nil)
		back, err := audit.Parse(doc)
		if err != nil {
			t.Fatalf("re-reading what was written: %v\n%s", err, doc)
		}
		if !reflect.DeepEqual(b, back) {
			t.Fatalf("round trip differs:\n%+v\n%+v", b, back)
		}
		if again := back.AppendJSON(nil); !bytes.Equal(doc, again) {
			t.Fatal("writing is not stable")
		}
		audit.Verify(b, keys)
	})
}

// FuzzTamper changes one byte of a bundle that verifies: either the result
// no longer verifies, or it says exactly what the original said. In the
// bundle with everything withheld, what a record with withheld members
// discloses, and its stated hash, are not bound by the chain (the
// package's documented limit): there the two must agree on everything
// else.
func FuzzTamper(f *testing.F) {
	full, withheld, _ := seedBundles(f)
	for _, at := range []uint32{0, 100, 900, 2000, 4000, 6000, 8000} {
		f.Add(false, at, byte('1'))
		f.Add(true, at, byte('"'))
	}
	// Bytes of the holds and of the passports that priced them.
	for _, doc := range []struct {
		withheld bool
		b        []byte
	}{{false, full}, {true, withheld}} {
		if at := bytes.Index(doc.b, []byte(`"holds":[`)); at >= 0 {
			for _, d := range []int{40, 300, 700, 1500, 2600} {
				f.Add(doc.withheld, uint32(at+d), byte('7'))
			}
		}
	}
	// A hex letter of the passport's signature in upper case (ERRATA E11).
	if sig := bytes.Index(full, []byte(`"signature":"`)); sig >= 0 {
		if k := bytes.IndexAny(full[sig+13:sig+13+128], "abcdef"); k >= 0 {
			f.Add(false, uint32(sig+13+k), full[sig+13+k]-'a'+'A')
		}
	}
	keys := audittest.Keys(f)
	want := map[bool]*audit.Bundle{}
	f.Fuzz(func(t *testing.T, useWithheld bool, at uint32, v byte) {
		doc := full
		if useWithheld {
			doc = withheld
		}
		if want[useWithheld] == nil {
			want[useWithheld] = normalize(t, doc)
		}
		i := int(at % uint32(len(doc)))
		if doc[i] == v {
			return
		}
		mutated := bytes.Clone(doc)
		mutated[i] = v
		if r := audit.VerifyDocument(mutated, keys); r.Valid {
			if got := normalize(t, mutated); !reflect.DeepEqual(got, want[useWithheld]) {
				t.Fatalf("byte %d set to %q verifies but says something else", i, v)
			}
		}
	})
}

var hexSignature = regexp.MustCompile(`"signature":"[0-9A-Fa-f]+"`)

// normalize parses doc with the embedded documents compacted, and with
// everything but the seq of records that withhold members blanked out,
// and the passport's signature in lower case.
func normalize(t *testing.T, doc []byte) *audit.Bundle {
	b, err := audit.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	raws := []*[]byte{&b.Passport, &b.Checkpoint}
	for i := range b.HoldPassports {
		raws = append(raws, &b.HoldPassports[i])
	}
	for _, raw := range raws {
		var c bytes.Buffer
		if err := json.Compact(&c, *raw); err != nil {
			t.Fatal(err)
		}
		*raw = c.Bytes()
	}
	// ERRATA E11: a passport's signature is read in either case, and its
	// case is outside what it signs.
	b.Passport = hexSignature.ReplaceAllFunc(b.Passport, bytes.ToLower)
	for i := range b.HoldPassports {
		b.HoldPassports[i] = hexSignature.ReplaceAllFunc(b.HoldPassports[i], bytes.ToLower)
	}
	records := []*audit.Record{}
	for ci := range b.Chains {
		for k := range b.Chains[ci].Records {
			records = append(records, &b.Chains[ci].Records[k])
		}
	}
	// A hold's step that withholds members is taken as stated, like a
	// record.
	for i := range b.Holds {
		for k := range b.Holds[i].Steps {
			records = append(records, &b.Holds[i].Steps[k])
		}
	}
	for _, r := range records {
		if _, ok := r.Content.Canonical(); ok {
			continue
		}
		r.Hash = [32]byte{}
		for m := range r.Content {
			if r.Content[m].Name != "seq" {
				r.Content[m] = audit.Member{Name: r.Content[m].Name}
			}
		}
	}
	return b
}

// FuzzParseOpenings: never panics; what it accepts writes back the same.
func FuzzParseOpenings(f *testing.F) {
	_, _, openings := seedBundles(f)
	f.Add(openings)
	f.Add([]byte(`{"type":"swarmscore-audit-openings/v1","openings":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := audit.ParseOpenings(data)
		if err != nil {
			return
		}
		back, err := audit.ParseOpenings(o.AppendJSON(nil))
		if err != nil || !reflect.DeepEqual(o, back) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
