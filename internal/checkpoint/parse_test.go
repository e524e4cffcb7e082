package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

func TestParseRefuses(t *testing.T) {
	hs := string(marshal(t, signed(t, testHMAC(t))))
	ed := string(marshal(t, signed(t, testEd25519(t))))
	hsSig := hs[strings.Index(hs, `"signature":"`)+13 : strings.Index(hs, `"},"root"`)]
	edSig := ed[strings.Index(ed, `"signature":"`)+13 : strings.Index(ed, `"},"root"`)]
	root := hs[strings.Index(hs, `"root":"`)+8 : strings.Index(hs, `","time"`)]
	sub := func(doc, old, new string) string {
		t.Helper()
		if !strings.Contains(doc, old) {
			t.Fatalf("%q not in %s", old, doc)
		}
		return strings.Replace(doc, old, new, 1)
	}
	cases := []struct {
		name, doc, want string
	}{
		{"empty", "", "ends early"},
		{"array", "[]", "document is an array, not an object"},
		{"string", `"x"`, "document is a string"},
		{"truncated", hs[:len(hs)/2], "ends early"},
		{"malformed", sub(hs, `"agents":5,`, `"agents":5,,`), "malformed JSON"},
		{"trailing object", hs + " {}", "trailing data"},
		{"trailing junk", hs + "x", "trailing data"},
		{"not UTF-8", sub(hs, "SwarmScore", "Swarm\xffScore"), "not valid UTF-8"},
		{"too large", sub(hs, `"agents":5,`, `"agents":5,`+strings.Repeat(" ", MaxDocumentSize)), "more than"},
		{"unknown member", sub(hs, `"agents":5,`, `"agents":5,"extra":1,`), `unknown member "extra"`},
		{"unknown issuer member", sub(hs, `"alg":`, `"x":"y","alg":`), `unknown member "issuer.x"`},
		{"duplicate member", sub(hs, `"agents":5,`, `"agents":5,"agents":5,`), `duplicate member "agents"`},
		{"duplicate spelled with an escape", sub(hs, `"agents":5,`, `"agents":5,"\u0061gents":5,`), `duplicate member "agents"`},
		{"duplicate issuer member", sub(hs, `"alg":"HS256",`, `"alg":"HS256","alg":"HS256",`), `duplicate member "issuer.alg"`},
		{"missing root", sub(hs, `"root":"`+root+`",`, ""), `missing member "root"`},
		{"missing signature", sub(hs, `,"signature":"`+hsSig+`"`, ""), `missing member "issuer.signature"`},
		{"agents as string", sub(hs, `"agents":5`, `"agents":"5"`), "agents is a string, not an integer"},
		{"agents as fraction", sub(hs, `"agents":5`, `"agents":5.0`), "written as digits"},
		{"agents with exponent", sub(hs, `"agents":5`, `"agents":5e0`), "written as digits"},
		{"negative agents", sub(hs, `"agents":5`, `"agents":-5`), "written as digits"},
		{"agents above 2^53", sub(hs, `"agents":5`, `"agents":9007199254740992`), "above 2^53-1"},
		{"agents beyond int64", sub(hs, `"agents":5`, `"agents":99999999999999999999`), "above 2^53-1"},
		{"agents as object", sub(hs, `"agents":5`, `"agents":{"a":1}`), "agents is an object"},
		{"agents null", sub(hs, `"agents":5`, `"agents":null`), "agents is null"},
		{"checkpoint 0", sub(hs, `"checkpoint":17`, `"checkpoint":0`), "outside 1 to 2^53-1"},
		{"issuer array", sub(hs, `"issuer":{`, `"issuer":[],"x":{`), "issuer is an array, not an object"},
		{"issuer null", sub(hs, `"issuer":{`, `"issuer":null,"x":{`), "issuer is null"},
		{"kid as number", sub(hs, `"kid":"ckpt-hs-1"`, `"kid":1`), "issuer.kid is a number, not a string"},
		{"bad kid", sub(hs, `"kid":"ckpt-hs-1"`, `"kid":"ckpt hs"`), "issuer.kid"},
		{"unknown alg", sub(hs, `"alg":"HS256"`, `"alg":"none"`), `issuer.alg "none"`},
		{"uppercase root", sub(hs, root, strings.ToUpper(root)), "lowercase hex"},
		{"short root", sub(hs, root, root[2:]), "lowercase hex"},
		{"fractional time", sub(hs, `12:00:00Z`, `12:00:00.5Z`), "whole seconds"},
		{"offset time", sub(hs, `12:00:00Z`, `12:00:00+00:00`), "whole seconds"},
		{"lower-case z", sub(hs, `12:00:00Z`, `12:00:00z`), "whole seconds"},
		{"spaced time", sub(hs, `2026-05-01T12`, `2026-05-01 12`), "whole seconds"},
		{"impossible date", sub(hs, `2026-05-01`, `2026-02-30`), "whole seconds"},
		{"other type", sub(hs, Type, "swarmscore-checkpoint/v2"), `type "swarmscore-checkpoint/v2" is not`},
		{"passport type", sub(hs, `"type":"`+Type+`"`, `"type":1`), "type is a number"},
		{"bad environment", sub(hs, `"production"`, `"prod env"`), "environment"},
		{"control in platform", sub(hs, `"SwarmScore"`, `"Swarm\u0000Score"`), "control character"},
		{"lone surrogate in platform", sub(hs, `"SwarmScore"`, `"Swarm\ud800Score"`), "U+FFFD"},
		{"empty platform", sub(hs, `"SwarmScore"`, `""`), "issuer.platform must be 1 to"},
		{"uppercase HS256 signature", sub(hs, hsSig, strings.ToUpper(hsSig)), "lowercase hex"},
		{"short HS256 signature", sub(hs, hsSig, hsSig[2:]), "31 bytes, want 32"},
		{"HS256 signature in base64url", sub(hs, hsSig, edSig), "lowercase hex"},
		{"padded EdDSA signature", sub(ed, edSig, edSig+"=="), "unpadded base64url"},
		{"std base64 EdDSA signature", sub(ed, edSig, strings.NewReplacer("-", "+", "_", "/").Replace(edSig)+"+/"), "unpadded base64url"},
		{"short EdDSA signature", sub(ed, edSig, edSig[:84]), "63 bytes, want 64"},
		{"EdDSA signature in hex", sub(ed, edSig, hsSig+hsSig), "unpadded base64url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			if !errors.Is(err, errkind.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse: %v\nwant an invalid error containing %q", err, c.want)
			}
			var into struct{ C Checkpoint }
			if err := json.Unmarshal([]byte(`{"C":`+c.doc+`}`), &into); err == nil {
				t.Fatal("UnmarshalJSON accepted it")
			}
		})
	}
}

