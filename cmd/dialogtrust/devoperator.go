package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/console"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// The operator of dev (issue 26): the one administrator of dev.local's revocations
// admin API, whose WIT dev gets from its own WIT issuer and keeps, with its key, in the
// run's directory, so that `dialogtrust revoke` works against dev as printed. The WIT
// issuer registers the operator with that key (the assertion method): its dev method,
// which gives any other dev.local identity to whoever asks, does not give this one.
const (
	devOperator        = "wimse://" + devTrustDomain + "/operator"
	devOperatorWITFile = "operator.wit"
	devOperatorKeyFile = "operator.jwk"
	// devAuditDir holds the TTSs' audit trails in the run's directory: tts.log for
	// dev.local's, peer.log for the peer's, each with its .checkpoint file.
	devAuditDir = "audit"
	// devCheckpointInterval is how often dev's trails are checkpointed: shorter than
	// the services' default (a minute), so that a trail has a signed head to verify
	// soon after the first tokens.
	devCheckpointInterval = 10 * time.Second
)

// devAuditConfig is the audit section of a dev TTS: a file in the run's directory,
// its writer named (the trail is this run's alone).
func devAuditConfig(path, writer string) string {
	return fmt.Sprintf(`audit:
  sink: file
  path: %q
  checkpoint_interval: %s
  writer: %s
`, path, devCheckpointInterval, writer)
}

// devOperatorConfig is def, dev.local's TTS configuration, with what the operator
// needs added: the audit trail at auditPath, and revocations (in the TTS's memory
// store: it alone enforces them) with the admin API and the operator's page (package
// console, reading that trail) on adminAddr, administered by devOperator. Loopback
// without TLS, as a development configuration may.
func devOperatorConfig(def []byte, adminAddr, auditPath string) []byte {
	return fmt.Appendf(slices.Clip(def), `
# Added by dialogtrust dev: the audit trail, revocations and their admin API (issue 26).
%srevocations:
  enabled: true
  admin:
    listen: %q
    administrators: [%q]
    page: {enabled: true}
`, devAuditConfig(auditPath, "tts"), adminAddr, devOperator)
}

// devOperatorLifetime is how long each client assertion of the operator lives.
const devOperatorLifetime = time.Minute

// newDevOperatorKey makes the operator's key and writes it to dir/operator.jwk (mode
// 0600); it returns the key and its public JWK, which dev.local's WIT issuer registers
// (devWITConfig).
func newDevOperatorKey(dir string) (*keys.PrivateKey, []byte, error) {
	key, err := keys.Generate(keys.ES256)
	if err != nil {
		return nil, nil, err
	}
	if err := writePrivateJWK(filepath.Join(dir, devOperatorKeyFile), key); err != nil {
		return nil, nil, err
	}
	pub, err := json.Marshal(key.Public())
	if err != nil {
		return nil, nil, err
	}
	return key, pub, nil
}

// devOperatorCredential gets the operator's WIT for key from the WIT issuer at witURL
// with a client assertion made with key (the assertion method, where dev registered the
// operator), and writes it to dir/operator.wit (mode 0600); it returns the WIT's expiry.
func devOperatorCredential(ctx context.Context, witURL, dir string, key *keys.PrivateKey) (time.Time, error) {
	hc := &http.Client{Timeout: 10 * time.Second}
	cl, _, err := witissuer.NewClient(ctx, hc, witURL)
	if err != nil {
		return time.Time{}, err
	}
	cl.Assertion = witissuer.AssertionFunc(key, cl, identifier.MustParse(devOperator), devOperatorLifetime)
	res, err := cl.Request(ctx, key)
	if err != nil {
		return time.Time{}, err
	}
	if err := writeFileAtomic(filepath.Join(dir, devOperatorWITFile), []byte(res.WIT+"\n")); err != nil {
		return time.Time{}, err
	}
	return time.Unix(res.ExpiresAt, 0), nil
}

