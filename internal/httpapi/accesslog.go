package httpapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// accessLine is one access log line's fields, in the order they are
// written.
type accessLine struct {
	requestID, method, route, path string
	status                         int
	bytes                          int64
	durationMS                     float64
	client                         string
	operator                       string // "" on routes without one: not written
	rateLimited                    bool   // write heldBack as rate_limited_not_logged
	heldBack                       int64
}

// attrs are l's attributes as the access log's slog line has them.
func (l *accessLine) attrs(buf []slog.Attr) []slog.Attr {
	attrs := append(buf[:0],
		slog.String("request_id", l.requestID),
		slog.String("method", l.method),
		slog.String("route", l.route),
		slog.String("path", l.path),
		slog.Int("status", l.status),
		slog.Int64("bytes", l.bytes),
		slog.Float64("duration_ms", l.durationMS),
		slog.String("client", l.client))
	if l.operator != "" {
		attrs = append(attrs, slog.String("operator", l.operator))
	}
	if l.rateLimited {
		attrs = append(attrs, slog.Int64("rate_limited_not_logged", l.heldBack))
	}
	return attrs
}

// accessBufs holds the buffers lines are appended in.
var accessBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// jsonAccessLog writes access log lines to w exactly as a
// slog.NewJSONHandler(w, opts) without ReplaceAttr or AddSource, reached
// through a Logger with no attributes or groups, writes
// Logger.LogAttrs(ctx, slog.LevelInfo, "request", attrs...) for the same
// attributes (TestAccessLogAsSlog compares them), one Write per line: the
// JSON handler's reflection and attribute plumbing cost more than the rest
// of a cached certificate's middleware.
type jsonAccessLog struct {
	mu sync.Mutex // as the JSON handler's: one line at a time
	w  io.Writer
}

func (j *jsonAccessLog) write(now time.Time, l *accessLine) {
	bp := accessBufs.Get().(*[]byte)
	b := appendAccessLine((*bp)[:0], now, l)
	j.mu.Lock()
	j.w.Write(b)
	j.mu.Unlock()
	if cap(b) <= 16<<10 {
		*bp = b
		accessBufs.Put(bp)
	}
}

// appendAccessLine appends l as the JSON handler writes it, with the
// record's time now.
func appendAccessLine(b []byte, now time.Time, l *accessLine) []byte {
	b = append(b, `{"time":"`...)
	b = now.Round(0).AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"INFO","msg":"request","request_id":`...)
	b = appendJSONString(b, l.requestID)
	b = append(b, `,"method":`...)
	b = appendJSONString(b, l.method)
	b = append(b, `,"route":`...)
	b = appendJSONString(b, l.route)
	b = append(b, `,"path":`...)
	b = appendJSONString(b, l.path)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(l.status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, l.bytes, 10)
	b = append(b, `,"duration_ms":`...)
	b = appendJSONFloat(b, l.durationMS)
	b = append(b, `,"client":`...)
	b = appendJSONString(b, l.client)
	if l.operator != "" {
		b = append(b, `,"operator":`...)
		b = appendJSONString(b, l.operator)
	}
	if l.rateLimited {
		b = append(b, `,"rate_limited_not_logged":`...)
		b = strconv.AppendInt(b, l.heldBack, 10)
	}
	return append(b, "}\n"...)
}

// appendJSONFloat appends f as slog's JSON handler does (through
// encoding/json): the shortest form, in exponent form only for very small
// or very large magnitudes, which a request's duration never has; those,
// and NaN and infinities (the handler's error string), go through json
// itself.
func appendJSONFloat(b []byte, f float64) []byte {
	if a := math.Abs(f); math.IsNaN(f) || math.IsInf(f, 0) || (a != 0 && (a < 1e-6 || a >= 1e21)) {
		j, err := json.Marshal(f)
		if err != nil {
			return appendJSONString(b, "!ERROR:"+err.Error())
		}
		return append(b, j...)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// appendJSONString appends s quoted as slog's JSON handler quotes it: only
// ", \ and control characters escaped (\n, \r, \t by name), invalid UTF-8
// as \ufffd, U+2028 and U+2029 escaped; HTML characters as they are.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(append(b, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"
