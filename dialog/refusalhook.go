package dialog

import (
	"context"
	"net/http"
)

type refusalHookKey struct{}

// WithRefusalHook returns ctx carrying f: Receiver.Middleware calls f with each refusal
// it answers a request with ctx with, before writing it, so that the server in front
// (the dialogtrust proxy's ingress) logs the code of the check that failed. The
// receiver itself logs nothing: it is a library.
func WithRefusalHook(ctx context.Context, f func(error)) context.Context {
	return context.WithValue(ctx, refusalHookKey{}, f)
}

// noteRefusal hands err to r's refusal hook, if any.
func noteRefusal(r *http.Request, err error) {
	if f, ok := r.Context().Value(refusalHookKey{}).(func(error)); ok && err != nil {
		f(err)
	}
}
