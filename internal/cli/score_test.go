package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/swarmscore/swarmscore/score"
)

func countArgs(ct, cs, at, as string) []string {
	return []string{"--conduit-total", ct, "--conduit-success", cs, "--ap2-total", at, "--ap2-success", as}
}

func TestScore(t *testing.T) {
	sc := func(extra ...string) []string { return append([]string{"score"}, extra...) }
	runCases(t, []cliCase{
		{name: "score-text", args: sc(countArgs("80", "76", "40", "38")...), code: ExitOK},
		{name: "score-json", args: sc(append(countArgs("80", "76", "40", "38"), "--json")...), code: ExitOK},
		{name: "score-text-elite", args: sc(countArgs("250", "249", "120", "119")...), code: ExitOK},
		{name: "score-text-none", args: sc(countArgs("3", "1", "0", "0")...), code: ExitOK},
		{name: "score-json-zero", args: sc(append(countArgs("0", "0", "0", "0"), "--json")...), code: ExitOK},
		{name: "score-missing-flags", args: sc("--conduit-total", "80", "--json"), code: ExitUsage},
		{name: "score-not-integer", args: sc(countArgs("80", "7.5", "40", "38")...), code: ExitUsage},
		{name: "score-out-of-range", args: sc(countArgs("9223372036854775808", "1", "40", "38")...), code: ExitUsage},
		{name: "score-negative", args: sc(countArgs("80", "76", "-1", "0")...), code: ExitUsage},
		{name: "score-success-above-total", args: sc(countArgs("80", "81", "40", "38")...), code: ExitUsage},
		{name: "score-positional-arg", args: sc(append(countArgs("80", "76", "40", "38"), "extra")...), code: ExitUsage},
		{name: "score-batch-with-counts", args: sc("--batch", "--conduit-total", "1"), code: ExitUsage},
	})
}

// TestScoreJSONMatchesLibrary checks the --json output against the library's
// own encoding of score.Compute for a spread of inputs, independently of the
// golden files.
func TestScoreJSONMatchesLibrary(t *testing.T) {
	for _, q := range [][4]int64{{80, 76, 40, 38}, {0, 0, 0, 0}, {100, 100, 50, 50}, {1 << 40, 1<<40 - 7, 99, 98}} {
		c := score.Counts{ConduitTotal: q[0], ConduitSuccess: q[1], AP2Total: q[2], AP2Success: q[3]}
		r := run(t, nil, nil, append([]string{"score", "--json"}, countArgs(fmt.Sprint(c.ConduitTotal), fmt.Sprint(c.ConduitSuccess), fmt.Sprint(c.AP2Total), fmt.Sprint(c.AP2Success))...)...)
		want, _ := score.Compute(c)
		if r.code != ExitOK || r.stdout != string(want.AppendJSON(nil))+"\n" {
			t.Fatalf("%+v: %+v", c, r)
		}
	}
}

