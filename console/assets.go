package console

import (
	"mime"
	"net/http"
	"path"
	"strconv"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// asset serves one embedded file by name. It is served explicitly, not through
// http.FileServer: the file server's own error answers (404, 416, 412...) drop
// Cache-Control and are not the page's, and an answer of the page, an error included,
// keeps every header ServeHTTP set (attack suite: asset errors keep the page headers).
// A name that is not an embedded file is the page's own no_route.
func (c *Console) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := assetFS.ReadFile("assets/" + name)
	if name == "" || name[0] == '.' || path.Base(name) != name || err != nil {
		c.fail(w, r, errcode.New(errcode.NoRoute, "no such page"))
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}
