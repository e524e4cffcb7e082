package checkpoint

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// Parse reads a checkpoint document strictly, so that an archived copy has
// one reading: one JSON object of exactly the members MarshalJSON writes
// (any order and whitespace), each once, each of its type: integers without
// fraction, exponent or sign, a time in TimeLayout, the root and an HS256
// signature in lowercase hex, an EdDSA signature in unpadded base64url, and
// every value valid as Sign requires. Anything else — not UTF-8, over
// MaxDocumentSize, malformed JSON, trailing data, an unknown, duplicate or
// missing member, a wrong type, another "type" — matches errkind.ErrInvalid
// with the reason. Parse does not verify the signature: call Verify.
func Parse(data []byte) (Checkpoint, error) {
	r, err := newReader(data, "checkpoint")
	if err != nil {
		return Checkpoint{}, err
	}
	var c Checkpoint
	var typ, at, root, sig string
	err = r.object("", []string{"agents", "checkpoint", "environment", "issuer", "root", "time", "type"}, func(name string) error {
		var err error
		switch name {
		case "agents":
			c.Agents, err = r.integer(name)
		case "checkpoint":
			c.Number, err = r.integer(name)
		case "environment":
			c.Environment, err = r.str(name)
		case "issuer":
			err = r.object("issuer.", []string{"alg", "kid", "platform", "signature"}, func(name string) error {
				var err error
				switch name {
				case "alg":
					c.Issuer.Alg, err = r.str("issuer.alg")
				case "kid":
					c.Issuer.KeyID, err = r.str("issuer.kid")
				case "platform":
					c.Issuer.Platform, err = r.str("issuer.platform")
				case "signature":
					sig, err = r.str("issuer.signature")
				}
				return err
			})
		case "root":
			root, err = r.str(name)
		case "time":
			at, err = r.str(name)
		case "type":
			typ, err = r.str(name)
		}
		return err
	})
	if err == nil {
		err = r.end()
	}
	if err != nil {
		return Checkpoint{}, err
	}
	if typ != Type {
		return Checkpoint{}, r.fail("type %s is not %s", quote(typ), Type)
	}
	if c.Time, err = time.Parse(TimeLayout, at); err != nil || c.Time.Format(TimeLayout) != at {
		return Checkpoint{}, r.fail("time %s is not RFC 3339 UTC in whole seconds (%s)", quote(at), TimeLayout)
	}
	if c.Root, err = parseHash(root); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: root: %w", err)
	}
	if err := c.validate(); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: %w", err)
	}
	if c.Issuer.Signature, err = decodeSignature(c.Issuer.Alg, sig); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: %w", err)
	}
	return c, nil
}

// UnmarshalJSON is Parse, so that a checkpoint embedded in another document
// (an audit bundle) is read as strictly.
func (c *Checkpoint) UnmarshalJSON(data []byte) error {
	v, err := Parse(data)
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// MarshalJSON writes the proof as RFC 9162's inclusion_proof_v2 names its
// fields, in canonical member order:
// {"leaf_index":5,"path":["<64 hex>",…],"tree_size":100}. A proof that
// cannot be one (an index outside [0, size), a size outside 1 to
// MaxInteger, a path longer than MaxPathLen) matches errkind.ErrInvalid.
func (p Proof) MarshalJSON() ([]byte, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 64+len(p.Path)*(2*HashSize+3))
	b = append(b, `{"leaf_index":`...)
	b = strconv.AppendInt(b, p.Index, 10)
	b = append(b, `,"path":[`...)
	for i := range p.Path {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = hex.AppendEncode(b, p.Path[i][:])
		b = append(b, '"')
	}
	b = append(b, `],"tree_size":`...)
	b = strconv.AppendInt(b, p.Size, 10)
	return append(b, '}'), nil
}

func (p *Proof) check() error {
	switch {
	case p.Size < 1 || p.Size > MaxInteger:
		return fmt.Errorf("%w: proof: tree size %d is outside 1 to 2^53-1", errkind.ErrInvalid, p.Size)
	case p.Index < 0 || p.Index >= p.Size:
		return fmt.Errorf("%w: proof: leaf index %d is outside a tree of %d leaves", errkind.ErrInvalid, p.Index, p.Size)
	case len(p.Path) > MaxPathLen:
		return fmt.Errorf("%w: proof: %d path hashes, more than the %d of the largest tree", errkind.ErrInvalid, len(p.Path), MaxPathLen)
	}
	return nil
}