func TestScoreBatch(t *testing.T) {
	line := func(ct, cs, at, as int64) string {
		return fmt.Sprintf(`{"conduit_total":%d,"conduit_success":%d,"ap2_total":%d,"ap2_success":%d}`, ct, cs, at, as)
	}
	ok := line(80, 76, 40, 38) + "\n"
	runCases(t, []cliCase{
		{name: "batch-ok", args: []string{"score", "--batch"}, code: ExitOK, stdin: ok +
			"\n" + // blank lines are skipped but counted
			"  {\"ap2_success\": 0, \"ap2_total\": 0, \"conduit_success\": 0, \"conduit_total\": 0}\r\n" +
			"{\"conduit\\u005ftotal\":100,\"conduit_success\":100,\"ap2_total\":50,\"ap2_success\":50}\n" +
			"   \t\n" +
			line(1234, 1200, 567, 561)}, // no final newline
		{name: "batch-empty-input", args: []string{"score", "--batch"}, code: ExitOK},
		{name: "batch-json-flag-accepted", args: []string{"score", "--batch", "--json"}, stdin: ok, code: ExitOK},
		{name: "batch-unknown-field", args: []string{"score", "--batch"}, code: ExitFailure, stdin: ok + "\n" +
			`{"conduit_total":1,"conduit_success":1,"ap2_total":1,"ap2_success":1,"extra":2}` + "\n" + ok},
		{name: "batch-case-differs", args: []string{"score", "--batch"}, code: ExitFailure, stdin: `{"Conduit_Total":1,"conduit_success":1,"ap2_total":1,"ap2_success":1}` + "\n"},
		{name: "batch-duplicate-field", args: []string{"score", "--batch"}, code: ExitFailure, stdin: ok +
			`{"conduit_total":1,"conduit_success":1,"ap2_total":1,"ap2_success":1,"conduit_total":2}` + "\n"},
		{name: "batch-missing-field", args: []string{"score", "--batch"}, code: ExitFailure, stdin: `{"conduit_total":1,"conduit_success":1,"ap2_total":1}` + "\n"},
		{name: "batch-fraction", args: []string{"score", "--batch"}, code: ExitFailure, stdin: `{"conduit_total":1.0,"conduit_success":1,"ap2_total":1,"ap2_success":1}` + "\n"},
		{name: "batch-exponent", args: []string{"score", "--batch"}, code: ExitFailure, stdin: `{"conduit_total":1e2,"conduit_success":1,"ap2_total":1,"ap2_success":1}` + "\n"},
		{name: "batch-string-value", args: []string{"score", "--batch"}, code: ExitFailure, stdin: `{"conduit_total":"80","conduit_success":1,"ap2_total":1,"ap2_success":1}` + "\n"},
		{name: "batch-null-value", args: []string{"score", "--batch"}, code: ExitFailure, stdin: `{"conduit_total":null,"conduit_success":1,"ap2_total":1,"ap2_success":1}` + "\n"},
		{name: "batch-negative", args: []string{"score", "--batch"}, code: ExitFailure, stdin: ok + line(80, 76, -40, 0) + "\n"},
		{name: "batch-success-above-total", args: []string{"score", "--batch"}, code: ExitFailure, stdin: ok + ok + line(80, 76, 40, 41) + "\n" + ok},
		{name: "batch-out-of-range", args: []string{"score", "--batch"}, code: ExitFailure, stdin: `{"conduit_total":9223372036854775808,"conduit_success":1,"ap2_total":1,"ap2_success":1}` + "\n"},
		{name: "batch-not-object", args: []string{"score", "--batch"}, code: ExitFailure, stdin: "[80,76,40,38]\n"},
		{name: "batch-invalid-json", args: []string{"score", "--batch"}, code: ExitFailure, stdin: ok + `{"conduit_total":80,` + "\n"},
		{name: "batch-trailing-data", args: []string{"score", "--batch"}, code: ExitFailure, stdin: strings.TrimSuffix(ok, "\n") + " {}\n"},
		{name: "batch-two-objects-one-line", args: []string{"score", "--batch"}, code: ExitFailure, stdin: strings.TrimSuffix(ok, "\n") + ok},
	})
}

// TestScoreBatchOrder streams many random lines and checks each output line
// against score.Compute of the matching input line, in order.
func TestScoreBatchOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var in bytes.Buffer
	var want []score.Counts
	for i := range 20000 {
		ct := rng.Int64N(300)
		at := rng.Int64N(300)
		if i%97 == 0 {
			ct = rng.Int64N(math.MaxInt64)
		}
		c := score.Counts{ConduitTotal: ct, ConduitSuccess: rng.Int64N(ct + 1), AP2Total: at, AP2Success: rng.Int64N(at + 1)}
		want = append(want, c)
		// Vary key order and spacing; both parsers are exercised.
		if i%3 == 0 {
			fmt.Fprintf(&in, "{ \"ap2_success\" : %d , \"ap2_total\":%d,\"conduit_success\":%d,\"conduit_total\":%d }\n", c.AP2Success, c.AP2Total, c.ConduitSuccess, c.ConduitTotal)
		} else {
			fmt.Fprintf(&in, `{"conduit_total":%d,"conduit_success":%d,"ap2_total":%d,"ap2_success":%d}`+"\n", c.ConduitTotal, c.ConduitSuccess, c.AP2Total, c.AP2Success)
		}
	}
	r := run(t, &in, nil, "score", "--batch")
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	i := 0
	for sc.Scan() {
		res, _ := score.Compute(want[i])
		if got := sc.Text(); got != string(res.AppendJSON(nil)) {
			t.Fatalf("line %d: got %s for %+v", i+1, got, want[i])
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("%d output lines for %d inputs", i, len(want))
	}
}

