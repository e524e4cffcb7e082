package api

import "time"

// EraseRequest is the optional body of POST /swarmscore/{agent_id}/erase.
type EraseRequest struct {
	Reason string `json:"reason,omitempty"`
}

// Erasure is an agent's erasure (GDPR Art. 17): the pseudonym the agent's
// records now carry, the commitment to its old id (Identity: hex
// SHA-256("swarmscore-audit-withheld/v1" 0x00 category 0x00 salt id)), and
// how many of its records were sealed (POST /swarmscore/{agent_id}/erase,
// GET /swarmscore/erasures, swarmscore agent erase|erasures --json). It
// never names the erased id: whoever asked knows it, and output that
// paired it with the pseudonym would undo the erasure.
type Erasure struct {
	ID            string    `json:"erasure_id"`
	Pseudonym     string    `json:"pseudonym"`
	ErasedAt      time.Time `json:"erased_at"`
	ErasedBy      string    `json:"erased_by"`
	Identity      string    `json:"identity"`
	SealedRecords int       `json:"sealed_records"`
	// Opening is only in the answer to the erasure itself: shown once,
	// stored nowhere by the server; the operator hands it to the agent.
	Opening *Opening `json:"opening,omitempty"`
	// Reason is the reason sent, the erased id in it replaced by the
	// pseudonym (the answer to the erasure only; not stored).
	Reason string `json:"reason,omitempty"`
}

// Opening opens an erasure's identity commitment: its category ("agents")
// and salt (32 hex digits).
type Opening struct {
	Category string `json:"category"`
	Salt     string `json:"salt"`
}

// Erasures lists every erasure, oldest first, without openings (GET
// /swarmscore/erasures, swarmscore agent erasures --json).
type Erasures struct {
	Erasures []Erasure `json:"erasures"`
}
