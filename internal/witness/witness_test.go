package witness_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/swarmscore/swarmscore/internal/errkind"
	"github.com/swarmscore/swarmscore/internal/witness"
	"github.com/swarmscore/swarmscore/internal/witness/witnesstest"
)

const origin = "log.test/swarmscore"

func leaves(from, to int) []string {
	var d []string
	for i := from; i < to; i++ {
		d = append(d, "leaf "+strconv.Itoa(i))
	}
	return d
}

func client(t *testing.T, url, vkey string) *witness.Client {
	t.Helper()
	k, err := witness.NewCosignatureVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return &witness.Client{URL: url, Key: k}
}

// checkCosigned checks, with transparency-dev/formats' verifier (not
// ours), that every line stored for w cosigns the log's checkpoint of its
// size, and returns how many there are.
func checkCosigned(t *testing.T, log *witnesstest.Log, sink *witnesstest.Sink, w *witnesstest.Witness) int {
	t.Helper()
	v, err := fnote.NewVerifierForCosignatureV1(w.VKey)
	if err != nil {
		t.Fatal(err)
	}
	cs := sink.Cosignatures(w.Name)
	for _, c := range cs {
		signed, err := log.Note(c.Size)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := note.Open(append(signed, c.Line+"\n"...), note.VerifierList(v, log.Verifier(t))); err != nil {
			t.Errorf("stored cosignature for size %d does not verify with formats/note: %v\n%s", c.Size, err, c.Line)
		}
	}
	return len(cs)
}

func wantError(t *testing.T, err error, kind errkind.Kind, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v %s", kind, code)
	}
	if errkind.Of(err) != kind || errkind.Code(err) != code {
		t.Fatalf("error %v is %v %q, want %v %q", err, errkind.Of(err), errkind.Code(err), kind, code)
	}
}