func TestScoreBatchLongLine(t *testing.T) {
	ok := `{"conduit_total":1,"conduit_success":1,"ap2_total":1,"ap2_success":1}`
	// A line of exactly maxBatchLine bytes (padding is JSON whitespace) is accepted.
	fits := ok + strings.Repeat(" ", maxBatchLine-len(ok))
	long := ok + strings.Repeat(" ", maxBatchLine-len(ok)+1)
	r := run(t, strings.NewReader(ok+"\n"+fits+"\n"+long+"\n"+ok+"\n"), nil, "score", "--batch")
	if r.code != ExitFailure || r.stderr != fmt.Sprintf("swarmscore: line 3: longer than %d bytes\n", maxBatchLine) {
		t.Fatalf("%+v", r)
	}
	if n := strings.Count(r.stdout, "\n"); n != 2 {
		t.Fatalf("%d lines written before the error, want 2", n)
	}
}

// slowReader hands out one byte per Read, so every line spans many reads and
// the flush-when-idle logic runs constantly.
type slowReader struct{ r io.Reader }

func (s slowReader) Read(p []byte) (int, error) { return s.r.Read(p[:1]) }

// TestScoreBatchStreams checks that each answer is written before the next
// line is read, so a producer waiting for answers does not deadlock.
func TestScoreBatchStreams(t *testing.T) {
	pr, pw := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan result, 1)
	go func() {
		var stderr bytes.Buffer
		code := Run(context.Background(), []string{"score", "--batch"}, Process{Stdin: pr, Stdout: outW, Stderr: &stderr})
		outW.Close()
		done <- result{"", stderr.String(), code}
	}()
	answers := bufio.NewReader(outR)
	for i := range 3 {
		fmt.Fprintf(pw, `{"conduit_total":%d,"conduit_success":0,"ap2_total":0,"ap2_success":0}`+"\n", i)
		got, err := answers.ReadString('\n')
		if err != nil || !strings.Contains(got, fmt.Sprintf(`"conduit":{"total":%d,`, i)) {
			t.Fatalf("answer %d: %q, %v", i, got, err)
		}
	}
	pw.Close()
	if _, err := answers.ReadString('\n'); err != io.EOF {
		t.Fatalf("extra output: %v", err)
	}
	if r := <-done; r.code != ExitOK {
		t.Fatalf("%+v", r)
	}
	// Byte-at-a-time input gives the same bytes as one big read.
	in := strings.Repeat(`{"conduit_total":3,"conduit_success":2,"ap2_total":1,"ap2_success":1}`+"\n", 50)
	a := run(t, strings.NewReader(in), nil, "score", "--batch")
	b := run(t, slowReader{strings.NewReader(in)}, nil, "score", "--batch")
	if a != b || a.code != ExitOK {
		t.Fatalf("slow reader changed the output")
	}
}

func TestScoreBatchStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in := strings.Repeat(`{"conduit_total":3,"conduit_success":2,"ap2_total":1,"ap2_success":1}`+"\n", 5000)
	var stdout, stderr bytes.Buffer
	code := Run(ctx, []string{"score", "--batch"}, Process{Stdin: strings.NewReader(in), Stdout: &stdout, Stderr: &stderr})
	if code != ExitFailure || !strings.HasPrefix(stderr.String(), "swarmscore: line 1024: stopped: context canceled") {
		t.Fatalf("exit %d, %q", code, stderr.String())
	}
	if n := strings.Count(stdout.String(), "\n"); n != 1023 {
		t.Fatalf("%d lines before stopping", n)
	}
}

// batchInput is a mix of realistic lines: small counts below the volume
// targets, large ones above, and the all-zero line.
func batchInput(lines int) []byte {
	rng := rand.New(rand.NewPCG(9, 10))
	var b bytes.Buffer
	for range lines {
		ct := rng.Int64N(500)
		at := rng.Int64N(200)
		fmt.Fprintf(&b, `{"conduit_total":%d,"conduit_success":%d,"ap2_total":%d,"ap2_success":%d}`+"\n", ct, rng.Int64N(ct+1), at, rng.Int64N(at+1))
	}
	return b.Bytes()
}

// BenchmarkBatch measures the whole --batch path (read, parse, compute,
// encode, buffered write) on 4096 lines per iteration.
func BenchmarkBatch(b *testing.B) {
	const lines = 4096
	in := batchInput(lines)
	rd := bytes.NewReader(in)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(in)
		if err := runBatch(context.Background(), rd, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*lines/b.Elapsed().Seconds(), "lines/s")
}
