package dialog_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/wit"
)

// A WIT whose header names a 4.5 KB kid is refused with that kid cut in the problem
// detail (errcode.Cut), not echoed whole.
func TestDialogBindingSec12_LongKidIsCutInTheProblemDetail(t *testing.T) {
	f := newFigure3(t)
	kid := strings.Repeat("K", 4500)
	now := f.clock.Now()
	hdr, _ := json.Marshal(map[string]any{"typ": wit.Type, "alg": "ES256", "kid": kid})
	jwk, _ := json.Marshal(f.a2.Key.Public())
	pl, _ := json.Marshal(map[string]any{"sub": f.a2.ID.String(), "exp": now.Add(time.Hour).Unix(), "cnf": map[string]any{"jwk": json.RawMessage(jwk)}})
	enc := base64.RawURLEncoding
	witRaw := enc.EncodeToString(hdr) + "." + enc.EncodeToString(pl) + "." + enc.EncodeToString(make([]byte, 64))

	tr := &agent.Transport{Source: &wit.Credential{WIT: witRaw, Key: f.a2.Key, Expiry: now.Add(time.Hour)}, Proof: proof.HTTPSig,
		Responses: httpsig.NewVerifier(f.d.Validator(), httpsig.WithClock(f.clock.Now))}
	res, err := (&http.Client{Transport: tr}).Do(post(t, f.toolSrv.URL+"/invoke"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var p problem.Details
	if err := json.Unmarshal(b, &p); err != nil || p.Code != string(errcode.UnknownKey) {
		t.Fatalf("status %d %.300s", res.StatusCode, b)
	}
	if strings.Contains(p.Detail, strings.Repeat("K", errcode.MaxEchoed+1)) || !strings.Contains(p.Detail, strings.Repeat("K", errcode.MaxEchoed)) {
		t.Fatalf("detail of %d octets: %.200s", len(p.Detail), p.Detail)
	}
}
