// Package mcp is SwarmScore's Model Context Protocol server, built with the
// official Go SDK (github.com/modelcontextprotocol/go-sdk): the tools
// get_score, get_certificate, verify_passport, quote_escrow and
// explain_score, and the resource swarmscore://formula. It serves over
// stdio (`swarmscore mcp`) and over streamable HTTP at /mcp of `swarmscore
// serve` (Handler, mounted by internal/httpapi behind the server's rate
// limit and authentication).
//
// Every tool calls the same use case as the HTTP route it mirrors and
// answers its JSON shape as structured content, so the two never differ;
// what a caller may see follows the same rules (an unlisted agent is
// unknown to the public; quote_escrow is an operator's, as POST
// /swarmscore/{agent_id}/escrow is). A tool's error is a tool result with
// isError set whose text content is the RFC 9457 problem the HTTP API
// answers for the same error, as JSON (httpapi.ProblemFor: the same type,
// status, stable code and detail), also in _meta under ProblemMeta.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/swarmscore/swarmscore/api"
	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/httpapi"
	"github.com/swarmscore/swarmscore/internal/ledger"
	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/wire"
)

// Services are the use cases the tools call (the groups of
// service.UseCases of the same names).
type Services struct {
	Certificates CertificateService
	Verifier     httpapi.VerifyService
}

// CertificateService is what the score, certificate and escrow tools call
// (service.Certificates).
type CertificateService interface {
	ScoreFor(ctx context.Context, c service.Caller, agentID string) (ledger.ScoreEntry, error)
	CertificateFor(ctx context.Context, c service.Caller, agentID string) (service.Certificate, error)
	Escrow(ctx context.Context, agentID string, amountCents int64) (service.Escrow, error)
}

// ServicesOf is the groups of u the tools call.
func ServicesOf(u *service.UseCases) Services {
	return Services{Certificates: u.Certificates, Verifier: u.Verifier}
}

// Options configures a server.
type Options struct {
	// Version is the build's version, which the server reports.
	Version string
	// Logger receives the internal errors behind tool errors; nil
	// discards.
	Logger *slog.Logger
}

// FormulaURI is the resource holding the formula and tier rules in words.
const FormulaURI = "swarmscore://formula"

// NewServer returns the MCP server whose tools act for caller: the zero
// Caller is the public, an operator caller may also quote escrow and see
// unlisted agents, an agent's own caller its own data.
func NewServer(svc Services, caller service.Caller, opt Options) *sdk.Server {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	version := opt.Version
	if version == "" {
		version = "dev"
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "swarmscore", Title: "SwarmScore", Version: version}, &sdk.ServerOptions{
		Instructions: "SwarmScore V1 reputation for AI agents: scores (0-1000), trust tiers (NONE, STANDARD, ELITE), escrow holds and signed " +
			"Execution Passports. Read " + FormulaURI + " for the formula.",
	})
	t := tools{svc: svc, caller: caller, log: log}
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}
	addTool[AgentInput, Score](s, &sdk.Tool{Name: "get_score", Title: "Get an agent's score", Annotations: readOnly,
		Description: "An agent's current SwarmScore: score (0-1000), tier, escrow modifier, each dimension's counts and contribution " +
			"(Conduit sessions, AP2 transactions, last 90 days) and what the next tier requires that it lacks. The same as GET /swarmscore/{agent_id}."},
		t.log, t.score)
	addTool[AgentInput, Passport](s, &sdk.Tool{Name: "get_certificate", Title: "Get an agent's signed passport", Annotations: readOnly,
		Description: "An agent's current signed Execution Passport (spec §6.1), as GET /swarmscore/{agent_id}/certificate serves it; " +
			"the text content holds its exact bytes, to pass to verify_passport or to keep."},
		t.log, t.certificate)
	addTool[VerifyInput, Verification](s, &sdk.Tool{Name: "verify_passport", Title: "Verify a passport", Annotations: readOnly,
		Description: "Verify an Execution Passport someone presents: its signature, that its score follows from its counts, its expiry, " +
			"this server's ledger at its computed_at, and (with agent_id) that it belongs to that agent. The same result as POST /swarmscore/verify."},
		t.log, t.verify)
	addTool[EscrowInput, Escrow](s, &sdk.Tool{Name: "quote_escrow", Title: "Quote an escrow hold", Annotations: readOnly,
		Description: "The escrow hold of a payment to an agent at its current score (spec §5), in integer cents, rounded up in the buyer's " +
			"favour; a provider with no history holds the whole amount. An operator's tool (a bearer token over HTTP), as POST /swarmscore/{agent_id}/escrow."},
		t.log, t.escrow)
	addTool[AgentInput, Explanation](s, &sdk.Tool{Name: "explain_score", Title: "Explain an agent's score", Annotations: readOnly,
		Description: "Why an agent has its score and tier, in words: where the points come from, what the next tier needs, and what would lose the current one."},
		t.log, t.explain)
	s.AddResource(&sdk.Resource{URI: FormulaURI, Name: "formula", Title: "The SwarmScore V1 formula and tier rules",
		Description: "How a score, a tier and an escrow modifier are computed, in plain words.", MIMEType: "text/markdown"},
		func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: FormulaURI, MIMEType: "text/markdown", Text: formulaText}}}, nil
		})
	return s
}

