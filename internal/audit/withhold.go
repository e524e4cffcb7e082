package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/jcsstr"
)

// A withheld value is replaced by a salted commitment,
//
//	hex(SHA-256("swarmscore-audit-withheld/v1" ‖ 0x00 ‖ category ‖ 0x00 ‖ salt ‖ value))
//
// with a random 16-byte salt per category and value, drawn afresh for each
// export. The salt keeps ids that could be guessed (buyer-1, buyer-2…) from
// being found by trying them; one salt per value makes a value's
// commitments equal within a bundle, so that the rules that compare
// values (an event keeps its buyer and operator) still run; a fresh salt
// per export keeps two bundles from being linked by them. The opening
// (category, salt, value) lets its holder — the exporter, who may hand it
// to an arbiter, or the party it names — check that the commitment is to
// that value.

// SaltSize is the length of a commitment's salt.
const SaltSize = 16

// commitmentHexLen is the length of a commitment: SHA-256 in hex.
const commitmentHexLen = 2 * sha256.Size

const commitDomain = "swarmscore-audit-withheld/v1"

// Commit returns the commitment to value of category c under salt.
func Commit(c Category, salt [SaltSize]byte, value string) string {
	h := sha256.New()
	h.Write([]byte(commitDomain))
	h.Write([]byte{0})
	h.Write([]byte(c))
	h.Write([]byte{0})
	h.Write(salt[:])
	h.Write([]byte(value))
	return hex.EncodeToString(h.Sum(nil))
}

// Opening is what opens one commitment.
type Opening struct {
	Category Category
	Salt     [SaltSize]byte
	Value    string
}

// Openings are openings by commitment.
type Openings map[string]Opening

