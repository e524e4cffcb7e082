package audit

import (
	"encoding/hex"
	"strconv"
	"time"

	"github.com/swarmscore/swarmscore/internal/jcsstr"
	"github.com/swarmscore/swarmscore/internal/ledger"
)

// AppendJSON appends the bundle's document: one JSON object whose top-level
// members, events and records each start a line, so that a bundle of ten
// thousand events can be read with grep and compared with diff. The
// embedded passport and checkpoint are their documents as published, byte
// for byte. Parse reads it back; so does any JSON reader.
//
//	{"type":"swarmscore-audit/v1",
//	"agent_id":"agent-7",
//	"as_of":"2026-11-22T00:00:00Z",
//	"window":{"start":"2026-08-24T00:00:00Z","end":"2026-11-22T00:00:00Z"},
//	"counts":{"conduit_total":2,"conduit_success":1,"ap2_total":1,"ap2_success":1},
//	"score":{"value":16,"tier":"NONE","escrow_modifier":0.9872},
//	"withheld":["buyers"],
//	"passport":{…},
//	"checkpoint":{…},
//	"events":[
//	{"type":"conduit_session","id":"s-1","outcome":"counted","status":"VERIFIED","ended_at":"…","corrections":[]},
//	…],
//	"chains":[
//	{"agent_id":"agent-7","from_seq":1,"prev":"00…","head":{"seq":4,"hash":"…"},"checkpoint_proof":{"seq":4,"proof":{…}},"records":[
//	{"hash":"…","content":{"agent_id":"agent-7","buyer_id":{"withheld":"…"},…}},
//	…]}],
//	"holds":[
//	{"transaction_id":"tx-1","head":{"seq":2,"hash":"…"},"steps":[
//	{"hash":"…","content":{"action":"hold","actor":"market-1",…}},
//	…]}],
//	"hold_passports":[
//	{…}]}
//
// "sealings", "holds" with "hold_passports", and "log_inclusion" are
// present only when the bundle has them.
func (b *Bundle) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":"`+Type+`",`+"\n"+`"agent_id":`...)
	dst = jcsstr.Append(dst, b.AgentID)
	dst = append(dst, ",\n"+`"as_of":`...)
	dst = appendTime(dst, b.AsOf)
	dst = append(dst, ",\n"+`"window":{"start":`...)
	dst = appendTime(dst, ledger.WindowStart(b.AsOf))
	dst = append(dst, `,"end":`...)
	dst = appendTime(dst, b.AsOf)
	dst = append(dst, "},\n"+`"counts":{"conduit_total":`...)
	dst = strconv.AppendInt(dst, b.Counts.ConduitTotal, 10)
	dst = append(dst, `,"conduit_success":`...)
	dst = strconv.AppendInt(dst, b.Counts.ConduitSuccess, 10)
	dst = append(dst, `,"ap2_total":`...)
	dst = strconv.AppendInt(dst, b.Counts.AP2Total, 10)
	dst = append(dst, `,"ap2_success":`...)
	dst = strconv.AppendInt(dst, b.Counts.AP2Success, 10)
	dst = append(dst, "},\n"+`"score":{"value":`...)
	dst = strconv.AppendInt(dst, int64(b.Score.Value), 10)
	dst = append(dst, `,"tier":"`...)
	dst = append(dst, b.Score.Tier.String()...)
	dst = append(dst, `","escrow_modifier":`...)
	dst, _ = b.Score.Escrow.AppendText(dst) // never fails for a modifier Compute gave
	dst = append(dst, "},\n"+`"withheld":[`...)
	for i, c := range b.Withheld {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jcsstr.Append(dst, string(c))
	}
	dst = append(dst, "],\n"+`"passport":`...)
	dst = appendRaw(dst, b.Passport)
	dst = append(dst, ",\n"+`"checkpoint":`...)
	dst = appendRaw(dst, b.Checkpoint)
	dst = append(dst, ",\n"+`"events":[`...)
	for i := range b.Events {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '\n')
		dst = b.Events[i].appendJSON(dst)
	}
	dst = append(dst, "],\n"+`"chains":[`...)
	for i := range b.Chains {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '\n')
		dst = b.Chains[i].appendJSON(dst)
	}
	dst = append(dst, ']')
	// Only a bundle with sealed records has the member, so that every
	// other bundle reads as before.
	if len(b.Sealings) > 0 {
		dst = append(dst, ",\n"+`"sealings":[`...)
		for i := range b.Sealings {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, "\n"+`{"erasure":`...)
			dst = jcsstr.Append(dst, b.Sealings[i].ID)
			dst = append(dst, `,"digests":[`...)
			for k, d := range b.Sealings[i].Digests {
				if k > 0 {
					dst = append(dst, ',')
				}
				dst = appendHash(dst, d)
			}
			dst = append(dst, "]}"...)
		}
		dst = append(dst, ']')
	}
	// Likewise only a bundle with holds has these two.
	if len(b.Holds) > 0 || len(b.HoldPassports) > 0 {
		dst = append(dst, ",\n"+`"holds":[`...)
		for i := range b.Holds {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '\n')
			dst = b.Holds[i].appendJSON(dst)
		}
		dst = append(dst, "],\n"+`"hold_passports":[`...)
		for i, doc := range b.HoldPassports {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '\n')
			dst = append(dst, doc...)
		}
		dst = append(dst, ']')
	}
	if b.Log != nil {
		dst = append(dst, ",\n"+`"log_inclusion":`...)
		dst = b.Log.appendJSON(dst)
	}
	return append(dst, "}\n"...)
}

