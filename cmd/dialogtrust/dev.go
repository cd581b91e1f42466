package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/cmd/internal/ttsservice"
	"github.com/dialogtrust/dialogtrust/cmd/internal/witissuerservice"
	"github.com/dialogtrust/dialogtrust/internal/service"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// devReadyTimeout bounds the wait for the services' /readyz; they are ready in well
// under a second, so reaching it means something is wrong.
const devReadyTimeout = 30 * time.Second

// devTrustDomain is the trust domain of the embedded development configurations;
// devPeerDomain, the peer domain whose TTS redeems dev.local's grants (AS B) and whose
// own WIT issuer gives its workloads their WITs.
const (
	devTrustDomain = "dev.local"
	devPeerDomain  = "peer.local"
)

// devRun: dialogtrust dev. One process runs a development trust domain on loopback:
// the WIT issuer and the TTS, each built by its command's own program (cmd/internal/witissuerservice,
// cmd/internal/ttsservice) and run by the one service runner (cmd/internal/kit), with
// their embedded development configurations, in-memory state and generated keys; and,
// for identity chaining (dialog-binding section 11, oauth.md 2), a second TTS for the
// peer domain peer.local, by the same program, with a WIT issuer of its own for
// peer.local's workloads. dev.local's TTS issues grants for the peer (AS A); the peer's
// redeems them (AS B), and issues a peer.local workload a Txn-Token for a linked dialog
// on the access token (Figure 5 step 4). It prints the URLs and the next commands once
// all four answer /readyz, and stops them gracefully on SIGINT or SIGTERM,
// removing the directory it made for the files of those commands. With --proxies it
// also runs a proxy pair (docs/proxy.md): an egress for the workload of the printed
// commands routing to an ingress in front of an echo application, and prints a curl
// command that goes through both. dev.local's TTS also keeps an audit trail, enforces
// revocations and serves the admin API and the operator's page, for an operator whose
// WIT and key dev keeps in the run's directory (devoperator.go, issue 26).
func devRun(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("dev", stderr)
	witAddr := fs.String("wit-addr", "127.0.0.1:0", "loopback host:port of the WIT issuer (port 0: a free one)")
	ttsAddr := fs.String("tts-addr", "127.0.0.1:0", "loopback host:port of the TTS (port 0: a free one)")
	peerAddr := fs.String("peer-addr", "127.0.0.1:0", "loopback host:port of the peer domain's TTS, AS B of identity chaining (port 0: a free one)")
	peerWITAddr := fs.String("peer-wit-addr", "127.0.0.1:0", "loopback host:port of the peer domain's WIT issuer (port 0: a free one)")
	adminAddr := fs.String("admin-addr", "127.0.0.1:0", "loopback host:port of the TTS's revocations admin API and operator's page (port 0: a free one)")
	openPage := fs.Bool("open", false, "open the operator's page's one-time login link in the browser (with "+devBrowserCommand()+"): its Sign in button signs in")
	logFormat := fs.String("log-format", "", "the services' logs on standard error: text or json (default: text on a terminal, else json)")
	proxies := fs.Bool("proxies", false, "also run a proxy pair on free loopback ports: an egress for "+devWorkload+" routing to an ingress in front of an echo application")
	app := fs.String("app", "", "with --proxies: the URL of your own HTTP application (such as http://127.0.0.1:8000), put behind the ingress in place of the echo application")
	egressAddr := fs.String("egress-addr", "127.0.0.1:0", "with --proxies: loopback host:port of the egress (port 0: a free one)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError{"unexpected argument " + fs.Arg(0)}
	}
	format, err := devLogFormat(*logFormat, stderrIsTerminal())
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Under `go run` the parent is the go command: if it is killed without a signal
	// reaching this process, the services must not outlive it.
	go stopWhenOrphaned(ctx, cancel, os.Getppid(), os.Getppid, kit.Ticker(ctx, time.Second))
	return runDev(ctx, devOptions{witAddr: *witAddr, ttsAddr: *ttsAddr, peerAddr: *peerAddr, peerWITAddr: *peerWITAddr, adminAddr: *adminAddr, proxies: *proxies,
		pair: devPairOptions{app: *app, egressAddr: *egressAddr}, logFormat: format, command: devCommand(), started: time.Now(),
		open: devOpener(*openPage)}, stdout, stderr)
}

