package ledger

// What the back ends need to turn stored rows into ledger values and back,
// written once.

// Consider adds r, a row of the walk read for the erasure of x, to the
// scope when its content names x: a record of x's own chain (a summary
// record gets its content from summaries, x's by seq), or one of another
// chain that names x (ChainRow.NamesAgent). r's byte slices are copied,
// so the caller may reuse r.
func (sc *ErasureScope) Consider(x string, r *ChainRow, summaries map[int64]*Summary) {
	if r.AgentID != x && !r.NamesAgent(x) {
		return
	}
	row := *r
	if row.Record.Type == SummaryType {
		row.Summary = summaries[row.Record.Seq]
	}
	row.StoredHash = append([]byte(nil), r.StoredHash...)
	row.HeadHash = append([]byte(nil), r.HeadHash...)
	sc.Records = append(sc.Records, ScopedRow{ChainRow: row})
}

// DigestBytes is the erasure's digests as one byte string, as stored.
func (e *Erasure) DigestBytes() []byte {
	out := make([]byte, 0, len(e.Digests)*HashSize)
	for _, d := range e.Digests {
		out = append(out, d[:]...)
	}
	return out
}

// SetDigests sets the erasure's digests from their stored byte string (a
// trailing partial digest is ignored).
func (e *Erasure) SetDigests(b []byte) {
	e.Digests = make([]Hash, len(b)/HashSize)
	for i := range e.Digests {
		copy(e.Digests[i][:], b[i*HashSize:])
	}
}

// SetRequested fills in the request fields a stored correction implies
// (its row keeps the state before and after, not the request): the new
// status of a status correction, the agent a re-attribution moves the
// event to.
func (c *Correction) SetRequested() {
	switch c.Action {
	case ActionStatus:
		c.Status = c.ToStatus
	case ActionReattribute:
		c.AgentID = c.ToAgent
	}
}
