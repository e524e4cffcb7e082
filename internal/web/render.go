package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

//go:embed templates/*.html templates/*.svg
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// templates holds one template set per page: the layout plus the page's
// "content", parsed once at start.
var templates = func() map[string]*template.Template {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" {
			continue
		}
		out[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n))
	}
	badge := template.Must(template.New("badge.svg").Funcs(funcs).ParseFS(templateFS, "templates/badge.svg"))
	out["badge"] = badge
	return out
}()

// asset is an embedded file with its digest, so that pages can link to
// it under a URL that changes when it does and caches may keep it forever.
type asset struct {
	body        []byte
	contentType string
	version     string
}

var assets = func() map[string]asset {
	entries, err := fs.ReadDir(assetFS, "assets")
	if err != nil {
		panic(err)
	}
	out := map[string]asset{}
	for _, e := range entries {
		b, err := fs.ReadFile(assetFS, "assets/"+e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(b)
		out[e.Name()] = asset{body: b, contentType: mime.TypeByExtension(path.Ext(e.Name())), version: hex.EncodeToString(sum[:6])}
	}
	return out
}()

// assetURL is the versioned URL of an embedded asset.
func assetURL(name string) string { return "/assets/" + name + "?v=" + assets[name].version }

// asset serves an embedded file. With the current version in the query it
// may be cached for a year (the URL changes with the content); otherwise
// it is revalidated.
func (p *Pages) asset(w http.ResponseWriter, r *http.Request) {
	a, ok := assets[r.PathValue("name")]
	if !ok {
		p.errorPage(w, r, http.StatusNotFound, "Page not found", "There is no such file.")
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("ETag", `"`+a.version+`"`)
	if r.URL.Query().Get("v") == a.version {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	if r.Header.Get("If-None-Match") == `"`+a.version+`"` {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(a.body)))
	w.Write(a.body)
}

type nonceKey struct{}

// secure sets the security headers every response of the site carries,
// with a fresh script nonce, before the handler runs.
func (p *Pages) secure(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		nonce := newNonce()
		securityHeaders(w.Header(), nonce, p.host.SecureRequest(r))
		h(w, r.WithContext(context.WithValue(r.Context(), nonceKey{}, nonce)))
	}
}

// securityHeaders are the same on every response. The policy allows this
// origin's stylesheet and images (inline SVG is markup, not an image
// load), scripts only with the response's nonce, forms posting only here,
// and no framing by anyone.
func securityHeaders(h http.Header, nonce string, https bool) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'self'; img-src 'self'; "+
		"form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()")
	if https {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
}

func nonceOf(r *http.Request) string {
	n, _ := r.Context().Value(nonceKey{}).(string)
	return n
}

// view is what the layout needs; Data is the page's own.
type view struct {
	Title string
	// Section names the navigation entry to mark as current.
	Section string
	Nonce   string
	// Console is set on operator pages: the signed-in operator, the
	// session's CSRF token and the console's navigation.
	Console *consoleView
	Data    any
}

var bufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// render executes a page into a buffer first, so a template failure is a
// clean 500 rather than half a page, and the length is known.
func (p *Pages) render(w http.ResponseWriter, r *http.Request, status int, name string, v view) {
	v.Nonce = nonceOf(r)
	buf := bufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufs.Put(buf)
	if err := templates[name].ExecuteTemplate(buf, "layout", v); err != nil {
		p.log.Error("rendering a page", "page", name, "request_id", w.Header().Get("X-Request-Id"), "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-cache")
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(buf.Bytes())
	}
}

// renderedPages bounds the pages a process keeps rendered (about 15 KB
// each, so at most ≈ 15 MB).
const renderedPages = 1000

// pageCache keeps public pages rendered, each under a key naming every
// input of its view, with the response's script nonce cut out: serving
// one again costs its bytes and the request's nonce, not html/template's
// reflection (≈ 2,000 allocations for an agent page). The zero value is
// ready; safe for concurrent use.
type pageCache struct {
	mu sync.RWMutex
	m  map[string]*renderedPage
}

// renderedPage is a page split where the nonce goes: parts[0], nonce,
// parts[1], …; never modified once stored.
type renderedPage struct {
	parts [][]byte
	size  int // of the parts together
}

// placeholderNonce stands for the nonce while a cached page is rendered.
// It has a real nonce's form (22 base64url characters, which no escaper
// changes), and 128 random bits, so it appears in the page only where the
// template put the nonce.
var placeholderNonce = newNonce()

