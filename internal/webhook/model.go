package webhook

import "time"

// Endpoint is a registered receiver.
type Endpoint struct {
	ID     string
	URL    string
	Events []EventType
	// Secret signs its deliveries; it is redacted wherever printed.
	Secret    Secret
	CreatedAt time.Time
	// CreatedBy is the operator who registered it.
	CreatedBy string
	// DeletedAt is when it was deleted (zero while it stands): nothing is
	// delivered to it after.
	DeletedAt time.Time
}

// State is where a message stands.
type State string

// The states of a message.
const (
	// Pending: not delivered yet; it is attempted at NextAttemptAt.
	Pending State = "pending"
	// Delivered: a 2xx answered an attempt.
	Delivered State = "delivered"
	// Failed: every attempt failed for MaxAge; no more are made.
	Failed State = "failed"
	// Cancelled: its endpoint was deleted before it was delivered.
	Cancelled State = "cancelled"
)

// Message is one event for one endpoint: the outbox row and what its
// delivery attempts did.
type Message struct {
	ID         string
	EndpointID string
	Type       EventType
	AgentID    string
	Payload    []byte
	CreatedAt  time.Time
	State      State
	// Attempts is how many attempts were recorded.
	Attempts      int
	NextAttemptAt time.Time
	DeliveredAt   time.Time
	// LastStatus and LastError are the last attempt's HTTP status (0
	// without an answer) and error ("" for a 2xx).
	LastStatus int
	LastError  string
	// History is the attempts, oldest first (filled by the deliveries
	// read).
	History []Attempt
}

// Attempt is one delivery attempt of a message.
type Attempt struct {
	N        int // 1 for the first
	At       time.Time
	Status   int // 0 when no answer came
	Error    string
	Duration time.Duration
}

// Claimed is a message a dispatcher took to deliver, with what it needs:
// the endpoint's URL and secret.
type Claimed struct {
	Message
	URL    string
	Secret Secret
}

// Result is what a dispatcher records after an attempt of a claimed
// message: the attempt, and the state it leaves the message in.
type Result struct {
	MessageID string
	// Attempt.N must be the claimed message's Attempts + 1: a result for
	// a message another dispatcher recorded meanwhile is dropped.
	Attempt Attempt
	State   State
	// NextAttemptAt is set when State is Pending.
	NextAttemptAt time.Time
}
