package console

import (
	"net/http"

	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// Routes is the admin listener's handler: the JSON API at revokeapi.Path and
// revokeapi.SessionsPath (which never read the page's cookie), the page everywhere
// else (which answers its own 404 for what it does not serve).
func Routes(api *revokeapi.Handler, page *Console) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case revokeapi.Path, revokeapi.SessionsPath:
			api.ServeHTTP(w, r)
		default:
			page.ServeHTTP(w, r)
		}
	})
}
