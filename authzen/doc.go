// Package authzen is a client of the OpenID AuthZEN Authorization API 1.0 (final,
// January 2026): the Access Evaluation API (section 6, POST /access/v1/evaluation) of a
// policy decision point (PDP), found through its metadata (section 9,
// /.well-known/authzen-configuration), behind a bounded decision cache. It is the
// external decision point of issue 25, asked by the TTS before it issues
// (IssuanceRequest, through tts.IssuanceDecider) and by receivers and the proxy ingress
// (Decider, an authz.Decider).
//
// Read client.go first (Client, New, Evaluate: one evaluation, fail-closed), then
// wire.go (the request and response documents and their bounded, strict parser),
// discovery.go (the metadata and its validation), cache.go (the decision cache) and
// mapping.go (how a verified request or an issuance becomes subject, action, resource
// and context; docs/proxy.md and docs/tts.md, "AuthZEN setup", show the same mapping).
//
// The questions are written as encoding/json writes them (map members sorted; the
// package's own property structs in field order, which is alphabetical), so the same
// question is the same body, and the cache key is the SHA-256 of the endpoint and that
// body: every member decides. WithEscapedIDs percent-encodes ":", "#", "@", "%" and white
// space in the ids, for PDPs (OpenFGA) that refuse them.
//
// Fail-closed: a PDP that cannot be reached, does not answer within the timeout,
// answers with a status other than 200, or answers with anything but a JSON object
// holding a boolean decision (or more than the size bound) is an error, which callers
// turn into decision_unavailable (incomplete, 503). A decision false is a failed check
// (not_authorized, 403). The PDP's reason (the response's context) is returned in
// authz.Decision.Reason for the log and is never sent to the caller.
package authzen
