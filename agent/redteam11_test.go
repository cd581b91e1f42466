package agent_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/keys"
)

// Red team 11: a signed 200 that echoes no Dialog-Context passes only as a refusal, and
// a refusal has no result (hostproto.WriteError writes none; JSON-RPC 2.0 section 5: an
// error response MUST NOT carry one). A result hidden from the agent's reading, named
// twice (a first-wins reader takes the first), spelled in another case (Go's
// encoding/json, which SDKs decode with, matches names case-insensitively) or null
// beside the error, is a result beside the error to some reader of the same octets: the
// answer is not a refusal, and without the echo it is dialog_context_mismatch.
func TestRedTeam11_SignedAnswerWithHiddenResultIsNoRefusal(t *testing.T) {
	sw := newSignerWorld(t)
	a1 := sw.a.Workload(t, "/agent/a1", keys.EdDSA)
	t1 := sw.a.Workload(t, "/tool/t1", keys.EdDSA)
	tr := &agent.Transport{Source: credOf(a1), Responses: httpsig.NewVerifier(sw.wits), RequireSignedResponse: true}
	a := &agent.Agent{Self: a1.ID, Client: &http.Client{Transport: tr}}
	call := func(url string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete"}}`))
		req.Header.Set("Content-Type", "application/json")
		return req
	}
	const e = `"error":{"code":-32602,"message":"x","data":{"code":"not_authorized","kind":"failed"}}`
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]},"result":null,` + e + `}`,
		`{"jsonrpc":"2.0","id":1,"Result":{"content":[]},` + e + `}`,
		`{"jsonrpc":"2.0","id":1,"RESULT":{"content":[]},` + e + `}`,
		`{"jsonrpc":"2.0","id":1,"result":null,` + e + `}`,
	} {
		_, _, err := a.Start(context.Background(), call(sw.signingServer(t, t1, 200, "application/json", body)), "")
		if errcode.CodeOf(err) != errcode.DialogContextMismatch {
			t.Errorf("a signed answer %s that echoes no Dialog-Context: %v, want dialog_context_mismatch", body, err)
		}
	}
}
