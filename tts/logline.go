package tts

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// jsonLineWriter is a slog handler that formats a record exactly as slog.JSONHandler
// with no option but the level does (no source, no ReplaceAttr, no groups or preset
// attributes) and that also writes such a line given already formatted, in one Write:
// the services' logger (internal/service.NewJSONHandler). Through it the line of every
// token issued is built in a pooled buffer rather than through slog's Record and
// formatter; it says the same octets either way (TestIssuedLineMatchesSlog).
type jsonLineWriter interface {
	WriteJSONLine(line []byte) error
}

// issuedMessage is the message of the line written for every token issued.
const issuedMessage = "txn token issued"

// issuedLine is what the line of a token issued says, member by member in the line's
// order.
type issuedLine struct {
	requestID, dlg, grant, subjectTokenType, subjectSHA256, method, requester string
	aud, txn, txnTokenSHA256, kid                                             string
	exp                                                                       int64
	callChain                                                                 int
	remote                                                                    string
}

// log writes the line through slog, for any other handler and for a line appendJSON
// leaves to slog.
func (l *issuedLine) log(ctx context.Context, logger *slog.Logger, level slog.Level) {
	logger.LogAttrs(ctx, level, issuedMessage, slog.String("request_id", l.requestID), slog.String("dlg", l.dlg),
		slog.String("grant", l.grant), slog.String("subject_token_type", l.subjectTokenType),
		slog.String("subject_token_sha256", l.subjectSHA256), slog.String("method", l.method), slog.String("requester", l.requester),
		slog.String("aud", l.aud), slog.String("txn", l.txn), slog.String("txn_token_sha256", l.txnTokenSHA256),
		slog.String("kid", l.kid), slog.Int64("exp", l.exp), slog.Int("call_chain", l.callChain),
		slog.String("remote", l.remote))
}

// write writes the line: through w in one pooled buffer when it can (appendJSON), else
// through slog.
func (l *issuedLine) write(ctx context.Context, logger *slog.Logger, w jsonLineWriter, level slog.Level) {
	if w != nil {
		bp := lineBuffers.Get().(*[]byte)
		b, ok := l.appendJSON((*bp)[:0], time.Now(), level)
		if ok {
			_ = w.WriteJSONLine(b)
		}
		if cap(b) <= maxPooledLine {
			*bp = b[:0]
			lineBuffers.Put(bp)
		}
		if ok {
			return
		}
	}
	l.log(ctx, logger, level)
}

// lineBuffers holds the issued line's buffers; one over maxPooledLine (only a very
// long value makes one) is left to the collector.
var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxPooledLine = 16 << 10

// appendJSON appends the line as slog.JSONHandler writes a record of time t, level,
// issuedMessage and l's attributes: {"time":...,"level":...,"msg":...,...}, then a
// newline. It reports false, and the line goes through slog, when the output would need
// more than copying: a year outside 0-9999 (which slog reports in the line) or a value
// with an octet slog escapes or checks (a control character, '"', '\\', or anything
// outside printable ASCII). The values of this line are identifiers, hashes, URIs and
// trust domains, and are plain.
func (l *issuedLine) appendJSON(b []byte, t time.Time, level slog.Level) ([]byte, bool) {
	if y := t.Year(); y < 0 || y >= 10000 {
		return b, false
	}
	b = append(b, `{"time":"`...)
	b = t.Round(0).AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":`...)
	b, ok := appendPlain(b, level.String())
	for _, m := range [...]struct{ name, value string }{
		{`,"msg":"` + issuedMessage + `","request_id":`, l.requestID}, {`,"dlg":`, l.dlg}, {`,"grant":`, l.grant},
		{`,"subject_token_type":`, l.subjectTokenType}, {`,"subject_token_sha256":`, l.subjectSHA256},
		{`,"method":`, l.method}, {`,"requester":`, l.requester}, {`,"aud":`, l.aud}, {`,"txn":`, l.txn},
		{`,"txn_token_sha256":`, l.txnTokenSHA256}, {`,"kid":`, l.kid},
	} {
		if !ok {
			return b, false
		}
		b = append(b, m.name...)
		b, ok = appendPlain(b, m.value)
	}
	if !ok {
		return b, false
	}
	b = append(b, `,"exp":`...)
	b = strconv.AppendInt(b, l.exp, 10)
	b = append(b, `,"call_chain":`...)
	b = strconv.AppendInt(b, int64(l.callChain), 10)
	b = append(b, `,"remote":`...)
	b, ok = appendPlain(b, l.remote)
	return append(b, "}\n"...), ok
}

// appendPlain appends s as a JSON string when slog writes it unchanged between quotes
// (printable ASCII but '"' and '\\'), and reports whether it did.
func appendPlain(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}