// Handler serves the MCP server over streamable HTTP, statelessly (each
// request stands alone, answered in JSON), with the tools acting for the
// request's caller (httpapi.CallerFrom: its bearer token, checked by the
// HTTP server before this handler runs).
func Handler(svc Services, opt Options) http.Handler {
	return sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		return NewServer(svc, httpapi.CallerFrom(r.Context()), opt)
	}, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: opt.Logger,
		// The HTTP server bounds the body and takes requests from any
		// host it is reached by (a reverse proxy's name included).
		DisableLocalhostProtection: true})
}

// ServeIO runs the server over in and out (a process's stdin and stdout:
// newline-delimited JSON-RPC, MCP's stdio transport) until the client
// closes in or ctx ends.
func ServeIO(ctx context.Context, svc Services, caller service.Caller, opt Options, in io.Reader, out io.Writer) error {
	err := NewServer(svc, caller, opt).Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

type tools struct {
	svc    Services
	caller service.Caller
	log    *slog.Logger
}

func ptr[T any](v T) *T { return &v }

// addTool adds a tool whose input and output schemas are inferred from In
// and Out, and whose handler h gets the input validated against its
// schema and decoded, and returns the output (and, optionally, its text
// content) or an error, which becomes the tool error of its problem.
func addTool[In, Out any](s *sdk.Server, t *sdk.Tool, log *slog.Logger, h func(context.Context, In) (Out, string, error)) {
	in, err := jsonschema.For[In](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[RawObject](): {Type: "object"},
	}})
	if err != nil {
		panic(err)
	}
	in.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(err)
	}
	resolved, err := in.Resolve(nil)
	if err != nil {
		panic(err)
	}
	t.InputSchema, t.OutputSchema = in, out
	s.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args := req.Params.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		var generic any
		if err := json.Unmarshal(args, &generic); err != nil {
			return toolError(log, fmt.Errorf("%w: the arguments are not JSON: %v", errkind.ErrInvalid, err)), nil
		}
		if err := resolved.Validate(generic); err != nil {
			return toolError(log, fmt.Errorf("%w: the arguments do not match %s's input schema: %v", errkind.ErrInvalid, t.Name, err)), nil
		}
		var v In
		if err := json.Unmarshal(args, &v); err != nil {
			return toolError(log, fmt.Errorf("%w: the arguments: %v", errkind.ErrInvalid, err)), nil
		}
		o, text, err := h(ctx, v)
		if err != nil {
			return toolError(log, err), nil
		}
		b, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		if text == "" {
			text = string(b)
		}
		return &sdk.CallToolResult{StructuredContent: json.RawMessage(b), Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
	})
}