type devOptions struct {
	witAddr, ttsAddr, peerAddr, peerWITAddr string
	// adminAddr is where dev.local's TTS serves its revocations admin API (devoperator.go).
	adminAddr string
	// proxies also runs the proxy pair (startDevPair), configured by pair.
	proxies bool
	pair    devPairOptions
	// logFormat is the services' (devLogFormat): kit.LogText or kit.LogJSON.
	logFormat string
	// command starts the printed commands: this executable, or `go run ./cmd/dialogtrust`.
	command string
	// started is when the process started, for the "ready in" line.
	started time.Time
	// cacheDir is the per-user cache directory ("" is os.UserCacheDir); tests set it.
	cacheDir string
	// ready, if set, hears the directory of the run once the commands are printed.
	ready func(dir string)
	// open, if set, opens the operator's page's one-time login link (--open).
	open func(link string) error
	// stopped, if set, hears the directory of the run once every service has stopped
	// (the audit trails closed with their last checkpoint), before it is removed.
	stopped func(dir string)
}

// runDev is dev until ctx ends; tests call it.
func runDev(ctx context.Context, o devOptions, stdout, stderr io.Writer) error {
	// Four services log to the one stderr from their own goroutines: one lock keeps
	// their lines whole (and a writer that is not safe for concurrent use, such as a
	// test's buffer, safe).
	stderr = &lockedWriter{w: stderr}
	// In text, the services' lines wait until dev's are printed (heldWriter).
	var held *heldWriter
	if o.logFormat == kit.LogText {
		held = holdWrites(stderr)
		defer held.release()
		stderr = held
	}
	if o.adminAddr == "" {
		o.adminAddr = "127.0.0.1:0"
	}
	flags := []string{"--wit-addr", "--tts-addr", "--peer-addr", "--peer-wit-addr", "--admin-addr"}
	for i, addr := range []string{o.witAddr, o.ttsAddr, o.peerAddr, o.peerWITAddr, o.adminAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return usageError{flags[i] + ": " + err.Error()}
		}
		// The services authenticate nobody: they are not to be reachable from elsewhere.
		if !kit.IsLoopback(addr) {
			return usageError{flags[i] + ": " + addr + " is not a loopback IP address (the development services authenticate nobody)"}
		}
	}
	if err := o.pair.check(o.proxies); err != nil {
		return err
	}
	addrs, err := freePorts(flags, o.witAddr, o.ttsAddr, o.peerAddr, o.peerWITAddr, o.adminAddr)
	if err != nil {
		return err
	}
	witAddr, ttsAddr, peerAddr, peerWITAddr, adminAddr := addrs[0], addrs[1], addrs[2], addrs[3], addrs[4]
	dir, removeDir, err := devDir(o.cacheDir)
	if err != nil {
		return err
	}
	auditDir := filepath.Join(dir, devAuditDir)
	if err := os.Mkdir(auditDir, 0o700); err != nil {
		_ = removeDir()
		return err
	}
	witURL, ttsURL, peerURL, peerWITURL := "http://"+witAddr, "http://"+ttsAddr, "http://"+peerAddr, "http://"+peerWITAddr

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan devResult, 7) // the four services and, with proxies, the pair's three
	// The operator's key is made first: dev.local's WIT issuer registers it, so that
	// the operator's identity is had only with it (devoperator.go).
	opKey, opJWK, err := newDevOperatorKey(dir)
	if err != nil {
		_ = removeDir()
		return err
	}
	// The services' own lines (the start log, the DEVELOPMENT banners, "listening on")
	// go to stderr: stdout is what this command prints.
	wp := devProgram(witissuerservice.Program, o.logFormat)
	wp.Config.Default = devWITConfig(witAddr, devTrustDomain, opJWK)
	go func() {
		done <- devResult{"--wit-addr", kit.Run(ctx, wp, devArgs(witAddr, o.logFormat), nil, stderr, stderr, nil)}
	}()
	// Both TTSs are the tts program with another embedded configuration, as with
	// --config: dev.local's is cmd/tts's default with identity chaining added, the
	// peer's its own (devPeerConfig).
	tp := devProgram(ttsservice.Program, o.logFormat)
	tp.Config.Default = devOperatorConfig(devChainingConfig(tp.Config.Default, peerURL), adminAddr, filepath.Join(auditDir, "tts.log"))
	ttsEnv := []string{ttsservice.EnvPrefix + "WIT_JWKS_URL=" + witURL + witissuer.PathJWKS}
	go func() {
		done <- devTTSResult(kit.Run(ctx, tp, devArgs(ttsAddr, o.logFormat), ttsEnv, stderr, stderr, nil), adminAddr)
	}()
	pp := devProgram(ttsservice.Program, o.logFormat)
	pp.Config.Default = devPeerConfig(peerAddr, witURL, ttsURL, peerWITURL, filepath.Join(auditDir, "peer.log"))
	go func() {
		done <- devResult{"--peer-addr", kit.Run(ctx, pp, devArgs(peerAddr, o.logFormat), nil, stderr, stderr, nil)}
	}()
	// The peer domain's workloads get their WITs from its own issuer, the wit-issuer
	// program with peer.local in place of dev.local: a dialog and the identities in it
	// stay within their trust domain (dialog-binding section 11).
	pwp := devProgram(witissuerservice.Program, o.logFormat)
	pwp.Config.Default = devWITConfig(peerWITAddr, devPeerDomain, nil)
	go func() {
		done <- devResult{"--peer-wit-addr", kit.Run(ctx, pwp, devArgs(peerWITAddr, o.logFormat), nil, stderr, stderr, nil)}
	}()
	running := 4
	// stopAll stops the services, then removes the run's directory, and returns the
	// first error; a listen error names the flag of the address. Every return after
	// the directory is made goes through it.
	stopAll := func(first error) error {
		held.release()
		cancel()
		for ; running > 0; running-- {
			if r := <-done; r.err != nil && first == nil {
				first = flagError(r)
			}
		}
		if o.stopped != nil {
			o.stopped(dir)
		}
		if err := removeDir(); err != nil {
			fmt.Fprintf(stderr, "dialogtrust dev: stopped; could not remove %s: %v\n", dir, err)
			if first == nil {
				first = err
			}
			return first
		}
		fmt.Fprintf(stderr, "dialogtrust dev: stopped; removed %s\n", dir)
		return first
	}

	// awaitReady waits until every URL answers; stopped is true when dev must end
	// (something stopped, or was not ready in time, or ctx ended), with the error to
	// end with, everything already stopped.
	awaitReady := func(what string, urls ...string) (stopped bool, err error) {
		readyCtx, readyCancel := context.WithTimeout(ctx, devReadyTimeout)
		defer readyCancel()
		waitErr := make(chan error, 1)
		go func() { waitErr <- waitReady(readyCtx, urls...) }()
		select {
		case r := <-done:
			running--
			if r.err == nil {
				r.err = errors.New("a service stopped before it was ready")
			}
			return true, stopAll(flagError(r))
		case err := <-waitErr:
			if err != nil {
				if ctx.Err() != nil {
					return true, stopAll(nil)
				}
				return true, stopAll(fmt.Errorf("%s were not ready within %s: %w", what, devReadyTimeout, err))
			}
		}
		return false, nil
	}
	if stopped, err := awaitReady("the services", witURL+service.PathReadyz, ttsURL+service.PathReadyz, peerURL+service.PathReadyz,
		peerWITURL+service.PathReadyz); stopped {
		return err
	}
	var pair *devPair
	if o.proxies {
		// After the services: each proxy discovers the WIT issuer as it starts.
		p, started, err := startDevPair(ctx, witURL, ttsURL, o.pair, o.logFormat, done, stderr)
		running += started
		if err != nil {
			return stopAll(err)
		}
		if stopped, err := awaitReady("the proxies", "http://"+p.egressOps+service.PathReadyz, "http://"+p.ingressOps+service.PathReadyz); stopped {
			return err
		}
		pair = p
	}
	// The operator's WIT comes from the WIT issuer, ready now; the admin API and the
	// page share the TTS's readiness.
	login, err := startDevOperator(ctx, witURL, devAdminURL(adminAddr), dir, opKey, stderr)
	if err != nil {
		return stopAll(err)
	}
	printDev(stdout, o.command, devURLs{wit: witURL, tts: ttsURL, peer: peerURL, peerWIT: peerWITURL, admin: devAdminURL(adminAddr),
		page: devPageURL(adminAddr), login: login.LoginURL}, dir, time.Since(o.started), pair)
	held.release()
	if o.open != nil {
		if err := o.open(login.LoginURL); err != nil {
			fmt.Fprintf(stderr, "dialogtrust dev: the operator's page was not opened (open the link above): %v\n", err)
		}
	}
	if o.ready != nil {
		o.ready(dir)
	}
	select {
	case <-ctx.Done():
		return stopAll(nil)
	case r := <-done:
		running--
		if r.err == nil {
			r.err = errors.New("a service stopped")
		}
		return stopAll(flagError(r))
	}
}

