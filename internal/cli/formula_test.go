package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmscore/swarmscore/score"
	"github.com/swarmscore/swarmscore/score/scoretest"
)

// withTestFormula is a binary that implements V1 and scoretest.V11Test.
var withTestFormula = append(score.Builtin(), scoretest.V11Test)

// runFormulas is run with the formulas the binary implements.
func runFormulas(t *testing.T, formulas score.Formulas, stdin string, env map[string]string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), args, Process{Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return env[k] }, Drivers: testDrivers, Formulas: formulas})
	r := result{stdout.String(), stderr.String(), code}
	checkStderr(t, r)
	return r
}

func TestFormulaFlags(t *testing.T) {
	for _, tc := range []struct {
		current string
		accept  []string
		want    string // Acceptance.String, or "usage"
	}{
		{"1.0", nil, "1.0"},
		{"1.0@2026-01-01", nil, "1.0@2026-01-01T00:00:00Z.."},
		{"1.1-test@2027-01-01", []string{"1.0"}, "1.1-test@2027-01-01T00:00:00Z..,1.0@..2027-04-01T00:00:00Z"},
		{"1.1-test@2027-01-01T12:00:00+02:00", []string{"1.0@2026-01-01"}, "1.1-test@2027-01-01T10:00:00Z..,1.0@2026-01-01T00:00:00Z..2027-04-01T10:00:00Z"},
		{"1.1-test", []string{"1.0@..2027-06-01"}, "1.1-test,1.0@..2027-06-01T00:00:00Z"},
		{"1.1-test", []string{"1.0@.."}, "1.1-test,1.0"},
		{"1.1-test", []string{"1.0@2026-01-01.."}, "1.1-test,1.0@2026-01-01T00:00:00Z.."},
		{"9.9", nil, "usage"},                                         // unknown current
		{"1.0", []string{"9.9@.."}, "usage"},                          // unknown accepted
		{"1.1-test", []string{"1.0"}, "usage"},                        // no effective date to count 90 days from
		{"1.0@yesterday", nil, "usage"},                               // bad time
		{"1.0", []string{"1.0@.."}, "usage"},                          // listed twice
		{"1.1-test", []string{"1.0@2027-01-01..2026-01-01"}, "usage"}, // inverted
	} {
		f := formulaFlags{current: tc.current, accept: tc.accept}
		_, acc, err := f.acceptance(withTestFormula)
		got := acc.String()
		if err != nil {
			got = "usage"
			if kindOf(err) != ExitUsage {
				t.Errorf("--formula %s --accept-formula %v: %v is not a usage error", tc.current, tc.accept, err)
			}
		}
		if got != tc.want {
			t.Errorf("--formula %s --accept-formula %v = %s (%v), want %s", tc.current, tc.accept, got, err, tc.want)
		}
	}
	// A production binary knows V1 only.
	f := formulaFlags{current: "1.1-test"}
	if _, _, err := f.acceptance(nil); err == nil || !strings.Contains(err.Error(), `unknown formula version "1.1-test" (this build implements 1.0)`) {
		t.Fatalf("production binary: %v", err)
	}
}

// kindOf is the exit status an error gets.
func kindOf(err error) int { return exitStatus(err) }

func TestPassportFormulaVersions(t *testing.T) {
	// A production binary cannot issue the test formula.
	if r := runFormulas(t, nil, "", keyEnv, append(issueArgs, "--formula", "1.1-test")...); r.code != ExitUsage {
		t.Fatalf("issue --formula 1.1-test in production: exit %d", r.code)
	}
	r := runFormulas(t, withTestFormula, "", keyEnv, append(issueArgs, "--formula", "1.1-test")...)
	if r.code != ExitOK || !strings.Contains(r.stdout, `"formula_version":"1.1-test"`) || !strings.Contains(r.stdout, `"value":721`) {
		t.Fatalf("issue --formula 1.1-test: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	v11 := r.stdout
	v1 := issue(t, keyEnv, issueArgs...) // computed 2026-03-17T14:30:00Z
	at := []string{"--at", "2026-03-20T00:00:00Z"}

	verify := func(doc string, flags ...string) (int, verifyPrinted) {
		t.Helper()
		r := runFormulas(t, withTestFormula, doc, keyEnv, append(append([]string{"passport", "verify"}, at...), flags...)...)
		var v verifyPrinted
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatalf("verify %v: exit %d, %q: %v", flags, r.code, r.stdout, err)
		}
		return r.code, v
	}
	for _, tc := range []struct {
		name  string
		doc   string
		flags []string
		code  int
		err   string
	}{
		{"V1 by default", v1, nil, ExitOK, ""},
		{"1.1-test unknown by default", v11, nil, ExitFailure, "unsupported_formula_version"},
		{"1.1-test accepted", v11, []string{"--accept-formula", "1.1-test@.."}, ExitOK, ""},
		{"V1 in its 90 days", v1, []string{"--formula", "1.1-test@2026-01-01", "--accept-formula", "1.0"}, ExitOK, ""},
		{"V1 after its 90 days", v1, []string{"--formula", "1.1-test@2025-12-01", "--accept-formula", "1.0"}, ExitFailure, "formula_version_out_of_window"},
		{"V1 dropped", v1, []string{"--formula", "1.1-test@2025-12-01"}, ExitFailure, "unsupported_formula_version"},
		{"1.1-test before its effective date", v11, []string{"--formula", "1.1-test@2026-04-01", "--accept-formula", "1.0"}, ExitFailure, "formula_version_out_of_window"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, v := verify(tc.doc, tc.flags...)
			if code != tc.code || v.Valid != (tc.code == ExitOK) {
				t.Fatalf("exit %d, valid %v, want exit %d: %+v", code, v.Valid, tc.code, v.Errors)
			}
			if tc.err != "" && (len(v.Errors) != 1 || v.Errors[0].Code != tc.err || v.Checks.Consistency != "failed" || v.Checks.Signature != "ok") {
				t.Fatalf("errors %+v, checks %+v, want only %s", v.Errors, v.Checks, tc.err)
			}
		})
	}
	// Unknown versions in the flags stop the command before it reads anything.
	for _, flags := range [][]string{{"--formula", "2.0"}, {"--accept-formula", "2.0@.."}, {"--accept-formula", "1.1-test"}} {
		if r := runFormulas(t, withTestFormula, v1, keyEnv, append([]string{"passport", "verify"}, flags...)...); r.code != ExitUsage || r.stdout != "" {
			t.Errorf("verify %v: exit %d, stdout %q", flags, r.code, r.stdout)
		}
	}
}