// TestRealWitness runs the client against transparency-dev/witness: first
// checkpoint, nothing new, growth with a consistency proof, a sink that
// lost its state (409, then the retry), and the refusals: a forked log, an
// unknown origin, a key the witness does not trust, a witness key that is
// not the one configured.
func TestRealWitness(t *testing.T) {
	ctx := context.Background()
	log := witnesstest.NewLog(t, origin)
	w := witnesstest.StartWitness(t, "witness.test/w1", map[string]note.Verifier{origin: log.Verifier(t)})
	c := client(t, w.URL, w.VKey)
	sink := &witnesstest.Sink{}

	log.Append(leaves(0, 3)...)
	r, err := c.Submit(ctx, log, sink)
	if err != nil {
		t.Fatal(err)
	}
	if r.Witness != w.Name || r.Size != 3 || r.Old != 0 || r.Attempts != 1 || r.Unchanged || len(r.Cosignatures) != 1 {
		t.Fatalf("first submission: %+v", r)
	}
	if n := checkCosigned(t, log, sink, w); n != 1 {
		t.Fatalf("%d cosignatures stored, want 1", n)
	}
	ts, err := witness.CosignatureTime(r.Cosignatures[0])
	if err != nil || time.Since(ts) > time.Minute || time.Until(ts) > time.Minute {
		t.Fatalf("cosignature time %v, %v; want now", ts, err)
	}

	r, err = c.Submit(ctx, log, sink)
	if err != nil || !r.Unchanged || r.Attempts != 0 {
		t.Fatalf("nothing new: %+v, %v", r, err)
	}

	log.Append(leaves(3, 8)...)
	r, err = c.Submit(ctx, log, sink)
	if err != nil || r.Old != 3 || r.Size != 8 || r.Attempts != 1 {
		t.Fatalf("growth: %+v, %v", r, err)
	}

	// A sink that lost its cosignatures: old 0, the witness answers 409
	// with 8, the retry sends the proof from 8.
	log.Append(leaves(8, 11)...)
	fresh := &witnesstest.Sink{}
	r, err = c.Submit(ctx, log, fresh)
	if err != nil || r.Old != 8 || r.Size != 11 || r.Attempts != 2 {
		t.Fatalf("after a lost state: %+v, %v", r, err)
	}
	// Again, at the size the witness holds: the retry sends old = size
	// and no proof, and the witness cosigns the same root anew.
	fresh = &witnesstest.Sink{}
	r, err = c.Submit(ctx, log, fresh)
	if err != nil || r.Old != 11 || r.Size != 11 || r.Attempts != 2 || len(r.Cosignatures) != 1 {
		t.Fatalf("same size after a lost state: %+v, %v", r, err)
	}
	if n := checkCosigned(t, log, sink, w) + checkCosigned(t, log, fresh, w); n != 3 {
		t.Fatalf("%d cosignatures, want 3", n)
	}

	// The first sink catches up: old 8 is stale, the witness holds 11.
	r, err = c.Submit(ctx, log, sink)
	if err != nil || r.Old != 11 || r.Size != 11 || r.Attempts != 2 {
		t.Fatalf("catching up: %+v, %v", r, err)
	}

	// Forks: the same origin and key, another leaf at index 2.
	t.Run("fork", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			size int
			sink *witnesstest.Sink
		}{
			{"larger, from the cosigned size", 14, sink},     // 422
			{"larger, after a 409", 14, &witnesstest.Sink{}}, // 409, then 422
			{"same size", 11, &witnesstest.Sink{}},           // 409, then 422 (another root)
			{"smaller", 5, &witnesstest.Sink{}},              // 409 with a larger size
			{"smaller than the cosigned size", 5, sink},      // no request
		} {
			t.Run(tc.name, func(t *testing.T) {
				fork := log.Fork(t)
				fork.Append(leaves(0, 2)...)
				fork.Append("a rewritten leaf")
				fork.Append(leaves(3, tc.size)...)
				before := len(tc.sink.Cosignatures(w.Name))
				_, err := c.Submit(ctx, fork, tc.sink)
				wantError(t, err, errkind.Conflict, witness.CodeInconsistent)
				if len(tc.sink.Cosignatures(w.Name)) != before {
					t.Fatal("a cosignature was stored for a refused checkpoint")
				}
			})
		}
	})

	t.Run("unknown origin", func(t *testing.T) {
		other := witnesstest.NewLog(t, "other.test/log")
		other.Append("x")
		_, err := c.Submit(ctx, other, &witnesstest.Sink{})
		wantError(t, err, errkind.NotFound, witness.CodeUnknownLog)
	})
	t.Run("untrusted log key", func(t *testing.T) {
		impostor := witnesstest.NewLog(t, origin)
		impostor.Append(leaves(0, 20)...)
		s := &witnesstest.Sink{}
		_, err := c.Submit(ctx, impostor, s)
		// tlog-witness says 403; transparency-dev/witness answers 500 (its
		// handler does not map the failed signature check), which the
		// client takes for an unavailable witness. Either way nothing is
		// cosigned; the 403 itself is TestRequestAndAnswers'.
		if errkind.Code(err) != witness.CodeForbidden {
			wantError(t, err, errkind.Unavailable, witness.CodeUnavailable)
		}
		if len(s.Cosignatures(w.Name)) != 0 {
			t.Fatal("stored a cosignature for an untrusted checkpoint")
		}
	})
	t.Run("another witness key", func(t *testing.T) {
		_, vkey, err := note.GenerateKey(rand.Reader, w.Name)
		if err != nil {
			t.Fatal(err)
		}
		cv, err := fnote.VKeyToCosignatureV1(vkey)
		if err != nil {
			t.Fatal(err)
		}
		log.Append("more")
		s := &witnesstest.Sink{}
		_, err = client(t, w.URL, cv).Submit(ctx, log, s)
		wantError(t, err, errkind.Unknown, witness.CodeBadCosignature)
		if len(s.Cosignatures(w.Name)) != 0 {
			t.Fatal("stored a cosignature by another key")
		}
	})
}

// handKey is a witness key made here, with crypto/ed25519 alone, to sign
// cosignatures by hand: at any time, over any text.
type handKey struct {
	name string
	priv ed25519.PrivateKey
	vkey string
}