// toolError is the tool result of err: the HTTP API's problem for it, as
// JSON in its text content and as _meta's ProblemMeta.
func toolError(log *slog.Logger, err error) *sdk.CallToolResult {
	p, level, logged := httpapi.ProblemFor(err)
	if logged {
		log.Log(context.Background(), level, "MCP tool failed", "problem", strings.TrimPrefix(p.Type, api.ProblemBase), "err", err)
	}
	b, _ := json.Marshal(p)
	// Not as structured content, which clients check against the tool's
	// output schema whatever isError says.
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: string(b)}},
		Meta: sdk.Meta{ProblemMeta: p}}
}

// ProblemMeta is the _meta member of a tool error that holds its problem
// (also its text content, as JSON).
const ProblemMeta = "swarmscore.dev/problem"

// via fills out from v's JSON form: an API shape to a tool's output.
func via[T any](v any) (T, error) {
	var out T
	b, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	return out, err
}

func (t tools) score(ctx context.Context, in AgentInput) (Score, string, error) {
	e, err := t.svc.Certificates.ScoreFor(ctx, t.caller, in.AgentID)
	if err != nil {
		return Score{}, "", err
	}
	out, err := via[Score](api.Score{AgentID: in.AgentID, ComputedAt: e.ComputedAt, ExpiresAt: e.ExpiresAt, Result: e.Result})
	return out, "", err
}

func (t tools) certificate(ctx context.Context, in AgentInput) (Passport, string, error) {
	c, err := t.svc.Certificates.CertificateFor(ctx, t.caller, in.AgentID)
	if err != nil {
		return Passport{}, "", err
	}
	var p Passport
	if err := json.Unmarshal(c.Passport, &p); err != nil {
		return Passport{}, "", err
	}
	return p, string(c.Passport), nil
}

func (t tools) verify(ctx context.Context, in VerifyInput) (Verification, string, error) {
	if in.AgentID != "" {
		if err := ledger.CheckID("agent_id", in.AgentID); err != nil {
			return Verification{}, "", err
		}
	}
	v, err := t.svc.Verifier.Verify(ctx, in.Certificate, in.AgentID)
	if err != nil {
		return Verification{}, "", err
	}
	out, err := via[Verification](wire.VerificationOf(&v))
	return out, "", err
}

func (t tools) escrow(ctx context.Context, in EscrowInput) (Escrow, string, error) {
	switch {
	case t.caller.AgentID != "":
		return Escrow{}, "", errkind.WithCode(fmt.Errorf("%w: quote_escrow is an operator's tool; this token belongs to agent %q",
			errkind.ErrForbidden, t.caller.AgentID), "operator_required")
	case !t.caller.IsOperator():
		return Escrow{}, "", errkind.WithCode(fmt.Errorf("%w: quote_escrow is an operator's tool: send an operator token (Authorization: Bearer …), or run swarmscore mcp --operator NAME",
			errkind.ErrUnauthorized), "operator_required")
	case in.AmountCents < 0 || in.AmountCents > ledger.MaxEscrowCents:
		return Escrow{}, "", fmt.Errorf("%w: amount_cents %d is outside 0..%d", errkind.ErrInvalid, in.AmountCents, ledger.MaxEscrowCents)
	}
	e, err := t.svc.Certificates.Escrow(ctx, in.AgentID, in.AmountCents)
	if err != nil {
		return Escrow{}, "", err
	}
	out, err := via[Escrow](api.Escrow{Score: e.Score, EscrowModifier: e.Modifier, HoldCents: e.HoldCents, ReleasedCents: e.ReleasedCents})
	return out, "", err
}

func (t tools) explain(ctx context.Context, in AgentInput) (Explanation, string, error) {
	e, err := t.svc.Certificates.ScoreFor(ctx, t.caller, in.AgentID)
	if err != nil {
		return Explanation{}, "", err
	}
	x := explain(in.AgentID, &e.Result)
	return x, x.Explanation, nil
}
