// Package problem writes rejections as RFC 9457 problem details
// (application/problem+json) with the stable code of package errcode.
//
// Everything is in problem.go.
//
// The status follows the kind and the code: a check that could not be completed is 503,
// so that callers and load balancers can tell it from a bad credential; credential
// failures are 401 or 400 as the WIMSE drafts recommend for their binding; policy
// refusals are 403. The body never contains a token: details come from errcode errors,
// which never carry whole tokens.
//
// The document is RFC 9457 section 3's, with code and kind as extension members
// (section 3.2); kind is what dialog-binding section 12 asks of an error: whether a
// check failed or could not be completed.
package problem
