// Package testbed starts two trust domains in this process, on loopback, for examples
// and tests: a.example and b.example, each with its WIT issuer (package witissuer,
// development authentication) and its TTS with the identity-chaining authorization
// server behind the same token endpoint (packages tts and chaining), wired as
// cmd/wit-issuer and cmd/tts wire them. a.example's AS issues JWT authorization grants
// for b.example's (AS A); b.example's redeems them for access tokens of b.example (AS
// B), and trusts a.example's WITs for that (dialog-binding section 11, Figure 5;
// oauth.md 2 and 4).
//
// Read testbed.go first (World, Domain, Start), then linked.go (the trust boundary of
// Figure 5), handoffs.go and steps.go.
//
// StartDomain starts one such domain alone, without identity chaining (the
// dialog and proxy end-to-end tests and the SDK adapters' tests run in one).
//
// Options (options.go) shape the world for a test: WithClock, a settable clock for
// every service, store, key set and client of it (a test moves it to check expiry
// without sleeping); WithScopes, what may cross; WithMiddleware, to record what reached
// a domain's servers (section 13); WithDomainC, a third domain whose grants b.example
// does not trust; WithIdP, a.example's identity provider (idp.go), whose ID tokens AS A
// turns into ID-JAGs that AS B redeems (an agent links with agent.LinkConfig.IDToken). The agent package's Figure 5 tests and `dialogtrust demo` run in
// this world, so that the two-domain world is built in one place. Read testbed.go
// first.
//
// On top of the services it holds the two ends of a dialog linked across the boundary
// that the protocol adapters' examples (adapters/mcp, adapters/a2a) share: the
// initiator's LinkedClient, whose first request links the dialog through an
// agent.Linker, and the peer's LinkAcceptor, agent.LinkAcceptor plus the verification
// of the Txn-Token its TTS issues for the linked dialog. What differs per protocol (the
// SDK's client and server, where the handoff travels) stays in the adapters. Trip
// (trip.go) is the cast and the steps their two-domain examples share; tripsteps.go
// their frame (Main, RunTrip) and the hotel's receivers, link and offer.
//
// Everything here is for development: the WIT issuers authenticate nobody (witissuer.NewDev),
// keys are generated at start and state is in memory. Nothing of it is to be reachable
// from elsewhere; every server listens on 127.0.0.1.
package testbed
