package tts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// The deprecated Discover keeps its code for a TTS that does not answer:
// tts_unavailable (could not be completed), where oauth.Discover says as_unavailable;
// its other errors pass through.
func TestDiscoverKeepsTTSUnavailable(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	defer down.Close()
	for _, u := range []string{down.URL, "http://127.0.0.1:1"} {
		_, err := Discover(context.Background(), nil, u)
		if errcode.CodeOf(err) != errcode.TTSUnavailable || errcode.KindOf(err) != errcode.Incomplete {
			t.Fatalf("%s: %v", u, err)
		}
	}
	if _, err := Discover(context.Background(), nil, "ftp://tts.example"); errcode.CodeOf(err) != errcode.InvalidRequest {
		t.Fatalf("not an http(s) URL: %v", err)
	}
}
