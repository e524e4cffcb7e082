package audit

import (
	"bytes"
	"encoding/hex"
	"slices"
	"strconv"
	"time"

	"github.com/swarmscore/swarmscore/internal/checkpoint"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/score"
)

// Parse reads a bundle strictly, so that it has one reading: one JSON
// object with exactly the members AppendJSON writes (in any order, with any
// whitespace; "sealings" and a record's "sealed_by" only where an erasure
// sealed records, the digests and the erasures each sorted and once;
// "holds" and "hold_passports" together, only where there are holds),
// each once and of its type; integers as plain digits up to
// 2^53 − 1, hashes and commitments as 64 lowercase hex characters, times
// as the ledger formats them (RFC 3339 UTC, at most six fractional
// digits), strings of valid UTF-8 without lone surrogates; the window and
// the record contents as described on Bundle. The passport and the
// checkpoint are kept as the bytes received, for passport.Verify and
// checkpoint.Parse, which read them as strictly on their own; a proof is
// read by checkpoint.ParseProof. Anything else — over MaxBundleSize,
// malformed JSON, trailing data, an unknown, duplicate or missing member —
// is a *ParseError (errkind.ErrInvalid). Parse checks the form only: Verify
// checks what the bundle says.
func Parse(data []byte) (*Bundle, error) {
	if len(data) > MaxBundleSize {
		return nil, &ParseError{Reason: "the bundle is " + strconv.Itoa(len(data)) + " bytes, more than " + strconv.Itoa(MaxBundleSize)}
	}
	s := &scanner{data: data}
	b := &Bundle{}
	var typ string
	var start, end time.Time
	have := map[string]bool{}
	err := s.object("bundle", func(name string) error {
		have[name] = true
		var err error
		switch name {
		case "type":
			typ, err = s.str(name)
		case "agent_id":
			b.AgentID, err = s.str(name)
		case "as_of":
			b.AsOf, err = s.time(name)
		case "window":
			err = s.members(name, []string{"start", "end"}, nil, func(m string) error {
				var err error
				if m == "start" {
					start, err = s.time("window.start")
				} else {
					end, err = s.time("window.end")
				}
				return err
			})
		case "counts":
			err = s.counts(&b.Counts)
		case "score":
			err = s.score(&b.Score)
		case "withheld":
			err = s.array(name, func(int) error {
				v, err := s.str(name)
				if err != nil {
					return err
				}
				c := Category(v)
				if !slices.Contains(Categories, c) {
					return s.fail("withheld: %s is not a category", strconv.Quote(clip(v)))
				}
				if n := len(b.Withheld); n > 0 && b.Withheld[n-1] >= c {
					return s.fail("withheld: categories must be sorted, each once")
				}
				b.Withheld = append(b.Withheld, c)
				return nil
			})
		case "passport":
			b.Passport, err = s.document(name)
		case "checkpoint":
			b.Checkpoint, err = s.document(name)
		case "events":
			err = s.array(name, func(int) error {
				e, err := s.event()
				b.Events = append(b.Events, e)
				return err
			})
		case "chains":
			err = s.array(name, func(int) error {
				c, err := s.chain()
				b.Chains = append(b.Chains, c)
				return err
			})
		case "sealings":
			err = s.array(name, func(int) error {
				g, err := s.sealing()
				if err == nil && len(b.Sealings) > 0 && b.Sealings[len(b.Sealings)-1].ID >= g.ID {
					err = s.fail("sealings: erasures must be sorted by id, each once")
				}
				b.Sealings = append(b.Sealings, g)
				return err
			})
		case "holds":
			err = s.array(name, func(int) error {
				h, err := s.hold()
				b.Holds = append(b.Holds, h)
				return err
			})
		case "hold_passports":
			err = s.array(name, func(int) error {
				if s.peek() != '{' {
					return s.fail("hold_passports: want a passport object, found %s", s.found())
				}
				doc, err := s.raw(name)
				b.HoldPassports = append(b.HoldPassports, doc)
				return err
			})
		case "log_inclusion":
			b.Log, err = s.logInclusion()
		default:
			return s.fail("unknown member %s", strconv.Quote(clip(name)))
		}
		return err
	})
	if err == nil {
		err = s.end()
	}
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"type", "agent_id", "as_of", "window", "counts", "score", "withheld", "passport", "checkpoint", "events", "chains"} {
		if !have[name] {
			return nil, &ParseError{Offset: len(data), Reason: "missing member " + strconv.Quote(name)}
		}
	}
	if have["holds"] != have["hold_passports"] || have["holds"] && len(b.Holds) == 0 {
		return nil, &ParseError{Offset: len(data), Reason: `"holds" and "hold_passports" come together, with at least one hold`}
	}
	switch {
	case typ != Type:
		return nil, &ParseError{Reason: "type " + strconv.Quote(clip(typ)) + " is not " + Type}
	case !ledger.ValidID(b.AgentID):
		return nil, &ParseError{Reason: "agent_id " + strconv.Quote(clip(b.AgentID)) + " is not a valid agent id"}
	case !start.Equal(ledger.WindowStart(b.AsOf)) || !end.Equal(b.AsOf):
		return nil, &ParseError{Reason: "window is not [as_of - 90 days, as_of]"}
	}
	return b, nil
}