// devChainingConfig is def, the tts program's embedded development configuration, with
// identity chaining added: this TTS is AS A and issues grants, for the scope the printed
// commands use, to the peer's AS B at peerURL (its issuer identifier, the grant's aud).
func devChainingConfig(def []byte, peerURL string) []byte {
	return fmt.Appendf(slices.Clip(def), `
# Added by dialogtrust dev: AS A of identity chaining, for the peer domain's AS B.
chaining:
  peers:
    - {issuer: %q, token_endpoint: %q}
  as_a:
    peers:
      - {issuer: %q, scopes: [%s]}
`, peerURL, peerURL+tts.PathToken, peerURL, devScope)
}

// devPeerConfig is the configuration of the peer domain's TTS, AS B of identity
// chaining: it redeems the grants of dev.local's TTS (ttsURL), whose keys it takes from
// that TTS's JWKS, and issues access tokens for peer.local. AS B authenticates the
// client that presents a grant as every request to a TTS is authenticated, by its WIT
// and a proof of its key (the key the grant binds): so it trusts the WITs of dev.local's
// issuer (witURL), and those of peer.local's own (peerWITURL). As the TTS of peer.local
// it accepts the access tokens its AS B issues as subject tokens (the tts program adds
// them, typ at+jwt, its own keys, aud peer.local), and its one policy rule admits
// peer.local's workloads, with those and nothing else as subjects, to a Txn-Token for
// the linked dialog (Figure 5 step 4); dev.local's workloads get none here.
func devPeerConfig(peerAddr, witURL, ttsURL, peerWITURL, auditPath string) []byte {
	return fmt.Appendf(nil, `development: true
listen: %q
trust_domains: [%s]
keys: {alg: ES256}
store: {type: memory}
wits:
  - {trust_domain: %s, jwks_url: %q}
  - {trust_domain: %s, jwks_url: %q}
jwks_retry: 1s
auth:
  methods: [wit_httpsig, wit_wpt]
policy:
  lifetime: 5m
  rules:
    - {workload: "wimse://%s/", subject_token_types: [access_token]}
chaining:
  peers:
    - {issuer: %q, jwks_url: %q}
  as_b:
    audience: %s
    peers:
      - {issuer: %q, scopes: [%s]}
%s`, peerAddr, devPeerDomain, devTrustDomain, witURL+witissuer.PathJWKS, devPeerDomain, peerWITURL+witissuer.PathJWKS, devPeerDomain,
		ttsURL, ttsURL+tts.PathJWKS, devPeerDomain, ttsURL, devScope, devAuditConfig(auditPath, "peer"))
}

