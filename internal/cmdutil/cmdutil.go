// Package cmdutil holds what the service binaries (cmd/wit-issuer, cmd/tts) share on
// their command lines. Only cmd/ imports it.
package cmdutil

import (
	"strconv"
	"strings"
)

// CheckConfigFlag removes -check-config (or --check-config[=bool]) from args, before a
// "--" terminator, and reports whether it asked for a check only. It is handled apart
// from the configuration's flag set so that that set keeps meaning "the configuration".
func CheckConfigFlag(args []string) ([]string, bool) {
	var out []string
	check := false
	for i, a := range args {
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if name == a || name != "check-config" {
			out = append(out, a)
			continue
		}
		b, err := strconv.ParseBool(val)
		switch {
		case !hasVal:
			check = true
		case err != nil:
			out = append(out, a) // let the flag set report the bad value
		default:
			check = b
		}
	}
	return out, check
}