// TestParseAccepts: member order, whitespace and escapes do not matter, and
// what is read is the canonical document.
func TestParseAccepts(t *testing.T) {
	c := signed(t, testEd25519(t))
	canonical := marshal(t, c)
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, canonical, "", "\t"); err != nil {
		t.Fatal(err)
	}
	reordered := fmt.Sprintf(`{"type":%q,"issuer":{"signature":%q,"platform":"Swarm\u0053core","kid":"ckpt-ed-1","alg":"EdDSA"},`+
		`"time":"2026-05-01T12:00:00Z","root":%q,"environment":"production","checkpoint":17,"agents":5}`,
		Type, encodeSignature(nil, EdDSA, c.Issuer.Signature), c.Root)
	for _, doc := range [][]byte{canonical, pretty.Bytes(), []byte(" \n" + reordered + "\n ")} {
		got, err := Parse(doc)
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if again := marshal(t, got); !bytes.Equal(again, canonical) {
			t.Fatalf("%s\nreads as\n%s", doc, again)
		}
		var into struct{ C Checkpoint }
		if err := json.Unmarshal([]byte(`{"C":`+string(doc)+`}`), &into); err != nil || !bytes.Equal(marshal(t, into.C), canonical) {
			t.Fatalf("UnmarshalJSON: %v", err)
		}
	}
}

func TestProofJSON(t *testing.T) {
	tr, _ := NewTree(testLeaves(11))
	p, _ := tr.Prove(6)
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"leaf_index":6,"path":["%s","%s","%s","%s"],"tree_size":11}`, p.Path[0], p.Path[1], p.Path[2], p.Path[3])
	if string(b) != want {
		t.Fatalf("%s\nwant\n%s", b, want)
	}
	got, err := ParseProof(b)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(p) {
		t.Fatalf("ParseProof: %+v, %v", got, err)
	}
	var into struct{ P Proof }
	if err := json.Unmarshal([]byte(`{"P":`+string(b)+`}`), &into); err != nil || fmt.Sprint(into.P) != fmt.Sprint(p) {
		t.Fatalf("UnmarshalJSON: %+v, %v", into.P, err)
	}
	one, _ := NewTree(testLeaves(1))
	p1, _ := one.Prove(0)
	if b, err := json.Marshal(p1); err != nil || string(b) != `{"leaf_index":0,"path":[],"tree_size":1}` {
		t.Fatalf("proof in a tree of one: %s, %v", b, err)
	}

	h := p.Path[0].String()
	long := strings.TrimSuffix(strings.Repeat(`"`+h+`",`, MaxPathLen+1), ",")
	bad := map[string]string{
		`{"leaf_index":6,"path":[],"tree_size":6}`:                             "outside a tree of 6",
		`{"leaf_index":0,"path":[],"tree_size":0}`:                             "tree size 0",
		`{"leaf_index":0,"path":[],"tree_size":9007199254740992}`:              "above 2^53-1",
		`{"leaf_index":0,"path":[],"tree_size":1,"x":1}`:                       `unknown member "x"`,
		`{"leaf_index":0,"path":[],"path":[],"tree_size":1}`:                   `duplicate member "path"`,
		`{"leaf_index":0,"tree_size":1}`:                                       `missing member "path"`,
		`{"leaf_index":0,"path":"","tree_size":1}`:                             "path is a string, not an array",
		`{"leaf_index":0,"path":[1],"tree_size":2}`:                            "path is a number, not a string",
		`{"leaf_index":0,"path":["` + h[2:] + `"],"tree_size":2}`:              "path[0]",
		`{"leaf_index":0,"path":[["` + h + `"]],"tree_size":2}`:                "path is an array, not a string",
		`{"leaf_index":0,"path":[` + long + `],"tree_size":2}`:                 fmt.Sprintf("more than %d hashes", MaxPathLen),
		`{"leaf_index":0.5,"path":[],"tree_size":1}`:                           "written as digits",
		`{"leaf_index":0,"path":[],"tree_size":1} []`:                          "trailing data",
		`{"leaf_index":0,"path":["` + strings.ToUpper(h) + `"],"tree_size":2}`: "lowercase hex",
	}
	for doc, want := range bad {
		if _, err := ParseProof([]byte(doc)); !errors.Is(err, errkind.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseProof(%.80s): %v, want %q", doc, err, want)
		}
	}
	for _, p := range []Proof{{Index: 1, Size: 1}, {Index: 0, Size: 0}, {Index: -1, Size: 2}, {Index: 0, Size: 2, Path: make([]Hash, MaxPathLen+1)}} {
		if _, err := json.Marshal(p); err == nil {
			t.Errorf("Marshal(%+v) accepted", p)
		}
	}
}