func newHandKey(t *testing.T, name string) handKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	typed := append([]byte{0x04}, pub...)
	h := sha256.Sum256(append([]byte(name+"\n"), typed...))
	return handKey{name, priv, fmt.Sprintf("%s+%08x+%s", name, binary.BigEndian.Uint32(h[:4]), base64.StdEncoding.EncodeToString(typed))}
}

// line signs text (a checkpoint's lines with their final newline) at time
// ts, as C2SP tlog-cosignature's example shows the message.
func (k handKey) line(text string, ts uint64) string {
	msg := "cosignature/v1\ntime " + strconv.FormatUint(ts, 10) + "\n" + text
	sig := binary.BigEndian.AppendUint64(nil, ts)
	sig = append(sig, ed25519.Sign(k.priv, []byte(msg))...)
	pub := k.priv.Public().(ed25519.PublicKey)
	h := sha256.Sum256(append([]byte(k.name+"\n\x04"), pub...))
	return "— " + k.name + " " + base64.StdEncoding.EncodeToString(append(h[:4:4], sig...))
}

func noteText(signed []byte) string {
	s := string(signed)
	return s[:strings.LastIndex(s, "\n\n")+1]
}

// fake is a witness whose answers the test writes; it records the bodies
// it was sent.
type fake struct {
	mu     sync.Mutex
	bodies []string
	answer func(n int, body string, w http.ResponseWriter)
}