// ParseProof reads a proof as MarshalJSON writes it, as strictly as Parse
// reads a checkpoint; its errors match errkind.ErrInvalid. A proof that
// parses may still not verify: that is VerifyInclusion's question.
func ParseProof(data []byte) (Proof, error) {
	r, err := newReader(data, "proof")
	if err != nil {
		return Proof{}, err
	}
	var p Proof
	err = r.object("", []string{"leaf_index", "path", "tree_size"}, func(name string) error {
		var err error
		switch name {
		case "leaf_index":
			p.Index, err = r.integer(name)
		case "tree_size":
			p.Size, err = r.integer(name)
		case "path":
			p.Path = []Hash{}
			err = r.array(name, func(i int) error {
				if i == MaxPathLen {
					return r.fail("path has more than %d hashes", MaxPathLen)
				}
				s, err := r.str(name)
				if err != nil {
					return err
				}
				h, err := parseHash(s)
				if err != nil {
					return fmt.Errorf("proof: path[%d]: %w", i, err)
				}
				p.Path = append(p.Path, h)
				return nil
			})
		}
		return err
	})
	if err == nil {
		err = r.end()
	}
	if err != nil {
		return Proof{}, err
	}
	if err := p.check(); err != nil {
		return Proof{}, err
	}
	return p, nil
}

// UnmarshalJSON is ParseProof.
func (p *Proof) UnmarshalJSON(data []byte) error {
	v, err := ParseProof(data)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// reader walks a document with encoding/json's tokenizer, which checks the
// syntax, so that this file only judges names, types and counts.
type reader struct {
	dec  *json.Decoder
	what string
}

func newReader(data []byte, what string) (*reader, error) {
	r := &reader{what: what}
	if len(data) > MaxDocumentSize {
		return nil, r.fail("document is %d bytes, more than %d", len(data), MaxDocumentSize)
	}
	// encoding/json would replace invalid bytes with U+FFFD without a
	// word, and the reading would not be the document.
	if !utf8.Valid(data) {
		return nil, r.fail("document is not valid UTF-8")
	}
	r.dec = json.NewDecoder(bytes.NewReader(data))
	r.dec.UseNumber()
	return r, nil
}

func (r *reader) fail(format string, args ...any) error {
	return fmt.Errorf("%s: %w: "+format, append([]any{r.what, errkind.ErrInvalid}, args...)...)
}

func (r *reader) token() (json.Token, error) {
	tok, err := r.dec.Token()
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil, r.fail("document ends early")
	}
	if err != nil {
		return nil, r.fail("malformed JSON: %v", err)
	}
	return tok, nil
}

// object reads an object whose members are exactly names, each once,
// handing each to member to read its value; prefix is the object's path
// for messages.
func (r *reader) object(prefix string, names []string, member func(name string) error) error {
	tok, err := r.token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		if prefix == "" {
			return r.fail("document is %s, not an object", describe(tok))
		}
		return r.fail("%s is %s, not an object", prefix[:len(prefix)-1], describe(tok))
	}
	seen := make([]bool, len(names))
	for r.dec.More() {
		tok, err := r.token()
		if err != nil {
			return err
		}
		name := tok.(string) // the tokenizer yields only strings as names
		i := slices.Index(names, name)
		switch {
		case i < 0:
			return r.fail("unknown member %s", quote(prefix+name))
		case seen[i]:
			return r.fail("duplicate member %s", quote(prefix+name))
		}
		seen[i] = true
		if err := member(name); err != nil {
			return err
		}
	}
	if _, err := r.token(); err != nil { // the closing brace: More said so
		return err
	}
	for i, ok := range seen {
		if !ok {
			return r.fail("missing member %s", quote(prefix+names[i]))
		}
	}
	return nil
}

// array reads an array, handing each element's position to elem to read it.
func (r *reader) array(name string, elem func(i int) error) error {
	tok, err := r.token()
	if err != nil {
		return err
	}
	if tok != json.Delim('[') {
		return r.fail("%s is %s, not an array", name, describe(tok))
	}
	for i := 0; r.dec.More(); i++ {
		if err := elem(i); err != nil {
			return err
		}
	}
	_, err = r.token()
	return err
}

func (r *reader) str(name string) (string, error) {
	tok, err := r.token()
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", r.fail("%s is %s, not a string", name, describe(tok))
	}
	return s, nil
}

// integer reads a non-negative integer up to MaxInteger written as plain
// digits: 1.0 and 1e0 are the same number to JCS but not the same text,
// and an archived document should have one spelling.
func (r *reader) integer(name string) (int64, error) {
	tok, err := r.token()
	if err != nil {
		return 0, err
	}
	num, ok := tok.(json.Number)
	if !ok {
		return 0, r.fail("%s is %s, not an integer", name, describe(tok))
	}
	s := string(num)
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, r.fail("%s is %s, not an integer from 0 to 2^53-1 written as digits", name, quote(s))
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v > MaxInteger {
		return 0, r.fail("%s is %s, above 2^53-1", name, quote(s))
	}
	return v, nil
}

// end checks that nothing but whitespace follows the document.
func (r *reader) end() error {
	if _, err := r.dec.Token(); !errors.Is(err, io.EOF) {
		return r.fail("trailing data after the document")
	}
	return nil
}

func describe(tok json.Token) string {
	switch tok := tok.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case json.Delim:
		if tok == '[' {
			return "an array"
		}
		return "an object"
	}
	return fmt.Sprintf("%T", tok)
}