// members reads an object of exactly required and any of optional.
func (s *scanner) members(what string, required, optional []string, member func(name string) error) error {
	var haveBuf [8]string
	have := haveBuf[:0]
	err := s.object(what, func(name string) error {
		if !slices.Contains(required, name) && !slices.Contains(optional, name) {
			return s.fail("%s: unknown member %s", what, strconv.Quote(clip(name)))
		}
		have = append(have, name)
		return member(name)
	})
	if err != nil {
		return err
	}
	for _, r := range required {
		if !slices.Contains(have, r) {
			return s.fail("%s: missing member %s", what, strconv.Quote(r))
		}
	}
	return nil
}

// time reads a time in the ledger's one spelling.
func (s *scanner) time(what string) (time.Time, error) {
	at := s.pos
	v, err := s.str(what)
	if err != nil {
		return time.Time{}, err
	}
	t, err := ledger.ParseTime(what, v)
	if err != nil || formatTime(t) != v {
		s.pos = at
		return time.Time{}, s.fail("%s: %s is not an RFC 3339 UTC time as the ledger writes it (e.g. 2026-03-17T14:30:00Z)", what, strconv.Quote(clip(v)))
	}
	return t, nil
}

func (s *scanner) hash(what string) (ledger.Hash, error) {
	var h ledger.Hash
	at := s.pos
	v, _, err := s.strBytes(what)
	if err != nil {
		return h, err
	}
	if !lowerHexBytes(v, 2*ledger.HashSize) {
		s.pos = at
		return h, s.fail("%s: want %d lowercase hex characters", what, 2*ledger.HashSize)
	}
	_, _ = hex.Decode(h[:], v) // checked above
	return h, nil
}

