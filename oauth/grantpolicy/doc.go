// Package grantpolicy is the CEL part of token issuance policy (issue 25): the typed
// variables a rule's expressions read at the TTS and at both identity-chaining
// authorization servers, and the three things an expression may do in a rule: decide
// whether the rule applies (when), narrow the granted scopes (scopes), and compute tctx
// members.
//
// Read grantpolicy.go: the variables (requester, subject, request, input, and target
// at a chaining server), Compile, NewInput and the Conditions' Holds, Narrow and
// Members. The expressions themselves are package condition's: type-checked at load
// with the file and line in the error, bounded when evaluated, and a rule whose
// expression cannot be evaluated refuses (condition_error, condition_not_evaluated)
// with a detail that names the rule and nothing of the policy file, the condition's
// error beneath it for the log.
//
// The variables of a request (NewInput) are built lazily, each in one pooled struct: an
// expression that does not read the subject's claims or request_details never has them
// decoded, and a cached token's claims are decoded once for all its requests. The
// sizes of request.scopes that the token endpoints keep are declared to CEL's cost
// estimate, so that the usual rules are bounded at load and run without the runtime
// cost tracker (docs/performance.md, "CEL policy"). docs/tts.md ("Conditions") lists
// every field.
package grantpolicy