func newNonce() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// renderCached answers as render does with status 200, from the page
// cached under key when there is one; otherwise it renders v, caches the
// page and serves it. key must determine the whole page but its nonce:
// the caller names in it every value its view is built from.
func (p *Pages) renderCached(w http.ResponseWriter, r *http.Request, key, name string, build func() view) {
	p.pages.mu.RLock()
	page := p.pages.m[key]
	p.pages.mu.RUnlock()
	if page == nil {
		v := build()
		v.Nonce = placeholderNonce
		buf := bufs.Get().(*bytes.Buffer)
		buf.Reset()
		defer bufs.Put(buf)
		if err := templates[name].ExecuteTemplate(buf, "layout", v); err != nil {
			p.log.Error("rendering a page", "page", name, "request_id", w.Header().Get("X-Request-Id"), "err", err)
			http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
			return
		}
		page = &renderedPage{parts: bytes.Split(bytes.Clone(buf.Bytes()), []byte(placeholderNonce))}
		for _, part := range page.parts {
			page.size += len(part)
		}
		p.pages.put(key, page)
	}
	nonce := nonceOf(r)
	size := page.size + (len(page.parts)-1)*len(nonce)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(size))
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-cache")
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	out := bufs.Get().(*bytes.Buffer)
	out.Reset()
	defer bufs.Put(out)
	out.Grow(size)
	for i, part := range page.parts {
		if i > 0 {
			out.WriteString(nonce)
		}
		out.Write(part)
	}
	w.Write(out.Bytes())
}

// put stores a page; when the cache is full, an arbitrary other page is
// dropped (it is rendered again when asked for).
func (c *pageCache) put(key string, page *renderedPage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*renderedPage)
	}
	for k := range c.m {
		if len(c.m) < renderedPages {
			break
		}
		delete(c.m, k)
	}
	c.m[key] = page
}

type errorView struct {
	Status    int
	Heading   string
	Message   string
	RequestID string
}

// errorPage answers with a page saying what went wrong, for people.
func (p *Pages) errorPage(w http.ResponseWriter, r *http.Request, status int, heading, message string) {
	w.Header().Set("Cache-Control", "no-store")
	p.render(w, r, status, "error", view{Title: heading, Data: errorView{
		Status: status, Heading: heading, Message: message, RequestID: w.Header().Get("X-Request-Id"),
	}})
}

// fail renders a use case's error as an error page (pageError); notFound,
// when not empty, says what was not found in the page's own words.
func (p *Pages) fail(w http.ResponseWriter, r *http.Request, err error, notFound string) {
	if p.host.ClientGone(w, r, err) {
		return
	}
	status, heading, message := pageError(err)
	if status == http.StatusNotFound && notFound != "" {
		message = notFound
	}
	if status == http.StatusServiceUnavailable {
		p.host.PageUnavailable(w, r, err)
		if w.Header().Get("Retry-After") == "" {
			w.Header().Set("Retry-After", "2") // the API's answer to the same
		}
	}
	if status == http.StatusInternalServerError {
		p.log.Error("internal error", "request_id", w.Header().Get("X-Request-Id"), "method", r.Method, "path", r.URL.Path, "err", err)
	}
	p.errorPage(w, r, status, heading, message)
}

// pageError is the one place the pages map an error kind to a status and
// words for people. Statuses are those of the API's problems for the same
// kinds. Messages are fixed: a use case's own message may name internals
// (a layer, a host), which belong in the log.
func pageError(err error) (status int, heading, message string) {
	switch errkind.Of(err) {
	case errkind.Invalid:
		return http.StatusBadRequest, "That request is not valid", "Check the address or the form and try again."
	case errkind.NotFound:
		return http.StatusNotFound, "Not found", "There is nothing here."
	case errkind.Conflict:
		return http.StatusConflict, "Conflict", "That conflicts with what is recorded."
	case errkind.Unauthorized:
		return http.StatusUnauthorized, "Sign-in needed", "Sign in with an operator token."
	case errkind.Forbidden:
		return http.StatusForbidden, "Not allowed", "Your token does not allow this."
	case errkind.Unavailable:
		return http.StatusServiceUnavailable, "Temporarily unavailable", "The service cannot reach its database right now. Try again in a moment."
	}
	return http.StatusInternalServerError, "Something went wrong", "The server failed to handle this request. If it keeps happening, tell the operator the request id below."
}