func appendRaw(dst, raw []byte) []byte {
	if raw == nil {
		return append(dst, "null"...)
	}
	return append(dst, raw...)
}

func appendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = append(dst, formatTime(t)...)
	return append(dst, '"')
}

func appendHash(dst []byte, h ledger.Hash) []byte {
	dst = append(dst, '"')
	dst = hex.AppendEncode(dst, h[:])
	return append(dst, '"')
}

func (v Value) appendJSON(dst []byte) []byte {
	if v.Withheld {
		dst = append(dst, `{"withheld":`...)
		dst = jcsstr.Append(dst, v.S)
		return append(dst, '}')
	}
	return jcsstr.Append(dst, v.S)
}

func (e *Event) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":`...)
	dst = jcsstr.Append(dst, string(e.Type))
	dst = append(dst, `,"id":`...)
	dst = jcsstr.Append(dst, e.ID)
	dst = append(dst, `,"outcome":`...)
	dst = jcsstr.Append(dst, string(e.Outcome))
	dst = append(dst, `,"status":`...)
	dst = jcsstr.Append(dst, string(e.Status))
	if !e.EndedAt.IsZero() {
		dst = append(dst, `,"ended_at":`...)
		dst = appendTime(dst, e.EndedAt)
	}
	dst = append(dst, `,"corrections":[`...)
	for i, c := range e.Corrections {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jcsstr.Append(dst, c)
	}
	dst = append(dst, ']')
	if !e.MovedFrom.IsZero() {
		dst = append(dst, `,"moved_from":`...)
		dst = e.MovedFrom.appendJSON(dst)
	}
	if !e.MovedTo.IsZero() {
		dst = append(dst, `,"moved_to":`...)
		dst = e.MovedTo.appendJSON(dst)
	}
	return append(dst, '}')
}

func (c *Chain) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"agent_id":`...)
	dst = c.AgentID.appendJSON(dst)
	dst = append(dst, `,"from_seq":`...)
	dst = strconv.AppendInt(dst, c.FromSeq, 10)
	dst = append(dst, `,"prev":`...)
	dst = appendHash(dst, c.Prev)
	dst = append(dst, `,"head":{"seq":`...)
	dst = strconv.AppendInt(dst, c.Head.Seq, 10)
	dst = append(dst, `,"hash":`...)
	dst = appendHash(dst, c.Head.Hash)
	dst = append(dst, '}')
	if c.Proof != nil {
		dst = append(dst, `,"checkpoint_proof":{"seq":`...)
		dst = strconv.AppendInt(dst, c.Proof.Seq, 10)
		dst = append(dst, `,"proof":`...)
		// Only a proof no tree can produce fails to marshal; it is written
		// as null, which Parse refuses, rather than left out unseen.
		proof, err := c.Proof.Proof.MarshalJSON()
		if err != nil {
			proof = []byte("null")
		}
		dst = append(dst, proof...)
		dst = append(dst, '}')
	}
	dst = append(dst, `,"records":[`...)
	for i := range c.Records {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = c.Records[i].appendJSON(dst)
	}
	return append(dst, "]}"...)
}

// appendJSON appends a record (or a hold's step) on a line of its own.
func (r *Record) appendJSON(dst []byte) []byte {
	dst = append(dst, "\n"+`{"hash":`...)
	dst = appendHash(dst, r.Hash)
	dst = append(dst, `,"content":`...)
	dst = r.Content.appendJSON(dst)
	if by := r.SealedBy; by != "" {
		dst = append(dst, `,"sealed_by":`...)
		dst = jcsstr.Append(dst, by)
	}
	return append(dst, '}')
}

func (h *Hold) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"transaction_id":`...)
	dst = jcsstr.Append(dst, h.TransactionID)
	dst = append(dst, `,"head":{"seq":`...)
	dst = strconv.AppendInt(dst, h.Head.Seq, 10)
	dst = append(dst, `,"hash":`...)
	dst = appendHash(dst, h.Head.Hash)
	dst = append(dst, `},"steps":[`...)
	for i := range h.Steps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = h.Steps[i].appendJSON(dst)
	}
	return append(dst, "]}"...)
}

func (c Content) appendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	for i := range c {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, c[i].Name...)
		dst = append(dst, '"', ':')
		switch {
		case c[i].IsInt:
			dst = strconv.AppendInt(dst, c[i].Int, 10)
		case c[i].IsRows:
			dst = ledger.AppendSummaryRows(dst, c[i].Rows)
		default:
			dst = c[i].Str.appendJSON(dst)
		}
	}
	return append(dst, '}')
}
