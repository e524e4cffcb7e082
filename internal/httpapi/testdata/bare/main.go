// Command bare is the baseline of the HTTP benchmarks: a plain net/http
// server that answers every request with the same bytes the real server
// sends (read from -file), reading and discarding any request body first,
// with the same Content-Type. It lives under testdata so that `go build
// ./...` and `go vet ./...` skip it; run it with
//
//	go run ./internal/httpapi/testdata/bare -addr 127.0.0.1:18081 -file body.json
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18081", "listen address")
	file := flag.String("file", "", "the response body")
	flag.Parse()
	body, err := os.ReadFile(*file)
	if err != nil {
		log.Fatal(err)
	}
	n := strconv.Itoa(len(body))
	log.Fatal(http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", n)
		w.Write(body)
	})))
}