// devWITConfig is the configuration of domain's WIT issuer on addr: wit-issuer's
// embedded development default for that domain, whose dev method authenticates nobody.
// With operatorJWK (dev.local's), the operator is a registered workload of the
// assertion method with that public key: only a client assertion made with its key gets
// the operator's WIT, and the dev method refuses it (witissuer.DevOptions.Registered),
// so another local process cannot become the administrator of revocations.
func devWITConfig(addr, domain string, operatorJWK []byte) []byte {
	methods, assertion := "dev", ""
	if operatorJWK != nil {
		methods = "assertion, dev"
		assertion = fmt.Sprintf("  assertion:\n    workloads:\n      - {id: %q, jwk: %s}\n", devOperator, operatorJWK)
	}
	return fmt.Appendf(nil, `listen: %q
issuer: ""
trust_domains: [%s]
keys: {alg: ES256}
store: {type: memory}
auth:
%s  dev:
    prefixes: ["wimse://%s/"]
routes:
  - {path: %s, methods: [%s]}
`, addr, domain, assertion, domain, witissuer.PathWIT, methods)
}

// devResult is how one service's run ended; flag names its address.
type devResult struct {
	flag string
	err  error
}

// flagError is r's error, as a usage error naming the flag when the address could not
// be listened on (taken, or not this machine's).
func flagError(r devResult) error {
	if oe, ok := errors.AsType[*net.OpError](r.err); ok && oe.Op == "listen" {
		return usageError{r.flag + ": " + r.err.Error()}
	}
	return r.err
}

