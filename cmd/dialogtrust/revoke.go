package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"time"

	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// adminFlags are the operator's: the admin API's URL, the operator's WIT and key (the
// API takes a WIT with an HTTP signature, never a bearer secret) and --timeout.
type adminFlags struct {
	admin, wit, key *string
	timeout         *time.Duration
}

func addAdminFlags(fs *flag.FlagSet) *adminFlags {
	return &adminFlags{
		admin:   fs.String("admin", "", "the TTS's revocations admin API (revocations.admin: http(s)://host:port/admin/revocations)"),
		wit:     fs.String("wit", "", "the operator's WIT (value, @file or -)"),
		key:     fs.String("key", "", "the operator's private JWK file (the WIT's key)"),
		timeout: fs.Duration("timeout", 30*time.Second, "time allowed for the whole exchange"),
	}
}

// client checks the flags and returns the API's client, signing with the operator's
// WIT and key, and the context of the exchange.
func (a *adminFlags) client(fs *flag.FlagSet, stdin io.Reader) (*revokeapi.Client, context.Context, context.CancelFunc, error) {
	if err := requiredInOrder("admin", *a.admin, "wit", *a.wit, "key", *a.key); err != nil {
		return nil, nil, nil, err
	}
	if err := baseURL("admin", *a.admin); err != nil {
		return nil, nil, nil, err
	}
	if fs.NArg() > 0 {
		return nil, nil, nil, usageError{"unexpected argument " + fs.Arg(0)}
	}
	key, err := loadPrivateKey(*a.key, stdin)
	if err != nil {
		return nil, nil, nil, err
	}
	wit, err := readValue(*a.wit, stdin)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *a.timeout)
	return &revokeapi.Client{URL: *a.admin, Signer: httpsig.NewSigner(key, wit), HTTP: &http.Client{Timeout: *a.timeout}}, ctx, cancel, nil
}

// call runs one exchange with the admin API: the client of the flags, within --timeout.
func (a *adminFlags) call(fs *flag.FlagSet, stdin io.Reader, exchange func(context.Context, *revokeapi.Client) error) error {
	c, ctx, cancel, err := a.client(fs, stdin)
	if err != nil {
		return err
	}
	defer cancel()
	return exchange(ctx, c)
}

// revokeRun: dialogtrust revoke. It asks the TTS's admin API to revoke one dialog
// (with the dialogs linked from it, where the link is known: --linked), workload or
// transaction, and prints the revocation as stored.
func revokeRun(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("revoke", stderr)
	a := addAdminFlags(fs)
	dlg := fs.String("dialog", "", "revoke this dialog")
	linked := fs.Bool("linked", false, "with --dialog: also the dialogs linked from it, where the link is known")
	workload := fs.String("workload", "", "revoke this workload (of the TTS's trust domains)")
	txn := fs.String("txn", "", "revoke this transaction (a Txn-Token's txn)")
	reason := fs.String("reason", "", "why (kept with the revocation, never sent to the refused callers)")
	ttl := fs.Duration("ttl", 0, "how long the revocation lasts (default the API's: revocations.admin.default_ttl)")
	if err := parse(fs, args); err != nil {
		return err
	}
	req, err := revocationRequest(*dlg, *workload, *txn, *linked)
	if err != nil {
		return err
	}
	if *ttl < 0 || *ttl%time.Second != 0 {
		return usageError{"--ttl: a positive number of whole seconds"}
	}
	req.Reason, req.TTLSeconds = *reason, int64(*ttl/time.Second)
	return a.call(fs, stdin, func(ctx context.Context, c *revokeapi.Client) error {
		r, err := c.Revoke(ctx, req)
		if err != nil {
			return err
		}
		return printJSON(stdout, r)
	})
}

// revocationRequest is the one subject of --dialog, --workload and --txn.
func revocationRequest(dlg, workload, txn string, linked bool) (revokeapi.Request, error) {
	var req revokeapi.Request
	n := 0
	for _, s := range []struct {
		kind revoke.Kind
		id   string
	}{{revoke.Dialog, dlg}, {revoke.Workload, workload}, {revoke.Txn, txn}} {
		if s.id != "" {
			req.Kind, req.ID = s.kind, s.id
			n++
		}
	}
	switch {
	case n != 1:
		return req, usageError{"one of --dialog, --workload and --txn is required"}
	case linked && req.Kind != revoke.Dialog:
		return req, usageError{"--linked goes with --dialog"}
	}
	req.Linked = linked
	return req, nil
}

// revokeList: dialogtrust revoke list. It prints the live revocations.
func revokeList(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("revoke list", stderr)
	a := addAdminFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	return a.call(fs, stdin, func(ctx context.Context, c *revokeapi.Client) error {
		l, err := c.List(ctx)
		if err != nil {
			return err
		}
		return printJSON(stdout, revokeapi.List{Revocations: l})
	})
}

// revokeLift: dialogtrust revoke lift. It lifts one revocation.
func revokeLift(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("revoke lift", stderr)
	a := addAdminFlags(fs)
	dlg := fs.String("dialog", "", "the revoked dialog")
	workload := fs.String("workload", "", "the revoked workload")
	txn := fs.String("txn", "", "the revoked transaction")
	if err := parse(fs, args); err != nil {
		return err
	}
	req, err := revocationRequest(*dlg, *workload, *txn, false)
	if err != nil {
		return err
	}
	return a.call(fs, stdin, func(ctx context.Context, c *revokeapi.Client) error {
		ok, err := c.Lift(ctx, req.Kind, req.ID)
		if err != nil {
			return err
		}
		return printJSON(stdout, revokeapi.Deleted{Deleted: ok})
	})
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// revokePage: dialogtrust revoke page. It asks the admin API for a one-time login link
// to the operator's page (POST /admin/sessions, signed like every revoke command) and
// prints it: open it in a browser within a minute and press Sign in; it works once.
func revokePage(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("revoke page", stderr)
	a := addAdminFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	return a.call(fs, stdin, func(ctx context.Context, c *revokeapi.Client) error {
		s, err := c.NewSession(ctx)
		if err != nil {
			return err
		}
		if _, err := io.WriteString(stdout, s.LoginURL+"\n"); err != nil {
			return err
		}
		_, err = io.WriteString(stderr, "Open this link in your browser before "+s.ExpiresAt.Local().Format(time.TimeOnly)+" and press Sign in: it works once.\n")
		return err
	})
}
