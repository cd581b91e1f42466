package audit

import (
	"strconv"

	"github.com/dialogtrust/dialogtrust/internal/plainjson"
)

// AppendJSON appends e as encoding/json writes it (the same members, order and
// escapes; TestEntryJSONMatchesReflection and FuzzEntryJSON keep the two equal),
// without reflection: it runs for every token issued, inside the 10% budget of
// issue 26.
func (e *Entry) AppendJSON(b []byte) []byte {
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(e.V), 10)
	b = append(b, `,"w":`...)
	b = plainjson.AppendString(b, e.Writer)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"prev":`...)
	b = plainjson.AppendString(b, e.Prev)
	b = append(b, `,"time":`...)
	b = plainjson.AppendString(b, e.Time)
	b = append(b, `,"decision":`...)
	b = plainjson.AppendString(b, e.Decision)
	str := func(name, v string) {
		if v != "" {
			b = append(b, ',', '"')
			b = append(b, name...)
			b = append(b, '"', ':')
			b = plainjson.AppendString(b, v)
		}
	}
	str("code", e.Code)
	str("kind", e.Kind)
	if e.Status != 0 {
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(e.Status), 10)
	}
	str("handler", e.Handler)
	str("request_id", e.RequestID)
	str("rule", e.Rule)
	str("grant", e.Grant)
	str("txn", e.Txn)
	str("dlg", e.Dialog)
	str("linked_from", e.LinkedFrom)
	str("req_wl", e.ReqWL)
	str("requester", e.Requester)
	str("peer", e.Peer)
	str("subject_token_sha256", e.SubjectSHA256)
	str("issued_token_sha256", e.IssuedSHA256)
	str("sub", e.Subject)
	list := func(name string, vs []string) {
		if len(vs) == 0 {
			return
		}
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':', '[')
		for i, v := range vs {
			if i > 0 {
				b = append(b, ',')
			}
			b = plainjson.AppendString(b, v)
		}
		b = append(b, ']')
	}
	list("scopes", e.Scopes)
	list("aud", e.Audience)
	str("kid", e.KID)
	str("hop", e.Hop)
	str("op", e.Operation)
	str("target_kind", e.TargetKind)
	str("target", e.Target)
	str("reason", e.Reason)
	if e.Linked {
		b = append(b, `,"linked":true`...)
	}
	return append(b, '}')
}