// verifyPrinted is what `passport verify` prints, as far as these tests read it.
type verifyPrinted struct {
	Valid  bool `json:"valid"`
	Errors []struct {
		Code string `json:"code"`
	} `json:"errors"`
	Checks struct {
		Signature, Consistency string
	} `json:"checks"`
}

func TestServeFormulaFlags(t *testing.T) {
	for _, tc := range []struct {
		formulas score.Formulas
		args     []string
		want     string
	}{
		{nil, []string{"--formula", "1.1-test"}, `unknown formula version "1.1-test"`},
		{withTestFormula, []string{"--formula", "1.1-test"}, "issues formula 1.0 only"},
		{withTestFormula, []string{"--accept-formula", "1.1-test"}, "has none"},
		{nil, []string{"--formula", "1.0@2026-13-01"}, "not an RFC 3339 time"},
		{nil, []string{"--formula", "9999-01-01"}, "unknown formula version"},
		{nil, []string{"--formula", "1.0@9999-01-01"}, "cannot be later than now"},
	} {
		r := runFormulas(t, tc.formulas, "", nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", "sqlite::memory:"}, tc.args...)...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("serve %v: exit %d, %q; want a usage error saying %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// TestServeVerifiesFormulaVersions runs serve with a formula acceptance and
// posts passports to POST /swarmscore/verify: the HTTP route reports what
// the flags accept.
func TestServeVerifiesFormulaVersions(t *testing.T) {
	v1 := strings.TrimSpace(issue(t, keyEnv, issueArgs...)) // computed 2026-03-17T14:30:00Z
	r := runFormulas(t, withTestFormula, "", keyEnv, append(issueArgs, "--formula", "1.1-test")...)
	if r.code != ExitOK {
		t.Fatalf("issue: %s", r.stderr)
	}
	v11 := strings.TrimSpace(r.stdout)

	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	clock := func() time.Time { return time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC) }
	go func() {
		done <- Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", "sqlite:" + filepath.Join(t.TempDir(), "s.db"),
			"--formula", "1.0@2026-03-18", "--accept-formula", "1.1-test@.."},
			Process{Stderr: pw, Getenv: func(k string) string { return keyEnv[k] }, Drivers: testDrivers, Formulas: withTestFormula, Now: clock})
		pw.Close()
	}()
	type listening struct{ Msg, Addr, Formulas string }
	started := make(chan listening, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var l listening
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "listening" {
				started <- l
			}
		}
	}()
	var l listening
	select {
	case l = <-started:
	case code := <-done:
		t.Fatalf("serve exited with %d", code)
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not start")
	}
	if l.Formulas != "1.0@2026-03-18T00:00:00Z..,1.1-test" {
		t.Errorf("listening: formulas %q", l.Formulas)
	}
	post := func(doc string) verifyPrinted {
		t.Helper()
		resp, err := http.Post("http://"+l.Addr+"/swarmscore/verify", "application/json", strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v verifyPrinted
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 {
			t.Fatalf("verify: %d %v", resp.StatusCode, err)
		}
		return v
	}
	// 1.0 takes effect on 2026-03-18 here: a passport computed before is
	// outside its window.
	if v := post(v1); v.Valid || len(v.Errors) != 1 || v.Errors[0].Code != "formula_version_out_of_window" || v.Checks.Consistency != "failed" {
		t.Errorf("V1 passport: %+v", v)
	}
	if v := post(v11); !v.Valid || len(v.Errors) != 0 {
		t.Errorf("1.1-test passport: %+v", v)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}
