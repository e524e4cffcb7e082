package postgres

import (
	"net/url"
	"strings"
)

// secretParams are the connection parameters whose values never reach a
// log or an error: the password, the client key's password, and the path
// of the client key.
var secretParams = map[string]bool{"password": true, "sslpassword": true, "sslkey": true}

const hidden = "xxxxx"

// Redact returns dsn with every secret replaced by xxxxx: the password of a
// URL's user information, and the values of password, sslpassword and
// sslkey, whether in a URL's query or a keyword/value string.
func Redact(dsn string) string {
	if scheme, rest, ok := strings.Cut(dsn, "://"); ok {
		main, query, hasQuery := strings.Cut(rest, "?")
		if at := strings.LastIndex(main, "@"); at >= 0 {
			if user, _, hasPass := strings.Cut(main[:at], ":"); hasPass {
				main = user + ":" + hidden + main[at:]
			}
		}
		out := scheme + "://" + main
		if hasQuery {
			params := strings.Split(query, "&")
			for i, p := range params {
				if k, _, ok := strings.Cut(p, "="); ok && secretParams[strings.ToLower(k)] {
					params[i] = k + "=" + hidden
				}
			}
			out += "?" + strings.Join(params, "&")
		}
		return out
	}
	return redactKV(dsn)
}

// redactKV replaces the values of secret keys in a keyword/value string.
func redactKV(dsn string) string {
	var b strings.Builder
	last := 0
	forEachKV(dsn, func(key, _ string, start, end int) {
		if secretParams[key] {
			b.WriteString(dsn[last:start])
			b.WriteString(hidden)
			last = end
		}
	})
	b.WriteString(dsn[last:])
	return b.String()
}

// forEachKV calls f for each key = value pair of a keyword/value string
// (libpq syntax: values bare or in single quotes with backslash escapes),
// with the unquoted value and the byte range of the value as written.
func forEachKV(s string, f func(key, value string, start, end int)) {
	i := 0
	for i < len(s) {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		k := i
		for i < len(s) && s[i] != '=' && s[i] != ' ' {
			i++
		}
		key := strings.ToLower(s[k:i])
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i >= len(s) || s[i] != '=' {
			continue
		}
		i++
		for i < len(s) && s[i] == ' ' {
			i++
		}
		start := i
		var v strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			for i < len(s) && s[i] != '\'' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				v.WriteByte(s[i])
				i++
			}
			if i < len(s) {
				i++ // the closing quote
			}
		} else {
			for i < len(s) && s[i] != ' ' {
				v.WriteByte(s[i])
				i++
			}
		}
		f(key, v.String(), start, i)
	}
}

// secrets lists the secret values dsn holds, as written and decoded.
func secrets(dsn string) []string {
	var out []string
	add := func(v string) {
		if v != "" {
			out = append(out, v)
			if d, err := url.QueryUnescape(v); err == nil && d != v {
				out = append(out, d)
			}
			if e := url.QueryEscape(v); e != v {
				out = append(out, e)
			}
		}
	}
	if _, rest, ok := strings.Cut(dsn, "://"); ok {
		main, query, _ := strings.Cut(rest, "?")
		if at := strings.LastIndex(main, "@"); at >= 0 {
			if _, pass, ok := strings.Cut(main[:at], ":"); ok {
				add(pass)
			}
		}
		for _, p := range strings.Split(query, "&") {
			if k, v, ok := strings.Cut(p, "="); ok && secretParams[strings.ToLower(k)] {
				add(v)
			}
		}
		return out
	}
	forEachKV(dsn, func(key, value string, _, _ int) {
		if secretParams[key] {
			add(value)
		}
	})
	return out
}

// Scrub replaces every secret of dsn found in msg with xxxxx, for messages
// (a driver's error) that may quote the DSN or parts of it.
func Scrub(msg, dsn string) string {
	for _, s := range secrets(dsn) {
		msg = strings.ReplaceAll(msg, s, hidden)
	}
	return msg
}

// scrubbed returns err with every secret of dsn removed from its message,
// keeping what errors.Is and errors.As find in it.
func scrubbed(err error, dsn string) error {
	if err == nil {
		return nil
	}
	msg := Scrub(err.Error(), dsn)
	if msg == err.Error() {
		return err
	}
	return &scrubbedError{msg: msg, err: err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
