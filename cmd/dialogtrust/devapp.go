package main

import (
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// devPairOptions are the flags of dev's proxy pair: --app, the user's own application
// the ingress is put in front of ("" is the built-in echo application), and
// --egress-addr, where the egress listens (port 0: a free one). A fixed egress address
// lets a client written beforehand, and a documented command, name the URL to call.
type devPairOptions struct {
	app, egressAddr string
}

// check refuses --app and --egress-addr without --proxies (they configure the pair),
// an --app that is not an absolute http(s) URL of a host with neither user
// information, query nor fragment (the ingress's upstream: a base URL), and an
// --egress-addr that is not a loopback host:port (the egress signs as the agent for
// anyone who reaches it).
func (o devPairOptions) check(proxies bool) error {
	if !proxies {
		if o.app != "" {
			return usageError{"--app needs --proxies: it puts your application behind dev's ingress"}
		}
		if o.egressAddr != "" && o.egressAddr != "127.0.0.1:0" {
			return usageError{"--egress-addr needs --proxies"}
		}
	}
	if o.app != "" {
		u, err := url.Parse(o.app)
		switch {
		case err != nil:
			return usageError{"--app: " + err.Error()}
		case u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "":
			return usageError{"--app: " + o.app + " is not an absolute http(s) URL, such as http://127.0.0.1:8000"}
		case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
			return usageError{"--app: " + o.app + " must be a base URL, without user information, query or fragment"}
		}
	}
	if o.egressAddr != "" {
		if _, _, err := net.SplitHostPort(o.egressAddr); err != nil {
			return usageError{"--egress-addr: " + err.Error()}
		}
		if !kit.IsLoopback(o.egressAddr) {
			return usageError{"--egress-addr: " + o.egressAddr + " is not a loopback IP address (the egress signs as " + devWorkload + " for anyone who reaches it)"}
		}
	}
	return nil
}

// upstream is the ingress's upstream: the user's application, or the echo application.
func (p *devPair) upstream() string {
	if p.app != "" {
		return p.app
	}
	return "http://" + p.echo
}

// behind names what the ingress is in front of, for the printed lines.
func (p *devPair) behind() string {
	if p.app != "" {
		return "your application at " + p.app
	}
	return "an echo application at http://" + p.echo
}

// appLines are what dev --proxies --app prints about the user's application: the URL
// to call at the egress and how it maps to the application's, and the fields each
// verified request reaches the application with (docs/proxy.md, "The fields the
// application sees at the ingress"); none without --app.
func (p *devPair) appLines() []string {
	if p.app == "" {
		return nil
	}
	base := strings.TrimSuffix(p.app, "/")
	field := func(name, value string) string {
		return "  " + name + strings.Repeat(" ", max(1, 40-len(name))) + value
	}
	return []string{
		"Your application " + p.app + " is behind the ingress, as " + devTool + ". Call it through the egress, as " + devWorkload + ":",
		"",
		"  http://" + p.egress + devPairPrefix + "/PATH  ->  " + base + "/PATH",
		"  (with " + proxy.StartDialogField + ": ?1 the egress starts a dialog; send the Dialog-Context of the answer to continue it)",
		"",
		"Each request that verifies reaches your application with these fields, and without the credentials:",
		"",
		field(proxy.VerifiedSenderField, devWorkload+" (the egress's workload)"),
		field(proxy.VerifiedProofField, "httpsig"),
		field(proxy.VerifiedDialogField, "the dialog's identifier"),
		field(proxy.VerifiedInitiatorField, devWorkload),
		field(proxy.VerifiedInitiatorProvedField, "true"),
		field(proxy.VerifiedEstablishedField, "true on the request that started the dialog, else false"),
		field(proxy.VerifiedTxnTokenClaimsField, "the Txn-Token's claims, one line of JSON (sub "+devSubject+", scope "+devScope+")"),
		"",
		"Any " + proxy.FieldPrefix + "* field a client sends is removed first.",
		"",
	}
}

// curlLines are the twelfth printed command, the curl through the pair, and its comment.
func (p *devPair) curlLines() []string {
	shows := "and the echo application shows the Dialogtrust-Verified-* fields it was given (curl -i: the dialog's Dialog-Context)"
	if p.app != "" {
		shows = "and your application gets the Dialogtrust-Verified-* fields above (curl -i: the dialog's Dialog-Context)"
	}
	return []string{
		"  # 12. plain HTTP through the proxy pair: the egress starts a dialog and signs as " + devWorkload + ", the ingress verifies",
		"  #     " + shows,
		"  " + devPairCurl(p),
	}
}

// stopLine is the last printed line with the pair: what Ctrl-C stops. The user's
// application is theirs to stop.
func (p *devPair) stopLine(dir string) string {
	if p.app != "" {
		return "Ctrl-C stops the four services and the two proxies (not your application) and removes " + dir + "."
	}
	return "Ctrl-C stops the four services, the two proxies and the echo application and removes " + dir + "."
}

// insertAfterFiles inserts add after the "files" line of dev's output and the blank
// line after it, or, without one, before the last two lines (the blank one and
// Ctrl-C's).
func insertAfterFiles(lines, add []string) []string {
	if len(add) == 0 {
		return lines
	}
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "files ") && i+2 <= len(lines) {
			return slices.Insert(lines, i+2, add...)
		}
	}
	return slices.Insert(lines, max(0, len(lines)-2), add...)
}
