package agent

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

type answer func(*http.Request) (*http.Response, error)

func (f answer) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The per-dialog Txn-Token cache of a TTSSource is bounded whatever the number of
// dialogs, and expired tokens go first when it is full (issue 7, item 5).
func TestTTSSourceCacheBound(t *testing.T) {
	key, err := keys.Generate(keys.EdDSA)
	if err != nil {
		t.Fatal(err)
	}
	// A TTS that answers every request with a token living 300 s.
	hc := &http.Client{Transport: answer(func(r *http.Request) (*http.Response, error) {
		_ = r.Body.Close()
		body := `{"access_token":"t.` + strconv.FormatInt(time.Now().UnixNano(), 10) + `.s","issued_token_type":"` + tts.TokenTypeTxnToken + `","token_type":"N_A","expires_in":300,"scope":"s"}`
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	})}
	clock := testkit.NewClock(testkit.Epoch)
	c := &txntoken.Client{TokenEndpoint: "http://tts.invalid/token", HTTPClient: hc, WIT: "h.p.s", Key: key}
	s := NewTTSSource(c, "a.example", "s", func(context.Context) (string, string, error) {
		return "subject", tts.TokenTypeSelfSigned, nil
	}, clock.Now)
	ctx := context.Background()
	size := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.cache)
	}
	for i := range maxCachedDialogs + 500 {
		if _, err := s.TxnToken(ctx, "D"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		if n := size(); n > maxCachedDialogs {
			t.Fatalf("cache holds %d tokens, bound %d", n, maxCachedDialogs)
		}
	}
	// Past every token's refresh point, the insertion that finds the cache full drops
	// all of them.
	clock.Advance(5 * time.Minute)
	k := maxCachedDialogs - size() + 1
	for i := range k {
		if _, err := s.TxnToken(ctx, "later-"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := size(); n != k {
		t.Fatalf("after expiry the cache holds %d, want the %d new tokens", n, k)
	}
}