// freePorts replaces a port 0 in each address by a free port, chosen while the others
// are held so that they differ; a listen error names the address's flag (flags[i]).
func freePorts(flags []string, addrs ...string) ([]string, error) {
	out := slices.Clone(addrs)
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	for i, a := range addrs {
		if _, port, _ := net.SplitHostPort(a); port != "0" {
			continue
		}
		l, err := net.Listen("tcp", a)
		if err != nil {
			return nil, usageError{flags[i] + ": " + err.Error()}
		}
		held = append(held, l)
		out[i] = l.Addr().String()
	}
	return out, nil
}

// devDir makes a fresh directory for this run under <user cache dir>/dialogtrust/dev
// (mode 0700) and returns it with the function that removes it, and the parents it
// made when they are empty again: nothing of the run stays behind.
func devDir(cacheDir string) (string, func() error, error) {
	if cacheDir == "" {
		var err error
		if cacheDir, err = os.UserCacheDir(); err != nil {
			return "", nil, fmt.Errorf("no per-user cache directory for the development files: %w", err)
		}
	}
	parent := filepath.Join(cacheDir, "dialogtrust")
	base := filepath.Join(parent, "dev")
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp(base, "run-")
	if err != nil {
		return "", nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", nil, err
	}
	return dir, func() error {
		err := os.RemoveAll(dir)
		// Left when another run still uses them: Remove refuses a directory that is
		// not empty.
		_ = os.Remove(base)
		_ = os.Remove(parent)
		return err
	}, nil
}