// startDevOperator gets the first WIT of the operator, whose key newDevOperatorKey
// made, and keeps the WIT fresh until ctx ends (refreshDevOperator). It returns the
// operator's first one-time login link to the page of the admin API at adminURL, asked
// for as `dialogtrust revoke page` does, with the operator's WIT and key.
func startDevOperator(ctx context.Context, witURL, adminURL, dir string, key *keys.PrivateKey, stderr io.Writer) (*revokeapi.Session, error) {
	exp, err := devOperatorCredential(ctx, witURL, dir, key)
	if err != nil {
		return nil, fmt.Errorf("the operator's WIT: %w", err)
	}
	go refreshDevOperator(ctx, exp, time.Now, time.After, func() (time.Time, error) {
		return devOperatorCredential(ctx, witURL, dir, key)
	}, stderr)
	wit, err := os.ReadFile(filepath.Join(dir, devOperatorWITFile))
	if err != nil {
		return nil, err
	}
	c := &revokeapi.Client{URL: adminURL, Signer: httpsig.NewSigner(key, strings.TrimSpace(string(wit))), HTTP: &http.Client{Timeout: 10 * time.Second}}
	s, err := c.NewSession(ctx)
	if err != nil {
		return nil, fmt.Errorf("a login link to the operator's page: %w", err)
	}
	return s, nil
}

// devOperatorRetry is how soon a refresh that failed is tried again.
const devOperatorRetry = time.Minute

// refreshDevOperator renews the operator's WIT (the issuer's lifetime is an hour) by
// calling renew halfway through what is left of each one's life, until ctx ends: the
// printed `dialogtrust revoke` keeps working however long dev runs. A failed renewal
// is said on stderr and tried again after devOperatorRetry. now and after are the
// clock (tests drive them).
func refreshDevOperator(ctx context.Context, exp time.Time, now func() time.Time, after func(time.Duration) <-chan time.Time,
	renew func() (time.Time, error), stderr io.Writer) {
	for {
		wait := max(exp.Sub(now())/2, time.Second)
		select {
		case <-ctx.Done():
			return
		case <-after(wait):
		}
		next, err := renew()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			fmt.Fprintf(stderr, "dialogtrust dev: the operator's WIT was not renewed (trying again in %s): %v\n", devOperatorRetry, err)
			exp = now().Add(2 * devOperatorRetry)
			continue
		}
		exp = next
	}
}

// writeFileAtomic writes b to path (mode 0600) through a temporary file renamed over
// it, so that a reader never sees half a WIT.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// devAdminURL is the revocations admin API's URL on adminAddr; devPageURL the
// operator's page's.
func devAdminURL(adminAddr string) string { return "http://" + adminAddr + revokeapi.Path }

func devPageURL(adminAddr string) string { return "http://" + adminAddr + console.Prefix }

// devTTSResult is how dev.local's TTS ended: a listen error on adminAddr, its admin
// listener, names --admin-addr, any other --tts-addr.
func devTTSResult(err error, adminAddr string) devResult {
	if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Op == "listen" && oe.Addr != nil && oe.Addr.String() == adminAddr {
		return devResult{"--admin-addr", err}
	}
	return devResult{"--tts-addr", err}
}

// devBrowserCommand is the command that opens a URL in the user's browser: open on
// macOS, xdg-open elsewhere.
func devBrowserCommand() string {
	if runtime.GOOS == "darwin" {
		return "open"
	}
	return "xdg-open"
}

// devOpener is dev's --open: when on, a function that opens a link with
// devBrowserCommand, without waiting for the browser. The link is on that command's
// line, which other local users may read while it runs: like everything of dev, it is
// for development only.
func devOpener(on bool) func(link string) error {
	if !on {
		return nil
	}
	return func(link string) error {
		cmd := exec.Command(devBrowserCommand(), link)
		if err := cmd.Start(); err != nil {
			return err
		}
		go func() { _ = cmd.Wait() }()
		return nil
	}
}
