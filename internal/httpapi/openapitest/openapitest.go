// Package openapitest checks real HTTP exchanges against the API's OpenAPI
// 3.1 document (internal/httpapi/openapi.json): that the operation a
// request takes is documented, that the status it got is one of the
// operation's responses, that the response has the documented media type
// and required headers, and that its body validates against the
// documented schema (JSON Schema 2020-12, the dialect of OpenAPI 3.1, with
// formats asserted). The conformance test of this package runs every route
// of the real server through it.
package openapitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// docURL names the document as a schema resource; its schemas' $refs
// ("#/components/schemas/…") resolve within it.
const docURL = "https://swarmscore.dev/openapi.json"

// Document is a loaded OpenAPI document. It is safe for concurrent use.
type Document struct {
	raw map[string]any
	// ops are the operations by "METHOD /path".
	ops map[string]map[string]any

	mu       sync.Mutex
	compiler *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema
}

// Load reads an OpenAPI document. It fails when the document is not JSON
// or has no paths.
func Load(b []byte) (*Document, error) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("openapitest: %w", err)
	}
	raw, ok := inst.(map[string]any)
	if !ok {
		return nil, errors.New("openapitest: the document is not an object")
	}
	paths, ok := raw["paths"].(map[string]any)
	if !ok || len(paths) == 0 {
		return nil, errors.New("openapitest: the document has no paths")
	}
	d := &Document{raw: raw, ops: map[string]map[string]any{}, schemas: map[string]*jsonschema.Schema{}}
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			o, ok := op.(map[string]any)
			if !ok || method == "parameters" {
				continue
			}
			pattern := strings.ToUpper(method) + " " + path
			d.ops[pattern] = o
		}
	}
	d.compiler = jsonschema.NewCompiler()
	d.compiler.DefaultDraft(jsonschema.Draft2020)
	d.compiler.AssertFormat()
	if err := d.compiler.AddResource(docURL, inst); err != nil {
		return nil, fmt.Errorf("openapitest: %w", err)
	}
	return d, nil
}