// Withhold replaces every identifier of the categories cats in b (which
// must hold no withheld value yet) by its commitment, drawing salts from
// random (crypto/rand.Reader outside tests), and returns the openings. The
// audited agent's id is never withheld. A chain whose agent is withheld
// loses its checkpoint proof: the leaf names the agent, and the proof's
// position in the tree would hint at it. Errors: the random source's, and
// errkind.ErrInvalid for an unknown category or a bundle already
// withholding.
func (b *Bundle) Withhold(cats []Category, random io.Reader) (Openings, error) {
	for _, c := range cats {
		if !slices.Contains(Categories, c) {
			return nil, fmt.Errorf("%w: withhold: unknown category %q", errkind.ErrInvalid, c)
		}
	}
	if len(b.Withheld) > 0 {
		return nil, fmt.Errorf("%w: withhold: the bundle already withholds %s", errkind.ErrInvalid, categoriesText(b.Withheld))
	}
	w := &withholder{cats: cats, random: random, salts: map[Opening]string{}, open: Openings{}}
	commit := func(name string, v Value) (Value, error) {
		c := category(name, v, b.AgentID)
		if c == "" || v.Withheld || v.S == "" || !slices.Contains(cats, c) {
			return v, nil
		}
		return w.commit(c, v.S)
	}
	var err error
	for ci := range b.Chains {
		ch := &b.Chains[ci]
		if ch.AgentID, err = commit("agent_id", ch.AgentID); err != nil {
			return nil, err
		}
		if ch.AgentID.Withheld {
			ch.Proof = nil
		}
		for k := range ch.Records {
			content := ch.Records[k].Content
			for m := range content {
				if content[m].IsInt {
					continue
				}
				if content[m].Str, err = commit(content[m].Name, content[m].Str); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, rec := range b.holdSteps() {
		for m := range rec.Content {
			if !rec.Content[m].IsInt {
				if rec.Content[m].Str, err = commit(rec.Content[m].Name, rec.Content[m].Str); err != nil {
					return nil, err
				}
			}
		}
	}
	for i := range b.Events {
		e := &b.Events[i]
		if e.MovedFrom, err = commit("from_agent", e.MovedFrom); err != nil {
			return nil, err
		}
		if e.MovedTo, err = commit("to_agent", e.MovedTo); err != nil {
			return nil, err
		}
	}
	// An erasure's digests are unsalted hashes of the sealed records'
	// contents in clear: beside a record whose other members are
	// disclosed, they would let a guess of a withheld value be checked.
	// Verify then takes sealed records' hashes as stated.
	if len(cats) > 0 {
		b.Sealings = nil
	}
	b.Withheld = slices.Clone(cats)
	slices.Sort(b.Withheld)
	b.Withheld = slices.Compact(b.Withheld)
	return w.open, nil
}

// holdSteps lists every step of every hold.
func (b *Bundle) holdSteps() []*Record {
	var out []*Record
	for i := range b.Holds {
		for k := range b.Holds[i].Steps {
			out = append(out, &b.Holds[i].Steps[k])
		}
	}
	return out
}

type withholder struct {
	cats   []Category
	random io.Reader
	// salts are the commitments made so far, by category and value (the
	// Opening without its salt).
	salts map[Opening]string
	open  Openings
}

func (w *withholder) commit(c Category, value string) (Value, error) {
	key := Opening{Category: c, Value: value}
	if s, ok := w.salts[key]; ok {
		return Value{S: s, Withheld: true}, nil
	}
	o := key
	if _, err := io.ReadFull(w.random, o.Salt[:]); err != nil {
		return Value{}, fmt.Errorf("withhold: drawing a salt: %w", err)
	}
	s := Commit(c, o.Salt, value)
	w.salts[key], w.open[s] = s, o
	return Value{S: s, Withheld: true}, nil
}

// Open replaces every withheld value of b that an opening in o opens by
// the value, so that Verify checks what it discloses as if it had never
// been withheld: complete records are linked again. An opening that does
// not open its commitment, or whose category is not the member's, is an
// error (errkind.ErrInvalid): a false opening must not pass for a true
// one. Commitments without an opening stay withheld; openings of
// commitments b does not hold are ignored. It returns how many values it
// opened.
func (b *Bundle) Open(o Openings) (int, error) {
	n := 0
	open := func(name string, v *Value) error {
		if !v.Withheld {
			return nil
		}
		op, ok := o[v.S]
		if !ok {
			return nil
		}
		if Commit(op.Category, op.Salt, op.Value) != v.S {
			return fmt.Errorf("%w: the opening of %s… does not open it", errkind.ErrInvalid, v.S[:12])
		}
		if want := category(name, Clear(op.Value), b.AgentID); want != op.Category {
			return fmt.Errorf("%w: the opening of %s… is of category %s, but it stands for a member of category %q", errkind.ErrInvalid, v.S[:12], op.Category, want)
		}
		*v = Clear(op.Value)
		n++
		return nil
	}
	for ci := range b.Chains {
		ch := &b.Chains[ci]
		if err := open("agent_id", &ch.AgentID); err != nil {
			return n, err
		}
		for k := range ch.Records {
			content := ch.Records[k].Content
			for m := range content {
				if !content[m].IsInt {
					if err := open(content[m].Name, &content[m].Str); err != nil {
						return n, err
					}
				}
			}
		}
	}
	for _, rec := range b.holdSteps() {
		for m := range rec.Content {
			if !rec.Content[m].IsInt {
				if err := open(rec.Content[m].Name, &rec.Content[m].Str); err != nil {
					return n, err
				}
			}
		}
	}
	for i := range b.Events {
		if err := open("from_agent", &b.Events[i].MovedFrom); err != nil {
			return n, err
		}
		if err := open("to_agent", &b.Events[i].MovedTo); err != nil {
			return n, err
		}
	}
	return n, nil
}

// OpeningsType is the openings document's "type".
const OpeningsType = "swarmscore-audit-openings/v1"

// AppendJSON appends the openings document, one opening a line, by
// commitment:
//
//	{"type":"swarmscore-audit-openings/v1","openings":[
//	{"commitment":"<64 hex>","category":"buyers","salt":"<32 hex>","value":"buyer-1"},
//	…]}
func (o Openings) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":"`+OpeningsType+`","openings":[`...)
	for i, c := range slices.Sorted(maps.Keys(o)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		op := o[c]
		dst = append(dst, "\n"+`{"commitment":"`...)
		dst = append(dst, c...)
		dst = append(dst, `","category":"`...)
		dst = append(dst, op.Category...)
		dst = append(dst, `","salt":"`...)
		dst = hex.AppendEncode(dst, op.Salt[:])
		dst = append(dst, `","value":`...)
		dst = jcsstr.Append(dst, op.Value)
		dst = append(dst, '}')
	}
	return append(dst, "]}\n"...)
}

// ParseOpenings reads an openings document as strictly as Parse reads a
// bundle; each commitment must be the one its opening gives. Errors match
// errkind.ErrInvalid.
func ParseOpenings(data []byte) (Openings, error) {
	if len(data) > MaxBundleSize {
		return nil, &ParseError{Reason: "the openings document is too large"}
	}
	s := &scanner{data: data}
	o := Openings{}
	var typ string
	err := s.members("openings document", []string{"type", "openings"}, nil, func(name string) error {
		if name == "type" {
			var err error
			typ, err = s.str("type")
			return err
		}
		return s.array("openings", func(int) error {
			var c string
			var op Opening
			err := s.members("opening", []string{"commitment", "category", "salt", "value"}, nil, func(name string) error {
				at := s.pos
				v, err := s.str("opening." + name)
				if err != nil {
					return err
				}
				switch name {
				case "commitment":
					c = v
				case "category":
					op.Category = Category(v)
					if !slices.Contains(Categories, op.Category) {
						s.pos = at
						return s.fail("opening.category: %q is not a category", clip(v))
					}
				case "salt":
					if !lowerHex(v, 2*SaltSize) {
						s.pos = at
						return s.fail("opening.salt: want %d lowercase hex characters", 2*SaltSize)
					}
					_, _ = hex.Decode(op.Salt[:], []byte(v)) // checked above
				case "value":
					op.Value = v
				}
				return nil
			})
			if err != nil {
				return err
			}
			if Commit(op.Category, op.Salt, op.Value) != c {
				return s.fail("the opening does not open commitment %s", strings.TrimSpace(clip(c)))
			}
			if _, dup := o[c]; dup {
				return s.fail("commitment %s is opened twice", clip(c))
			}
			o[c] = op
			return nil
		})
	})
	if err == nil {
		err = s.end()
	}
	if err != nil {
		return nil, err
	}
	if typ != OpeningsType {
		return nil, &ParseError{Reason: "type " + fmt.Sprintf("%q", clip(typ)) + " is not " + OpeningsType}
	}
	return o, nil
}
