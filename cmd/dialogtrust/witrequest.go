package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// witRequest obtains a WIT from a WIT issuer for a key generated here, and writes that
// key to --key-out or, by default, into the per-user state directory (never silently
// into the working directory, where it could end up committed). Authentication: the X.509-SVID (--svid, --svid-key, --bundle), or a
// client assertion signed by the workload's registered key (--assertion-key,
// --workload), or, with neither, development mode, which names the workload by
// --workload and proves nothing.
func witRequest(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("wit request", stderr)
	issuer := fs.String("issuer", "", "base URL of the WIT issuer (its metadata is read from /.well-known/wit-issuer)")
	svid := fs.String("svid", "", "X.509-SVID certificate chain (PEM) to authenticate with over mTLS")
	svidKey := fs.String("svid-key", "", "private key (PEM) of --svid")
	bundle := fs.String("bundle", "", "trust bundle (PEM) that the issuer's certificate must chain to")
	serverID := fs.String("server-id", "", "the issuer's workload identifier in its certificate (default: check the URL's host name)")
	assertionKey := fs.String("assertion-key", "", "the workload's registered private JWK, to sign a client assertion")
	workload := fs.String("workload", "", "the workload identifier (assertion method; or the requested sub in development mode)")
	sub := fs.String("sub", "", "request this identifier instead of the authenticated identity")
	alg := fs.String("alg", keys.ES256, "algorithm of the new key: ES256, EdDSA or Ed25519")
	ttl := fs.Duration("ttl", 0, "requested lifetime (default: the issuer's)")
	keyOut := fs.String("key-out", "", "write the new private JWK here (mode 0600; default: "+defaultWITKeyFile+" in $XDG_STATE_HOME/dialogtrust or ~/.local/state/dialogtrust)")
	timeout := fs.Duration("timeout", 30*time.Second, "overall time limit")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError{"unexpected argument " + fs.Arg(0)}
	}
	if err := required(map[string]string{"issuer": *issuer}); err != nil {
		return err
	}
	if err := baseURL("issuer", *issuer); err != nil {
		return err
	}
	useSVID := *svid != "" || *svidKey != ""
	useAssertion := *assertionKey != ""
	switch {
	case useSVID && useAssertion:
		return usageError{"--svid and --assertion-key exclude each other"}
	case useSVID && (*svid == "" || *svidKey == "" || *bundle == ""):
		return usageError{"--svid needs --svid-key and --bundle"}
	case useAssertion && *workload == "":
		return usageError{"--assertion-key needs --workload"}
	case !useSVID && !useAssertion && *workload == "" && *sub == "":
		return usageError{"give --svid, --assertion-key, or (development mode) --workload"}
	}

	// Where the key goes is settled before the issuer is asked, so that a WIT is not
	// issued for a key that cannot be kept.
	keyPath, err := witKeyPath(*keyOut)
	if err != nil {
		return err
	}
	// The key is made before the issuer is asked too: an algorithm this command cannot
	// generate is known without a round trip.
	key, err := generateKey("alg", *alg)
	if err != nil {
		return err
	}
	transport, err := witRequestTransport(*svid, *svidKey, *bundle, *serverID, useSVID)
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: transport, Timeout: *timeout}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	cl, _, err := witissuer.NewClient(ctx, hc, *issuer)
	if err != nil {
		return err
	}
	cl.Subject, cl.TTL = *sub, *ttl
	switch {
	case useAssertion:
		ak, err := loadPrivateKey(*assertionKey, stdin)
		if err != nil {
			return err
		}
		id, err := identifier.Parse(*workload)
		if err != nil {
			return err
		}
		cl.Assertion = witissuer.AssertionFunc(ak, cl, id, time.Minute)
	case !useSVID && cl.Subject == "":
		cl.Subject = *workload
	}
	res, err := cl.Request(ctx, key)
	if err != nil {
		return err
	}
	if err := writePrivateJWK(keyPath, key); err != nil {
		return err
	}
	if *keyOut == "" {
		fmt.Fprintf(stderr, "dialogtrust: wrote the private key to %s\n", keyPath)
	}
	_, err = io.WriteString(stdout, res.WIT+"\n")
	return err
}

// defaultWITKeyFile is the name of the key file "wit request" writes without --key-out.
const defaultWITKeyFile = "wit.key.jwk"

// userStateDir is the per-user directory for the private keys that a command makes when
// the user names no file: $XDG_STATE_HOME/dialogtrust, or ~/.local/state/dialogtrust
// (the XDG default; a relative XDG_STATE_HOME is invalid and ignored).
func userStateDir() (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no per-user directory for the private key (give --key-out): %w", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "dialogtrust"), nil
}

// witKeyPath is the file for the new private key: keyOut, whose directory must exist,
// or the default file in userStateDir, which it creates (mode 0700) if need be.
func witKeyPath(keyOut string) (string, error) {
	if keyOut != "" {
		dir := filepath.Dir(keyOut)
		st, err := os.Stat(dir)
		if err != nil {
			return "", usageError{"--key-out: " + err.Error()}
		}
		if !st.IsDir() {
			return "", usageError{"--key-out: " + dir + " is not a directory"}
		}
		return keyOut, nil
	}
	dir, err := userStateDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return filepath.Join(dir, defaultWITKeyFile), nil
}

// witRequestTransport is the HTTP transport of "wit request": with --svid it presents
// the SVID over mTLS; with --bundle it requires the issuer's certificate to chain to
// the bundle (and to name --server-id, when given).
func witRequestTransport(svid, svidKey, bundle, serverID string, useSVID bool) (*http.Transport, error) {
	var sid identifier.ID
	if serverID != "" {
		var err error
		if sid, err = identifier.Parse(serverID); err != nil {
			return nil, err
		}
	}
	if bundle == "" && !useSVID && !sid.IsZero() {
		return nil, usageError{"--server-id needs --bundle"}
	}
	if !useSVID {
		svid, svidKey = "", ""
	}
	return kit.WITIssuerTransport(svid, svidKey, bundle, sid)
}

// writePrivateJWK writes key with mode 0600, also when the file exists already
// (keys.WritePrivateFile).
func writePrivateJWK(path string, key *keys.PrivateKey) error {
	b, err := json.Marshal(key)
	if err != nil {
		return err
	}
	return keys.WritePrivateFile(path, b)
}
