package api

// Problem is an error response: an RFC 9457 problem details object, served
// as application/problem+json. Type is one of the Problem* URIs, stable
// once published, on which clients branch; RequestID is an extension
// member that lets an operator find the request in the server's log.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Code, when present, names the specific error within its type in
	// lower-case snake_case ("invalid_id"): stable once published, like
	// Type, and the same code the CLI and the MCP tools report.
	Code      string `json:"code,omitempty"`
	Instance  string `json:"instance,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// ProblemBase prefixes every problem type URI.
const ProblemBase = "https://swarmscore.dev/problems/"

// The problem types the server sends, for comparison with Problem.Type.
const (
	ProblemInvalid          = ProblemBase + "invalid-request"
	ProblemMalformedJSON    = ProblemBase + "malformed-json"
	ProblemWrongType        = ProblemBase + "wrong-type"
	ProblemUnauthorized     = ProblemBase + "unauthorized"
	ProblemForbidden        = ProblemBase + "forbidden"
	ProblemNotFound         = ProblemBase + "not-found"
	ProblemNoRoute          = ProblemBase + "no-route"
	ProblemMethodNotAllowed = ProblemBase + "method-not-allowed"
	ProblemConflict         = ProblemBase + "conflict"
	ProblemBodyTooLarge     = ProblemBase + "body-too-large"
	// ProblemUnsupportedMediaType: a batch of events sent as anything but
	// application/json or application/x-ndjson (415, with Accept).
	ProblemUnsupportedMediaType = ProblemBase + "unsupported-media-type"
	ProblemRateLimited          = ProblemBase + "rate-limited"
	ProblemInternal             = ProblemBase + "internal"
	ProblemUnavailable          = ProblemBase + "unavailable"
	// What the server's HTTP layer answers before any route: headers too
	// large (431), an unsupported Transfer-Encoding (501), HTTP version
	// (505) or Expect (417). A malformed request is ProblemInvalid.
	ProblemHeadersTooLarge     = ProblemBase + "headers-too-large"
	ProblemNotImplemented      = ProblemBase + "not-implemented"
	ProblemVersionNotSupported = ProblemBase + "http-version-not-supported"
	ProblemExpectationFailed   = ProblemBase + "expectation-failed"
)

// ProblemTypes lists every problem type the server can send.
var ProblemTypes = []string{
	ProblemInvalid, ProblemMalformedJSON, ProblemWrongType, ProblemUnauthorized, ProblemForbidden, ProblemNotFound,
	ProblemNoRoute, ProblemMethodNotAllowed, ProblemConflict, ProblemBodyTooLarge, ProblemUnsupportedMediaType, ProblemRateLimited, ProblemInternal,
	ProblemUnavailable, ProblemHeadersTooLarge, ProblemNotImplemented, ProblemVersionNotSupported, ProblemExpectationFailed,
}

// Status is the answer of the probes: GET /healthz ({"status":"ok"}) and
// GET /readyz ({"status":"ready"}).
type Status struct {
	Status string `json:"status"`
}
