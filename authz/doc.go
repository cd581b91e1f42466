// Package authz decides who may call what: the facts a receiver (dialog.Receiver) or
// the proxy ingress verified about a request, put to a decision point that allows or
// refuses it (issue 25).
//
// Read authz.go first: Request (only what was verified, never what the caller merely
// claimed), Decision (which rule decided and why, logged but never sent), and Decider.
// A Decider's error means the decision could not be made (a condition that could not be
// evaluated, a policy decision point that did not answer): the caller refuses with
// decision_unavailable, kind incomplete (503). A decision that does not allow is a failed
// check: not_authorized (403). Nothing reaches the application in either case.
//
// Issuance (issuance.go) is the TTS's question, the facts of a token it is about to
// sign, asked of a tts.IssuanceDecider such as an AuthZEN client.
//
// Deciders: CEL allow conditions and an OpenID AuthZEN 1.0 Access Evaluation client are
// built on this interface.
package authz
