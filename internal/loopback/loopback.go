package loopback

import "net"

// IsHost reports whether h, a URL's host name without port (url.URL.Hostname), is
// "localhost" or a loopback IP literal (127.0.0.0/8, ::1).
func IsHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