// waitReady polls each URL until it answers 200.
func waitReady(ctx context.Context, urls ...string) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	for _, u := range urls {
		for {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return err
			}
			resp, err := hc.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
				err = fmt.Errorf("%s: %s", u, resp.Status)
			}
			select {
			case <-ctx.Done():
				return err
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// Names used by the printed commands.
const (
	devWorkload = "wimse://" + devTrustDomain + "/agent/a1"
	devDialog   = "D1"
	devScope    = "trip.read"
	devSubject  = "alice@" + devTrustDomain
	// devPeerWorkload is B1 of Figure 5, the peer domain's workload that records the
	// linked dialog devLinkedDialog in a Txn-Token of peer.local.
	devPeerWorkload = "wimse://" + devPeerDomain + "/agent/b1"
	devLinkedDialog = "D2"
)

// devURLs are the base URLs of dev's services.
type devURLs struct {
	wit, tts, peer, peerWIT string
	// admin is the revocations admin API's URL; page the operator's page's, and login
	// the operator's first one-time login link to it.
	admin, page, login string
}

// printDev prints the URLs and the next commands; every file they write is in dir.
// With pair (dev --proxies) it names the proxies too and adds the command that goes
// through them.
func printDev(w io.Writer, command string, u devURLs, dir string, took time.Duration, pair *devPair) {
	witURL, ttsURL, peerURL := u.wit, u.tts, u.peer
	file := func(name string) string { return shellQuote(filepath.Join(dir, name)) }
	key, witFile, txnFile, grantFile, atFile := file("a1.jwk"), file("a1.wit"), file("a1.txn"), file("a1.grant"), file("a1.at")
	peerKey, peerWITFile, peerTxnFile := file("b1.jwk"), file("b1.wit"), file("b1.txn")
	opKey, opWITFile := file(devOperatorKeyFile), file(devOperatorWITFile)
	lines := []string{
		"dialogtrust dev: a DEVELOPMENT trust domain (" + devTrustDomain + ") on loopback, with a peer domain (" + devPeerDomain +
			") for identity chaining. It authenticates NOBODY: never use it for anything real.",
		"",
		"  WIT issuer  " + witURL + "  (JWKS " + witURL + witissuer.PathJWKS + ")",
		"  TTS         " + ttsURL + "  (token endpoint " + ttsURL + tts.PathToken + "; AS A: grants for " + devPeerDomain + ")",
		"  peer TTS    " + peerURL + "  (" + devPeerDomain + "; AS B: token endpoint " + peerURL + tts.PathToken + ")",
		"  peer WIT    " + u.peerWIT + "  (" + devPeerDomain + "'s WIT issuer; JWKS " + u.peerWIT + witissuer.PathJWKS + ")",
		"  operator    " + u.page + "  (the operator's page; sign in once, within a minute: " + u.login + ")",
		"  admin API   " + u.admin + "  (revocations; its administrator " + devOperator + "'s WIT and key are in files)",
		"  audit       " + filepath.Join(dir, devAuditDir, "tts.log") + "  (the TTS's audit trail, checkpointed every " + devCheckpointInterval.String() +
			"; peer.log beside it: the peer TTS's)",
		"  files       " + dir + "  (removed on exit)",
		"",
		fmt.Sprintf("Ready in %.1fs. Next, in another terminal, from this directory:", took.Seconds()),
		"",
		"  # 1. a WIT for the workload " + devWorkload + " (its private key in the file of --key-out)",
		"  " + command + " wit request --issuer " + witURL + " --workload " + devWorkload + " --key-out " + key + " > " + witFile,
		"  # 2. verify the WIT against the issuer's JWKS",
		"  " + command + " wit verify --trust " + witURL + witissuer.PathJWKS + " @" + witFile,
		"  # 3. a Txn-Token for dialog " + devDialog + ", for the subject " + devSubject,
		"  " + command + " txn request --tts " + ttsURL + " --wit @" + witFile + " --key " + key + " --self-signed " + devSubject +
			" --scope " + devScope + " --audience " + devTrustDomain + " --dialog " + devDialog + " > " + txnFile,
		"  # 4. verify the Txn-Token as a receiver in " + devTrustDomain + " does, and that it is for dialog " + devDialog,
		"  " + command + " txn verify --jwks " + ttsURL + tts.PathJWKS + " --audience " + devTrustDomain + " --dialog " + devDialog + " @" + txnFile,
		"  # 5. a JWT authorization grant for the peer's AS B, from the TTS (AS A), for the Txn-Token's subject",
		"  " + command + " chain grant --tts " + ttsURL + " --wit @" + witFile + " --key " + key + " --txn-token @" + txnFile +
			" --audience " + peerURL + " --scope " + devScope + " > " + grantFile,
		"  # 6. redeem it at the peer's AS B (which authenticates the workload by its WIT and proof) for an access token of " + devPeerDomain,
		"  " + command + " chain redeem --token-endpoint " + peerURL + tts.PathToken + " --wit @" + witFile + " --key " + key +
			" --grant @" + grantFile + " --scope " + devScope + " > " + atFile,
		"  # 7. a WIT for the peer domain's workload " + devPeerWorkload + ", from " + devPeerDomain + "'s WIT issuer",
		"  " + command + " wit request --issuer " + u.peerWIT + " --workload " + devPeerWorkload + " --key-out " + peerKey + " > " + peerWITFile,
		"  # 8. as " + devPeerWorkload + ", exchange the access token at the peer TTS for a Txn-Token of " + devPeerDomain +
			" recording the linked dialog " + devLinkedDialog,
		"  " + command + " txn request --tts " + peerURL + " --wit @" + peerWITFile + " --key " + peerKey + " --subject-token @" + atFile +
			" --subject-token-type access_token --scope " + devScope + " --audience " + devPeerDomain + " --dialog " + devLinkedDialog + " > " + peerTxnFile,
		"  # 9. verify it as a receiver in " + devPeerDomain + " does, and that it is for dialog " + devLinkedDialog + " (the subject still " + devSubject + ")",
		"  " + command + " txn verify --jwks " + peerURL + tts.PathJWKS + " --audience " + devPeerDomain + " --dialog " + devLinkedDialog + " @" + peerTxnFile,
		"  # 10. as the operator " + devOperator + ", a new one-time login link to the operator's page (D1 is among its recent dialogs)",
		"  " + command + " revoke page --admin " + u.admin + " --wit @" + opWITFile + " --key " + opKey,
		"  # 11. as the operator, revoke dialog " + devDialog + " at the TTS: step 3 run again is refused (dialog_revoked)",
		"  " + command + " revoke --admin " + u.admin + " --wit @" + opWITFile + " --key " + opKey + " --dialog " + devDialog,
		"",
		"Ctrl-C stops the four services and removes " + dir + ".",
	}
	if pair != nil {
		// After the peer WIT issuer's line; and the command before the last two lines (the
		// blank one and Ctrl-C's), which then names everything it stops.
		lines = slices.Insert(lines, slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "  operator ") }),
			"  egress      http://"+pair.egress+"  (proxy for "+devWorkload+": "+devPairPrefix+"/... to the ingress)  ops http://"+pair.egressOps,
			"  ingress     http://"+pair.ingress+"  (proxy for "+devTool+", in front of "+pair.behind()+")  ops http://"+pair.ingressOps)
		lines = slices.Insert(lines, len(lines)-2, pair.curlLines()...)
		lines[len(lines)-1] = pair.stopLine(dir)
		lines = insertAfterFiles(lines, pair.appLines())
	}
	fmt.Fprintln(w, strings.Join(lines, "\n"))
}

