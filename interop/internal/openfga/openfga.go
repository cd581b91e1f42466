// Package openfga runs OpenFGA (v1.22.1, the binary DIALOGTRUST_OPENFGA names) as the
// AuthZEN policy decision point of the interoperability tests: `openfga run` with the
// in-memory datastore and its experimental AuthZEN 1.0 endpoints on
// (--experimentals=authzen; per store: /stores/{id}/access/v1/evaluation and the
// metadata at /.well-known/authzen-configuration/{id}), and its HTTP API for stores,
// authorization models and relationship tuples. docs/interop.md describes the same
// set-up by hand.
package openfga

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/interop/internal/proc"
)

// EnvBinary names the OpenFGA binary (.ci/peers builds it).
const EnvBinary = "DIALOGTRUST_OPENFGA"

// Server is a running OpenFGA.
type Server struct {
	// URL is its HTTP API, also the base of the AuthZEN endpoints and of the
	// policy_decision_point identifiers it publishes (--authzen-base-url).
	URL     string
	Process *proc.Program
}

// Start runs bin on two free loopback ports (HTTP and gRPC; metrics and the playground
// off) and waits until it is serving. The process is stopped by its PID when the test
// ends.
func Start(t testing.TB, bin string) *Server {
	t.Helper()
	httpPort, grpcPort := testkit.FreePort(t), testkit.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	p := proc.StartProcess(t, "openfga", bin, t.TempDir(), []string{"run",
		"--experimentals=authzen", "--authzen-base-url=" + base,
		"--datastore-engine=memory",
		fmt.Sprintf("--http-addr=127.0.0.1:%d", httpPort), fmt.Sprintf("--grpc-addr=127.0.0.1:%d", grpcPort),
		"--metrics-enabled=false", "--playground-enabled=false", "--log-format=json", "--log-level=warn",
	}, nil)
	p.WaitHTTP(t, base+"/healthz", 60*time.Second)
	return &Server{URL: base, Process: p}
}

// Store is one OpenFGA store: an AuthZEN PDP of its own.
type Store struct {
	s  *Server
	ID string
}

// PDP is the store's AuthZEN identifier (its metadata's policy_decision_point).
func (st *Store) PDP() string { return st.s.URL + "/stores/" + st.ID }

// MetadataURL is where OpenFGA publishes the store's metadata: per store, under the
// well-known path, rather than with the identifier's path inserted (AuthZEN section 9).
func (st *Store) MetadataURL() string {
	return st.s.URL + "/.well-known/authzen-configuration/" + st.ID
}

// NewStore creates a store and writes model (an authorization model in OpenFGA's JSON
// form) to it.
func (s *Server) NewStore(ctx context.Context, name string, model json.RawMessage) (*Store, error) {
	var created struct {
		ID string `json:"id"`
	}
	if err := s.call(ctx, "/stores", map[string]string{"name": name}, http.StatusCreated, &created); err != nil {
		return nil, err
	}
	st := &Store{s: s, ID: created.ID}
	if err := s.call(ctx, "/stores/"+st.ID+"/authorization-models", model, http.StatusCreated, nil); err != nil {
		return nil, err
	}
	return st, nil
}

// Tuple is a relationship tuple; Condition names a condition of the model.
type Tuple struct {
	User      string     `json:"user"`
	Relation  string     `json:"relation"`
	Object    string     `json:"object"`
	Condition *Condition `json:"condition,omitempty"`
}

// Condition is a tuple's condition.
type Condition struct {
	Name string `json:"name"`
}

// Write adds tuples.
func (st *Store) Write(ctx context.Context, tuples ...Tuple) error {
	return st.s.call(ctx, "/stores/"+st.ID+"/write", map[string]any{"writes": map[string]any{"tuple_keys": tuples}}, http.StatusOK, nil)
}

// Delete removes tuples.
func (st *Store) Delete(ctx context.Context, tuples ...Tuple) error {
	for i := range tuples {
		tuples[i].Condition = nil
	}
	return st.s.call(ctx, "/stores/"+st.ID+"/write", map[string]any{"deletes": map[string]any{"tuple_keys": tuples}}, http.StatusOK, nil)
}

// call posts body to the API at path; OpenFGA answers 200 where 201 could be meant.
func (s *Server) call(ctx context.Context, path string, body any, want int, out any) error {
	accept := []int{want}
	if want == http.StatusCreated {
		accept = append(accept, http.StatusOK)
	}
	if err := proc.PostJSON(ctx, s.URL+path, body, out, accept...); err != nil {
		return fmt.Errorf("openfga %s: %w", path, err)
	}
	return nil
}
