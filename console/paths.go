package console

import (
	"net/url"
	"strings"
)

// escapeMark starts the path segment of a dialog id a browser would not keep as it is.
// It is outside the dialog id grammar ([A-Za-z0-9._~:-], oauth.ValidDialog), and an id
// of the trail that starts with it is escaped too, so that every id has one segment and
// every segment one id.
const escapeMark = "!"

// dialogURL is the page of dialog id: its one path segment under dialogPath.
func dialogURL(id string) string { return dialogPath + dialogSegment(id) }

// dialogSegment is id as one escaped path segment that survives a browser's URL
// parser. The dot segments "." and ".." are removed by every browser (RFC 3986 section
// 5.2.4), and percent-encoding them does not help: the WHATWG URL standard reads "%2e"
// as a dot too, so /admin/dialogs/%2E%2E opens /admin/. They are written "!." and
// "!..", which no parser resolves (attack suite: dialog ids "." and ".." unreachable).
func dialogSegment(id string) string {
	if id == "." || id == ".." || strings.HasPrefix(id, escapeMark) {
		id = escapeMark + id
	}
	return url.PathEscape(id)
}

// dialogFromSegment is the dialog id of a decoded path segment: dialogSegment undone.
func dialogFromSegment(seg string) string { return strings.TrimPrefix(seg, escapeMark) }
