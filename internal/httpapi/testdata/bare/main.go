// Command bare is the baseline of the HTTP benchmarks (scripts/bench-routes.sh):
// a plain net/http server, no middleware, that answers each measured route
// with the bytes the real server sent for it, read from -dir at start:
//
//	GET  /swarmscore/agent-1/certificate  cert.json   (application/json)
//	GET  /swarmscore/agent-1              score.json  (application/json)
//	GET  /agents/agent-1                  page.html   (text/html)
//	POST /swarmscore/verify               verify.json (application/json), after
//	     reading the body and checking its HMAC-SHA256 under -key against
//	     the MAC of verify-body.json, in constant time (400 if it differs)
//
// It lives under testdata so that `go build ./...` and `go vet ./...`
// skip it; run it with
//
//	go run ./internal/httpapi/testdata/bare -addr 127.0.0.1:18081 -dir DIR -key KEY
package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"flag"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18081", "listen address")
	dir := flag.String("dir", ".", "the directory of the response bodies")
	key := flag.String("key", "", "the HMAC key of the verify route")
	flag.Parse()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(*dir, name))
		if err != nil {
			log.Fatal(err)
		}
		return b
	}
	fixed := func(body []byte, contentType string) http.HandlerFunc {
		n := strconv.Itoa(len(body))
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Content-Length", n)
			w.Write(body)
		}
	}
	mac := hmac.New(sha256.New, []byte(*key))
	mac.Write(read("verify-body.json"))
	want := mac.Sum(nil)
	verified := fixed(read("verify.json"), "application/json")
	mux := http.NewServeMux()
	mux.Handle("GET /swarmscore/agent-1/certificate", fixed(read("cert.json"), "application/json"))
	mux.Handle("GET /swarmscore/agent-1", fixed(read("score.json"), "application/json"))
	mux.Handle("GET /agents/agent-1", fixed(read("page.html"), "text/html; charset=utf-8"))
	mux.HandleFunc("POST /swarmscore/verify", func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		if _, err := body.ReadFrom(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		m := hmac.New(sha256.New, []byte(*key))
		m.Write(body.Bytes())
		if !hmac.Equal(m.Sum(nil), want) {
			http.Error(w, "bad mac", http.StatusBadRequest)
			return
		}
		verified(w, r)
	})
	log.Fatal(http.ListenAndServe(*addr, mux))
}
