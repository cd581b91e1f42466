package agent

import (
	"context"
	"sync"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
)

// HostClientConfig is the HTTP side and the handoff side of one client of a host
// protocol's SDK: what adapters/mcp's NewHTTPClient and adapters/a2a's ClientOptions
// build the SDK's *http.Client from. The two adapters differ in where an offer and a
// cancel travel (hostproto), not in this.
type HostClientConfig struct {
	// Transport proves every request (required).
	Transport *Transport
	// Dialog is the dialog the client's requests belong to; nil for none. Each
	// request's Dialog-Context is its Value, octet for octet.
	Dialog *dialog.Context
	// Delegator, when set, adds its "canceled" status to the cancel the SDK sends for
	// a call that carried one of its offers (handoff-context section 6), unless the
	// caller placed one itself.
	Delegator *handoff.Delegator
}

// Check refuses a configuration without a Transport; host names the protocol in the
// message ("MCP", "A2A").
func (c HostClientConfig) Check(host string) error {
	if c.Transport == nil {
		return errcode.New(errcode.InvalidRequest, "an %s client needs an agent.Transport", host)
	}
	return nil
}

// InDialog is ctx with c.Dialog attached for the Transport (WithDialog), or ctx as it
// is when c has no dialog.
func (c HostClientConfig) InDialog(ctx context.Context) context.Context {
	if c.Dialog == nil {
		return ctx
	}
	return WithDialog(ctx, c.Dialog)
}

// MaxOfferedHops bounds the calls with an offer an OfferedHops remembers.
const MaxOfferedHops = 4096

// OfferedHops remembers the hop of each call that carried an offer, by a key the
// protocol gives the call (an MCP session and JSON-RPC id, an A2A task), so that the
// cancel of that call can carry the delegator's "canceled" status for the hop
// (handoff-context section 6). It keeps the last MaxOfferedHops calls. The zero value
// is ready; it is safe for concurrent use.
type OfferedHops[K comparable] struct {
	mu    sync.Mutex
	hops  map[K]string
	order []K
}

// Remember notes that the call k carried the offer of hop.
func (o *OfferedHops[K]) Remember(k K, hop string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.hops == nil {
		o.hops = map[K]string{}
	}
	if _, ok := o.hops[k]; !ok {
		o.order = append(o.order, k)
	}
	o.hops[k] = hop
	for len(o.order) > MaxOfferedHops {
		delete(o.hops, o.order[0])
		o.order = o.order[1:]
	}
}

// Take returns the hop of the call k and forgets it; "" when k carried no offer, or
// was forgotten.
func (o *OfferedHops[K]) Take(k K) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	hop := o.hops[k]
	delete(o.hops, k)
	return hop
}
