// Package adaptertest is the one trust domain the SDK adapters' tests (adapters/mcp,
// adapters/a2a) run in, and what those tests record: a.example as testbed.StartDomain
// runs it (its WIT issuer, and its TTS that issues Txn-Tokens for self-signed subject
// tokens, oauth.md 1.4, on loopback), the delegating agent (the planner) and its
// delegate (the hotel) with their handoff keys, the delegate's handoff receiver, and
// its dialog receiver for one host protocol. What differs per SDK (its client and
// server) stays in the adapter's tests.
//
// Read world.go first (World, NewWorld: the trust domain, the receivers, the clients'
// configuration, the planner's offers), then checks.go and example.go (what every
// adapter's test asserts, Blocking work for the cancels) and record.go (Recorder, what
// went over the wire).
//
// It is test support, like testkit: nothing outside tests imports it. It implements
// no spec section.
package adaptertest