// Operations returns every documented operation, "METHOD /path", sorted.
func (d *Document) Operations() []string {
	out := make([]string, 0, len(d.ops))
	for p := range d.ops {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Methods returns the methods documented for path (a template as the
// document writes it), sorted.
func (d *Document) Methods(path string) []string {
	var out []string
	for p := range d.ops {
		if m, tmpl, _ := strings.Cut(p, " "); tmpl == path {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// Responses returns the statuses documented for operation op ("METHOD
// /path"), sorted.
func (d *Document) Responses(op string) []string {
	rs, _ := d.ops[op]["responses"].(map[string]any)
	out := make([]string, 0, len(rs))
	for s := range rs {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Authenticated reports whether operation op documents a security
// requirement with a scheme: it takes a token ({} alone means anonymous).
func (d *Document) Authenticated(op string) bool {
	sec, _ := d.ops[op]["security"].([]any)
	for _, req := range sec {
		if m, _ := req.(map[string]any); len(m) > 0 {
			return true
		}
	}
	return false
}

// Anonymous reports whether operation op may be called without a token:
// its security requirements include the empty one ({}), or it has none.
func (d *Document) Anonymous(op string) bool {
	sec, ok := d.ops[op]["security"].([]any)
	if !ok {
		return true
	}
	for _, req := range sec {
		if m, _ := req.(map[string]any); len(m) == 0 {
			return true
		}
	}
	return false
}

// Operation returns the documented operation a request to method and path
// (as sent, not a template, with any query) takes: HEAD takes GET's. Of
// the templates the path matches, a literal segment is preferred to a
// template expression at the first segment where they differ, as OpenAPI
// prefers concrete paths. It reports false when none matches.
func (d *Document) Operation(method, path string) (string, bool) {
	if method == http.MethodHead {
		method = http.MethodGet
	}
	u, err := url.Parse(path)
	if err != nil {
		return "", false
	}
	segs := strings.Split(u.EscapedPath(), "/")
	for i, s := range segs {
		if segs[i], err = url.PathUnescape(s); err != nil {
			return "", false
		}
	}
	best, bestRank := "", ""
	for op := range d.ops {
		m, tmpl, _ := strings.Cut(op, " ")
		if m != method {
			continue
		}
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		rank := make([]byte, len(ts)) // '1' literal, '0' expression: higher ranks are more specific
		ok := true
		for i, t := range ts {
			switch {
			case strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}"):
				rank[i] = '0'
				ok = ok && segs[i] != ""
			default:
				rank[i] = '1'
				ok = ok && t == segs[i]
			}
		}
		if ok && string(rank) > bestRank {
			best, bestRank = op, string(rank)
		}
	}
	return best, best != ""
}

// Check validates a response to a request of method and path: its status
// is documented for the operation the request takes (a 405, for one of the
// path's operations), its Content-Type is
// one of the response's media types (no body when it documents none), its
// required headers are present and every documented header it carries
// validates, and a JSON body validates against the media type's schema.
// It returns the operation, and an error saying what differs.
func (d *Document) Check(method, path string, status int, h http.Header, body []byte) (string, error) {
	op, ok := d.Operation(method, path)
	if !ok && status == http.StatusMethodNotAllowed {
		// A method the path does not take: its operations document the
		// 405 they all share.
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			if op, ok = d.Operation(m, path); ok {
				break
			}
		}
	}
	if !ok {
		return "", fmt.Errorf("%s %s: no documented operation takes it", method, path)
	}
	rs, _ := d.ops[op]["responses"].(map[string]any)
	code := strconv.Itoa(status)
	resp, ok := rs[code].(map[string]any)
	if !ok {
		return op, fmt.Errorf("%s: status %d is not documented (documented: %s)", op, status, strings.Join(d.Responses(op), ", "))
	}
	loc := "#/paths/" + escape(strings.SplitN(op, " ", 2)[1]) + "/" + strings.ToLower(strings.SplitN(op, " ", 2)[0]) + "/responses/" + code
	if ref, ok := resp["$ref"].(string); ok {
		if resp, ok = d.resolve(ref); !ok {
			return op, fmt.Errorf("%s %d: dangling $ref %s", op, status, ref)
		}
		loc = ref
	}
	if err := d.checkHeaders(op, status, loc, resp, h); err != nil {
		return op, err
	}
	content, _ := resp["content"].(map[string]any)
	if method == http.MethodHead { // net/http sends no body for it
		return op, nil
	}
	if len(content) == 0 {
		if len(body) > 0 {
			return op, fmt.Errorf("%s %d: a body of %d bytes where the document has none", op, status, len(body))
		}
		return op, nil
	}
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		return op, fmt.Errorf("%s %d: Content-Type %q: %v", op, status, h.Get("Content-Type"), err)
	}
	media, ok := content[mt].(map[string]any)
	if !ok {
		var known []string
		for k := range content {
			known = append(known, k)
		}
		slices.Sort(known)
		return op, fmt.Errorf("%s %d: Content-Type %s is not documented (documented: %s)", op, status, mt, strings.Join(known, ", "))
	}
	if _, ok := media["schema"]; !ok || !isJSON(mt) {
		return op, nil
	}
	sch, err := d.schema(loc + "/content/" + escape(mt) + "/schema")
	if err != nil {
		return op, err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return op, fmt.Errorf("%s %d: the %s body is not JSON: %v", op, status, mt, err)
	}
	if err := sch.Validate(inst); err != nil {
		return op, fmt.Errorf("%s %d: the body does not match the document: %v\nbody: %s", op, status, err, clip(body))
	}
	return op, nil
}

// checkHeaders checks the documented headers of a response at loc.
func (d *Document) checkHeaders(op string, status int, loc string, resp map[string]any, h http.Header) error {
	hs, _ := resp["headers"].(map[string]any)
	for name, v := range hs {
		hdr, _ := v.(map[string]any)
		hloc := loc + "/headers/" + escape(name)
		if ref, ok := hdr["$ref"].(string); ok {
			hdr, hloc = nil, ref
			if r, ok := d.resolve(ref); ok {
				hdr = r
			}
		}
		value, present := h[http.CanonicalHeaderKey(name)]
		if !present {
			if req, _ := hdr["required"].(bool); req {
				return fmt.Errorf("%s %d: the required header %s is missing", op, status, name)
			}
			continue
		}
		s, ok := hdr["schema"].(map[string]any)
		if !ok {
			continue
		}
		var inst any = value[0]
		if s["type"] == "integer" || s["type"] == "number" {
			inst = json.Number(value[0])
			if _, err := strconv.ParseFloat(value[0], 64); err != nil {
				return fmt.Errorf("%s %d: header %s is %q, not a number", op, status, name, value[0])
			}
		}
		sch, err := d.schema(hloc + "/schema")
		if err != nil {
			return err
		}
		if err := sch.Validate(inst); err != nil {
			return fmt.Errorf("%s %d: header %s: %v", op, status, name, err)
		}
	}
	return nil
}

// resolve returns the object a local $ref ("#/…") names.
func (d *Document) resolve(ref string) (map[string]any, bool) {
	ptr, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, false
	}
	var v any = d.raw
	for _, tok := range strings.Split(ptr, "/") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		v = m[strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)]
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// schema compiles the schema at loc ("#/…") once.
func (d *Document) schema(loc string) (*jsonschema.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.schemas[loc]; ok {
		return s, nil
	}
	s, err := d.compiler.Compile(docURL + loc)
	if err != nil {
		return nil, fmt.Errorf("openapitest: compiling the schema at %s: %w", loc, err)
	}
	d.schemas[loc] = s
	return s, nil
}

// escape is a JSON pointer token (RFC 6901) of s.
func escape(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }

func isJSON(mt string) bool { return mt == "application/json" || strings.HasSuffix(mt, "+json") }

func clip(b []byte) []byte {
	if len(b) > 2000 {
		return append(b[:2000:2000], "…"...)
	}
	return b
}