func (f *fake) start(t *testing.T) string {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /add-checkpoint", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies = append(f.bodies, string(b))
		n := len(f.bodies)
		f.mu.Unlock()
		f.answer(n, string(b), w)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func sizeAnswer(w http.ResponseWriter, size string) {
	w.Header().Set("Content-Type", "text/x.tlog.size")
	w.WriteHeader(http.StatusConflict)
	io.WriteString(w, size)
}

// TestRequestAndAnswers checks the request to the byte and each answer a
// witness may give, from a witness whose answers the test writes.
func TestRequestAndAnswers(t *testing.T) {
	ctx := context.Background()
	log := witnesstest.NewLog(t, origin)
	log.Append(leaves(0, 5)...)
	k := newHandKey(t, "witness.test/hand")
	signed5, _ := log.Note(5)
	text5 := noteText(signed5)
	now := uint64(time.Now().Unix())

	t.Run("request bytes", func(t *testing.T) {
		f := &fake{answer: func(_ int, body string, w http.ResponseWriter) {
			_, cp, _ := strings.Cut(body, "\n\n")
			io.WriteString(w, k.line(noteText([]byte(cp)), now)+"\n")
		}}
		c := client(t, f.start(t), k.vkey)
		sink := &witnesstest.Sink{}
		if _, err := c.Submit(ctx, log, sink); err != nil {
			t.Fatal(err)
		}
		if want := "old 0\n\n" + string(signed5); f.bodies[0] != want {
			t.Fatalf("first request\n%q\nwant\n%q", f.bodies[0], want)
		}
		big := witnesstest.NewLog(t, origin)
		big.Append(leaves(0, 1000)...)
		sink2 := &witnesstest.Sink{}
		if err := sink2.StoreCosignature(ctx, 5, k.name, "— stored before"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Submit(ctx, big, sink2); err != nil {
			t.Fatal(err)
		}
		head, cp, ok := strings.Cut(f.bodies[1], "\n\n")
		signed1000, _ := big.Note(1000)
		if !ok || cp != string(signed1000) {
			t.Fatalf("second request's checkpoint %q", cp)
		}
		lines := strings.Split(head, "\n")
		if lines[0] != "old 5" || len(lines) < 2 {
			t.Fatalf("second request's head %q", head)
		}
		var p [][]byte
		for _, l := range lines[1:] {
			h, err := base64.StdEncoding.DecodeString(l)
			if err != nil || len(h) != 32 {
				t.Fatalf("proof line %q", l)
			}
			p = append(p, h)
		}
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, 5, 1000, p, big.Root(5), big.Root(1000)); err != nil {
			t.Fatalf("the proof sent does not verify: %v", err)
		}
	})

	for _, tc := range []struct {
		name   string
		answer func(n int, w http.ResponseWriter)
		kind   errkind.Kind
		code   string
		stored int
	}{
		{"a cosignature and one of an unknown key", func(_ int, w http.ResponseWriter) {
			other := newHandKey(t, "witness.test/other")
			io.WriteString(w, other.line(text5, now)+"\n"+k.line(text5, now)+"\n")
		}, 0, "", 1},
		{"dated 5 minutes ahead", func(_ int, w http.ResponseWriter) {
			io.WriteString(w, k.line(text5, now+300)+"\n")
		}, 0, "", 1},
		{"dated an hour ahead", func(_ int, w http.ResponseWriter) {
			io.WriteString(w, k.line(text5, now+3600)+"\n")
		}, errkind.Unknown, witness.CodeBadCosignature, 0},
		{"over another text", func(_ int, w http.ResponseWriter) {
			io.WriteString(w, k.line(strings.Replace(text5, "\n5\n", "\n6\n", 1), now)+"\n")
		}, errkind.Unknown, witness.CodeBadCosignature, 0},
		{"only an unknown key's", func(_ int, w http.ResponseWriter) {
			io.WriteString(w, newHandKey(t, "witness.test/other").line(text5, now)+"\n")
		}, errkind.Unknown, witness.CodeBadCosignature, 0},
		{"no final newline", func(_ int, w http.ResponseWriter) {
			io.WriteString(w, k.line(text5, now))
		}, errkind.Unknown, witness.CodeBadCosignature, 0},
		{"empty", func(_ int, w http.ResponseWriter) {}, errkind.Unknown, witness.CodeBadCosignature, 0},
		{"not signature lines", func(_ int, w http.ResponseWriter) {
			io.WriteString(w, "ok\n")
		}, errkind.Unknown, witness.CodeBadCosignature, 0},
		{"409 then the same size again (another root)", func(_ int, w http.ResponseWriter) {
			sizeAnswer(w, "5\n")
		}, errkind.Conflict, witness.CodeInconsistent, 0},
		{"409 with a larger size", func(_ int, w http.ResponseWriter) {
			sizeAnswer(w, "6\n")
		}, errkind.Conflict, witness.CodeInconsistent, 0},
		{"409 moving on", func(n int, w http.ResponseWriter) {
			sizeAnswer(w, strconv.Itoa(n)+"\n")
		}, errkind.Unavailable, witness.CodeUnavailable, 0},
		{"409 without its type", func(_ int, w http.ResponseWriter) {
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, "3\n")
		}, errkind.Unknown, "", 0},
		{"409 with a leading zero", func(_ int, w http.ResponseWriter) {
			sizeAnswer(w, "03\n")
		}, errkind.Unknown, "", 0},
		{"409 without a newline", func(_ int, w http.ResponseWriter) {
			sizeAnswer(w, "3")
		}, errkind.Unknown, "", 0},
		{"400", func(_ int, w http.ResponseWriter) { w.WriteHeader(400) }, errkind.Invalid, witness.CodeBadRequest, 0},
		{"403", func(_ int, w http.ResponseWriter) { w.WriteHeader(403) }, errkind.Forbidden, witness.CodeForbidden, 0},
		{"404", func(_ int, w http.ResponseWriter) { w.WriteHeader(404) }, errkind.NotFound, witness.CodeUnknownLog, 0},
		{"422", func(_ int, w http.ResponseWriter) { w.WriteHeader(422) }, errkind.Conflict, witness.CodeInconsistent, 0},
		{"429", func(_ int, w http.ResponseWriter) { w.WriteHeader(429) }, errkind.Unavailable, witness.CodeUnavailable, 0},
		{"503", func(_ int, w http.ResponseWriter) { w.WriteHeader(503) }, errkind.Unavailable, witness.CodeUnavailable, 0},
		{"418", func(_ int, w http.ResponseWriter) { w.WriteHeader(418) }, errkind.Unknown, "", 0},
		{"an endless answer", func(_ int, w http.ResponseWriter) {
			io.WriteString(w, strings.Repeat(k.line(text5, now)+"\n", 1000))
		}, errkind.Unknown, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{answer: func(n int, _ string, w http.ResponseWriter) { tc.answer(n, w) }}
			c := client(t, f.start(t), k.vkey)
			sink := &witnesstest.Sink{}
			r, err := c.Submit(ctx, log, sink)
			if tc.stored > 0 {
				if err != nil {
					t.Fatal(err)
				}
				cs := sink.Cosignatures(k.name)
				if len(cs) != tc.stored || len(r.Cosignatures) != tc.stored || cs[0].Size != 5 || !strings.HasPrefix(cs[0].Line, "— "+k.name+" ") {
					t.Fatalf("stored %+v, result %+v", cs, r)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; result %+v", r)
			}
			if errkind.Of(err) != tc.kind || errkind.Code(err) != tc.code {
				t.Fatalf("error %v is %v %q, want %v %q", err, errkind.Of(err), errkind.Code(err), tc.kind, tc.code)
			}
			if len(sink.Cosignatures(k.name)) != 0 {
				t.Fatal("stored a cosignature")
			}
		})
	}

	t.Run("a witness that lost its state", func(t *testing.T) {
		// The sink says 3; a witness holding nothing answers 409 with 0
		// (tlog-witness: the old size must be 0 when it never cosigned),
		// and the retry sends old 0 without a proof.
		f := &fake{answer: func(n int, _ string, w http.ResponseWriter) {
			if n == 1 {
				sizeAnswer(w, "0\n")
				return
			}
			io.WriteString(w, k.line(text5, now)+"\n")
		}}
		sink := &witnesstest.Sink{}
		if err := sink.StoreCosignature(ctx, 3, k.name, "— stored before"); err != nil {
			t.Fatal(err)
		}
		r, err := client(t, f.start(t), k.vkey).Submit(ctx, log, sink)
		if err != nil || r.Old != 0 || r.Attempts != 2 {
			t.Fatalf("%+v, %v", r, err)
		}
		if !strings.HasPrefix(f.bodies[0], "old 3\n") || strings.Count(strings.SplitN(f.bodies[0], "\n\n", 2)[0], "\n") < 1 {
			t.Fatalf("first request %q: want old 3 and a proof", f.bodies[0])
		}
		if want := "old 0\n\n" + string(signed5); f.bodies[1] != want {
			t.Fatalf("retry %q, want %q", f.bodies[1], want)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		_, err := client(t, srv.URL, k.vkey).Submit(ctx, log, &witnesstest.Sink{})
		wantError(t, err, errkind.Unavailable, witness.CodeUnavailable)
	})
	t.Run("the sink's error", func(t *testing.T) {
		f := &fake{answer: func(_ int, _ string, w http.ResponseWriter) { io.WriteString(w, k.line(text5, now)+"\n") }}
		boom := errors.New("boom")
		_, err := client(t, f.start(t), k.vkey).Submit(ctx, log, &witnesstest.Sink{Err: boom})
		if !errors.Is(err, boom) {
			t.Fatalf("error %v, want the sink's", err)
		}
	})
}

// TestCosignatureVerifier checks ours against transparency-dev/formats'
// cosigner, and the keys and signatures it must refuse.
func TestCosignatureVerifier(t *testing.T) {
	skey, vkey, err := note.GenerateKey(rand.Reader, "witness.test/w1")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	cvkey, err := fnote.VKeyToCosignatureV1(vkey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := witness.NewCosignatureVerifier(cvkey)
	if err != nil {
		t.Fatal(err)
	}
	if v.Name() != "witness.test/w1" || v.KeyHash() != signer.KeyHash() {
		t.Fatalf("name %q hash %08x, want %08x", v.Name(), v.KeyHash(), signer.KeyHash())
	}
	text := "log.test/x\n7\n" + base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\nan extension line\n"
	signed, err := note.Sign(&note.Note{Text: text}, signer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(signed, note.VerifierList(v)); err != nil {
		t.Fatalf("formats/note's cosignature does not verify: %v", err)
	}
	// The same signature over another text, or with its time changed.
	if _, err := note.Open([]byte(strings.Replace(string(signed), "\n7\n", "\n8\n", 1)), note.VerifierList(v)); err == nil {
		t.Fatal("verified over another text")
	}
	n, _ := note.Open(signed, note.VerifierList(v))
	raw, _ := base64.StdEncoding.DecodeString(n.Sigs[0].Base64)
	raw[4+7]++
	if v.Verify([]byte(text), raw[4:]) {
		t.Fatal("verified with another time")
	}
	if v.Verify([]byte(text), raw[4:70]) {
		t.Fatal("verified a short signature")
	}

	// A timestamp above 2^63-1, validly signed, is refused.
	k := newHandKey(t, "witness.test/hand")
	hv, err := witness.NewCosignatureVerifier(k.vkey)
	if err != nil {
		t.Fatal(err)
	}
	for ts, ok := range map[uint64]bool{1 << 62: true, 1<<63 - 1: true, 1 << 63: false} {
		l := k.line(text, ts)
		_, b64, _ := strings.Cut(strings.TrimPrefix(l, "— "), " ")
		sig, _ := base64.StdEncoding.DecodeString(b64)
		if hv.Verify([]byte(text), sig[4:]) != ok {
			t.Errorf("time %d: verified %v, want %v", ts, !ok, ok)
		}
	}
	if got, err := witness.CosignatureTime(k.line(text, 1679315147)); err != nil || !got.Equal(time.Unix(1679315147, 0)) {
		t.Fatalf("CosignatureTime %v, %v", got, err)
	}

	for name, bad := range map[string]string{
		"an ordinary note key (0x01)": vkey,
		"another key id":              strings.Replace(cvkey, "+", "+0", 1)[:len(cvkey)],
		"no key id":                   "witness.test/w1+" + strings.SplitN(cvkey, "+", 3)[2],
		"a name with a space":         strings.Replace(cvkey, "witness.test/w1", "witness test", 1),
		"a short key":                 strings.TrimSuffix(cvkey, "=") + "AA==",
		"not base64":                  cvkey + "!",
		"empty":                       "",
	} {
		if _, err := witness.NewCosignatureVerifier(bad); errkind.Of(err) != errkind.Invalid {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
}

// TestRun runs rounds against the real witness: a witness down at first is
// retried, each new checkpoint is cosigned, and cancelling stops it
// cleanly; a witness that refuses the log stops it with the refusal.
func TestRun(t *testing.T) {
	log := witnesstest.NewLog(t, origin)
	w := witnesstest.StartWitness(t, "witness.test/w1", map[string]note.Verifier{origin: log.Verifier(t)})
	down := true
	proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if down {
			down = false
			rw.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, w.URL+r.URL.Path, r.Body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			rw.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			rw.Header()[k] = v
		}
		rw.WriteHeader(resp.StatusCode)
		io.Copy(rw, resp.Body)
	}))
	defer proxy.Close()
	c := client(t, proxy.URL, w.VKey)
	sink := &witnesstest.Sink{}
	log.Append(leaves(0, 4)...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rounds []string
	err := c.Run(ctx, log, sink, 5*time.Millisecond, func(r witness.Result, err error) {
		switch {
		case err != nil:
			rounds = append(rounds, errkind.Code(err))
		case r.Unchanged:
			rounds = append(rounds, "unchanged")
			if log.Size() < 12 {
				log.Append(leaves(int(log.Size()), int(log.Size())+4)...)
			} else {
				cancel()
			}
		default:
			rounds = append(rounds, fmt.Sprintf("%d->%d", r.Old, r.Size))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "witness_unavailable 0->4 unchanged 4->8 unchanged 8->12 unchanged"
	if got := strings.Join(rounds, " "); got != want {
		t.Fatalf("rounds %q, want %q", got, want)
	}
	if n := checkCosigned(t, log, sink, w); n != 3 {
		t.Fatalf("%d cosignatures, want 3", n)
	}

	other := witnesstest.NewLog(t, "other.test/log")
	other.Append("x")
	err = c.Run(context.Background(), other, &witnesstest.Sink{}, time.Millisecond, func(witness.Result, error) {})
	wantError(t, err, errkind.NotFound, witness.CodeUnknownLog)
	if err := c.Run(context.Background(), log, sink, 0, nil); errkind.Of(err) != errkind.Invalid {
		t.Fatalf("interval 0: %v", err)
	}
}