func lowerHexBytes(b []byte, n int) bool {
	if len(b) != n {
		return false
	}
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func lowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// value reads a string or a withheld value.
func (s *scanner) value(what string) (Value, error) {
	if s.peek() == '{' {
		return s.withheld(what)
	}
	v, err := s.str(what)
	return Clear(v), err
}

// withheld reads {"withheld":"<64 hex>"}.
func (s *scanner) withheld(what string) (Value, error) {
	var v Value
	err := s.members(what, []string{"withheld"}, nil, func(string) error {
		at := s.pos
		c, err := s.str(what + ".withheld")
		if err != nil {
			return err
		}
		if !lowerHex(c, commitmentHexLen) {
			s.pos = at
			return s.fail("%s.withheld: want %d lowercase hex characters", what, commitmentHexLen)
		}
		v = Value{S: c, Withheld: true}
		return nil
	})
	return v, err
}

// document reads null or an embedded JSON object, kept as received.
func (s *scanner) document(what string) ([]byte, error) {
	if s.null() {
		return nil, nil
	}
	if s.peek() != '{' {
		return nil, s.fail("%s: want an object or null, found %s", what, s.found())
	}
	return s.raw(what)
}

func (s *scanner) counts(c *score.Counts) error {
	return s.members("counts", []string{"conduit_total", "conduit_success", "ap2_total", "ap2_success"}, nil, func(name string) error {
		v, err := s.integer("counts." + name)
		switch name {
		case "conduit_total":
			c.ConduitTotal = v
		case "conduit_success":
			c.ConduitSuccess = v
		case "ap2_total":
			c.AP2Total = v
		case "ap2_success":
			c.AP2Success = v
		}
		return err
	})
}

func (s *scanner) score(sc *Score) error {
	return s.members("score", []string{"value", "tier", "escrow_modifier"}, nil, func(name string) error {
		switch name {
		case "value":
			v, err := s.integer("score.value")
			sc.Value = int(min(v, score.MaxScore+1))
			return err
		case "tier":
			at := s.pos
			v, err := s.str("score.tier")
			if err != nil {
				return err
			}
			if sc.Tier, err = score.ParseTier(v); err != nil {
				s.pos = at
				return s.fail("score.tier: %s is not NONE, STANDARD or ELITE", strconv.Quote(clip(v)))
			}
		case "escrow_modifier":
			at := s.pos
			s.ws()
			if c := s.peek(); c != '-' && !('0' <= c && c <= '9') {
				return s.fail("score.escrow_modifier: want a number, found %s", s.found())
			}
			raw, err := s.raw("score.escrow_modifier")
			if err != nil {
				return err
			}
			if sc.Escrow, err = score.ParseModifier(string(raw)); err != nil {
				s.pos = at
				return s.fail("score.escrow_modifier: %v", err)
			}
		}
		return nil
	})
}

func (s *scanner) event() (Event, error) {
	var e Event
	err := s.members("event", []string{"type", "id", "outcome", "status", "corrections"}, []string{"ended_at", "moved_from", "moved_to"}, func(name string) error {
		var err error
		var v string
		switch name {
		case "type":
			v, err = s.str("event.type")
			e.Type = ledger.Type(v)
		case "id":
			e.ID, err = s.str("event.id")
		case "outcome":
			at := s.pos
			v, err = s.str("event.outcome")
			if e.Outcome = Outcome(v); err == nil && !e.Outcome.valid() {
				s.pos = at
				err = s.fail("event.outcome: %s is not an outcome", strconv.Quote(clip(v)))
			}
		case "status":
			v, err = s.str("event.status")
			e.Status = ledger.Status(v)
		case "ended_at":
			e.EndedAt, err = s.time("event.ended_at")
		case "corrections":
			e.Corrections = []string{}
			err = s.array("event.corrections", func(int) error {
				v, err := s.str("event.corrections")
				e.Corrections = append(e.Corrections, v)
				return err
			})
		case "moved_from":
			e.MovedFrom, err = s.value("event.moved_from")
		case "moved_to":
			e.MovedTo, err = s.value("event.moved_to")
		}
		return err
	})
	return e, err
}

func (s *scanner) chain() (Chain, error) {
	var c Chain
	err := s.members("chain", []string{"agent_id", "from_seq", "prev", "head", "records"}, []string{"checkpoint_proof"}, func(name string) error {
		var err error
		switch name {
		case "agent_id":
			c.AgentID, err = s.value("chain.agent_id")
		case "from_seq":
			c.FromSeq, err = s.integer("chain.from_seq")
		case "prev":
			c.Prev, err = s.hash("chain.prev")
		case "head":
			err = s.members("chain.head", []string{"seq", "hash"}, nil, func(name string) error {
				var err error
				if name == "seq" {
					c.Head.Seq, err = s.integer("chain.head.seq")
				} else {
					c.Head.Hash, err = s.hash("chain.head.hash")
				}
				return err
			})
		case "checkpoint_proof":
			c.Proof = &Inclusion{}
			err = s.members("chain.checkpoint_proof", []string{"seq", "proof"}, nil, func(name string) error {
				if name == "seq" {
					v, err := s.integer("chain.checkpoint_proof.seq")
					c.Proof.Seq = v
					return err
				}
				at := s.pos
				raw, err := s.raw("chain.checkpoint_proof.proof")
				if err != nil {
					return err
				}
				if c.Proof.Proof, err = checkpoint.ParseProof(raw); err != nil {
					s.pos = at
					return s.fail("chain.checkpoint_proof.proof: %v", err)
				}
				return nil
			})
		case "records":
			err = s.array("chain.records", func(int) error {
				r, err := s.record("record")
				c.Records = append(c.Records, r)
				return err
			})
		}
		return err
	})
	return c, err
}

// record reads {"hash","content"[,"sealed_by"]}: a chain record or a hold's
// step.
func (s *scanner) record(what string) (Record, error) {
	var r Record
	err := s.members(what, []string{"hash", "content"}, []string{"sealed_by"}, func(name string) error {
		var err error
		switch name {
		case "hash":
			r.Hash, err = s.hash(what + ".hash")
		case "content":
			r.Content, err = s.content(what + ".content")
		default:
			at := s.pos
			if r.SealedBy, err = s.str(what + ".sealed_by"); err == nil && !ledger.ValidID(r.SealedBy) {
				s.pos = at
				err = s.fail("%s.sealed_by: %s is not a valid erasure id", what, strconv.Quote(clip(r.SealedBy)))
			}
		}
		return err
	})
	return r, err
}

// hold reads {"transaction_id","head":{"seq","hash"},"steps":[record…]}.
func (s *scanner) hold() (Hold, error) {
	var h Hold
	err := s.members("hold", []string{"transaction_id", "head", "steps"}, nil, func(name string) error {
		switch name {
		case "transaction_id":
			at := s.pos
			var err error
			if h.TransactionID, err = s.str("hold.transaction_id"); err == nil && !ledger.ValidID(h.TransactionID) {
				s.pos = at
				err = s.fail("hold.transaction_id: %s is not a valid id", strconv.Quote(clip(h.TransactionID)))
			}
			return err
		case "head":
			return s.members("hold.head", []string{"seq", "hash"}, nil, func(name string) error {
				var err error
				if name == "seq" {
					h.Head.Seq, err = s.integer("hold.head.seq")
				} else {
					h.Head.Hash, err = s.hash("hold.head.hash")
				}
				return err
			})
		}
		return s.array("hold.steps", func(int) error {
			r, err := s.record("hold.step")
			h.Steps = append(h.Steps, r)
			return err
		})
	})
	return h, err
}

// sealing reads one erasure's digests: {"erasure":ID,"digests":[hash…]},
// the digests sorted, each once.
func (s *scanner) sealing() (Sealing, error) {
	var g Sealing
	err := s.members("sealing", []string{"erasure", "digests"}, nil, func(name string) error {
		if name == "erasure" {
			at := s.pos
			var err error
			if g.ID, err = s.str("sealing.erasure"); err == nil && !ledger.ValidID(g.ID) {
				s.pos = at
				err = s.fail("sealing.erasure: %s is not a valid erasure id", strconv.Quote(clip(g.ID)))
			}
			return err
		}
		return s.array("sealing.digests", func(int) error {
			d, err := s.hash("sealing.digests")
			if err == nil && len(g.Digests) > 0 && bytes.Compare(g.Digests[len(g.Digests)-1][:], d[:]) >= 0 {
				err = s.fail("sealing.digests: digests must be sorted, each once")
			}
			g.Digests = append(g.Digests, d)
			return err
		})
	})
	return g, err
}