// goRunExecutable matches an executable that `go run` built: in a go-build temporary
// directory, or in the build cache (<GOCACHE>/xx/<hash>-d/).
var goRunExecutable = regexp.MustCompile(`(^|/)go-build[0-9]+/|/[0-9a-f]{2}/[0-9a-f]{64}-d/[^/]+$`)

// devCommand is how the printed commands start: this executable when it is an
// installed or built one; under `go run`, whose executable is temporary, `go run
// ./cmd/dialogtrust` (from the repository's root) or the package path.
func devCommand() string {
	exe, err := os.Executable()
	if err == nil && !goRunExecutable.MatchString(filepath.ToSlash(exe)) {
		return shellQuote(exe)
	}
	if _, err := os.Stat(filepath.Join("cmd", "dialogtrust", "main.go")); err == nil {
		return "go run ./cmd/dialogtrust"
	}
	return "go run github.com/dialogtrust/dialogtrust/cmd/dialogtrust"
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@=,%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// stopWhenOrphaned calls stop when getppid is no longer ppid (the parent died and this
// process was adopted), checking on every tick until ctx ends.
func stopWhenOrphaned(ctx context.Context, stop func(), ppid int, getppid func() int, tick <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			if getppid() != ppid {
				stop()
				return
			}
		}
	}
}

// lockedWriter serializes the writes of several goroutines to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
