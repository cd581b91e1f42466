// Package httpsig implements the WIMSE profile of HTTP Message Signatures
// (draft-ietf-wimse-http-signature-07 section 3, a profile of RFC 9421; wimse.md
// section 4), with the Dialog-Context rules of dialog-binding section 7.
//
// Read sign.go first (Signer), then verify.go (Verifier and the checks of the profile).
// base.go builds the signature base for both, params.go reads Signature-Input and
// Signature, digest.go is Content-Digest, and readbase.go reads back a base recorded on
// an earlier hop (provenance).
//
// A workload signs each request with the private key its WIT binds (cnf.jwk), so the
// signature is the proof of possession of the WIT. A Signer makes request and response
// signatures; a Verifier checks them and returns the validated WIT of the sender.
//
// # Why the signature base is built here
//
// github.com/yaronf/httpsign v0.3.2 cannot emit the profile's parameters (wimse-aud,
// wimse-sign-response, wimse-req-nonce) nor the parameter order the conformance vectors
// record (created, expires, nonce, tag, wimse-aud, wimse-sign-response |
// wimse-req-nonce); it selects a signature by label where the profile selects by tag;
// it checks time against the wall clock; its low-level verify does not check
// Content-Digest; and its verification costs 1.2-1.4x the raw signature check, while the
// whole WIT + proof verification has a budget of 1.3x. So the RFC 9421 signature base
// of the WIMSE component set is built in one place, base.go, for signing and verifying
// alike. Signature-Input and Signature are parsed and serialized with
// github.com/dunglas/httpsfv (RFC 8941), never by hand; the received Signature-Input is
// parsed once and its member serialized once (that serialization is the
// "@signature-params" line). Content-Digest is hashed with crypto/sha256 and
// crypto/sha512 over the body octets already read (bounded at the body limit) and the
// field is parsed with httpsfv, by the rules of httpsign's ValidateContentDigestHeader,
// which the tests keep as the reference. The tests use httpsign as an independent
// implementation: what this package signs must verify with httpsign.VerifyRequest and
// httpsign.VerifyResponse.
//
// # Signature base
//
// One line `"<component id>": <value>` per covered component, in Signature-Input order,
// then `"@signature-params": <inner list>`, joined by LF, no LF at the end. Supported
// components: @method, @path (an empty path is "/"), @query ("?" alone without a query,
// RFC 9421 section 2.2.7), @authority (lowercased, default port removed), @target-uri,
// @status (responses), header fields by lowercased name (the values of repeated fields
// joined by ", " with surrounding OWS removed, RFC 9421 section 2.1), and ;req on
// response components taken from the request. Other derived components and component
// parameters (;sf, ;key, ;bs, ;tr, ;name) are unsupported_component; a covered field the
// message lacks is missing_component; a value with CR, LF or NUL is
// invalid_component_value.
//
// The "@signature-params" line of a received signature is the RFC 8941 serialization of
// the parsed Signature-Input member, re-serialized with httpsfv. RFC 9421 defines it so,
// and it equals the received text whenever that text is canonical, as every known signer
// emits it. So the base always holds the canonical form: a member transmitted with, say,
// extra spaces between items still verifies, while a signer that signed a non-canonical
// serialization ("?1" for a bare true, "1.50" for a decimal) fails with
// invalid_signature. Nothing is rejected for form earlier, so that a non-canonical
// signature of an intermediary, which is never verified, cannot make the WIMSE one fail.
// A repeated dictionary key keeps the last value (RFC 8941 section 4.2.2), as in every
// conforming parser.
//
// # Verification order
//
// The first failing check decides the code. Checks that need only the message come first
// and the cryptographic ones last; nothing is trusted before the signature verifies,
// and the nonce is claimed only after it has, so an unauthenticated sender cannot spend
// someone else's nonce.
//
//  1. Signature fields (SIG-1). Signature-Input and Signature are each bounded
//     (WithMaxSignatureHeaderSize) and parsed as RFC 8941 dictionaries: parse_error. No
//     Signature-Input at all is missing_credential (for responses see below); Signature
//     without Signature-Input is parse_error. The WIMSE signature is chosen by tag,
//     never by label: a lone member is judged as the WIMSE one (so its tag errors are
//     wrong_tag or missing_parameter); among several, none tagged is
//     no_wimse_signature and more than one is ambiguous_wimse_signature.
//     Members not selected are not looked at beyond their tag. The selected member must
//     be an inner list (parse_error) and its Signature member a 64-octet byte sequence
//     (malformed_signature).
//  2. Parameters (SIG-3): created, expires, nonce and tag present (missing_parameter)
//     with their types (parse_error; an empty nonce is missing_parameter, one over 256
//     octets parse_error); tag is Tag (wrong_tag); keyid and alg absent
//     (forbidden_parameter, before any algorithm is looked at). Request: wimse-aud
//     present (missing_parameter), wimse-sign-response an sf-boolean if present.
//     Response: wimse-aud absent (forbidden_parameter), wimse-req-nonce present
//     (missing_parameter). Then wimse-aud is one of WithAudiences (audience_mismatch;
//     SIG-7), or wimse-req-nonce equals the client's request nonce
//     (request_nonce_mismatch). Unknown parameters are signed, and otherwise ignored.
//  3. Covered components (SIG-3): each well formed and covered once (parse_error) and
//     supported (unsupported_component). The profile's set ("@method" "@path" "@query";
//     responses: "@status" "@method";req "@path";req "@query";req), which configuration
//     cannot remove, and the configured set are covered (missing_required_component).
//     Those of content-type, content-digest, authorization, txn-token,
//     workload-identity-token and dialog-provenance (the experimental provenance field
//     of package dialog, which must be covered so that earlier hops' records cannot be
//     removed or reordered), mcp-method and mcp-name (MCP 2026-07-28's copies of the
//     body's method and tool, which intermediaries decide by) (responses:
//     content-type, content-digest,
//     workload-identity-token) that the message carries are covered
//     (missing_required_component), and so is Dialog-Context when present
//     (dialog_context_not_covered, dialog-binding section 7).
//  4. Time (SIG-6), with WithSkew: expires < created is invalid_time_window; created >
//     now + skew is created_in_future; now > expires + skew is expired; now - created >
//     WithMaxAge is too_old; expires - now > WithMaxLifetime + skew is
//     lifetime_too_long. This comes before the WIT so that a signature from the future
//     is reported as such even when its WIT was issued after the verifier's now.
//  5. WIT (SIG-2): exactly one Workload-Identity-Token field (missing_credential,
//     duplicate_field), validated with the wit.Validator (its codes) before the signature
//     is verified.
//  6. Signature (SIG-5): the base is rebuilt (missing_component,
//     invalid_component_value) and verified with the WIT's cnf key: invalid_signature.
//     It covers Content-Digest, not the content, so it is verified before the body is
//     read: without the key nobody makes the verifier read a body.
//  7. Content (SIG-4): the body is read up to the limit (one octet more is
//     body_too_large) and put back for the handler; a request body that cannot be read
//     (shorter than its Content-Length, a malformed chunk) is invalid_request, a failed
//     check. If the message has content or carries Content-Digest, the digest is
//     recomputed over the octets received: content without Content-Digest is
//     missing_component, a malformed field parse_error, a digest that does not match (or
//     no sha-256/sha-512 member) content_digest_mismatch.
//  8. Replay (SIG-8), when WithReplay is set: the nonce is claimed once until expires +
//     skew; replayed, or the store's Incomplete error (store_unavailable).
//
// Steps 1 to 6 need only the fields, and 7 and 8 the body: VerifyRequestFields runs
// the first, PendingRequest.Finish the rest (VerifyRequest is the two in one call). A
// receiver runs its own field checks (Txn-Token, Dialog-Context) between them, so that
// no body is read, and no 100 Continue sent, for a request any field check refuses.
// CheckRequestContent is step 7 alone, for a Content-Digest that a WPT binds.
//
// Responses (section 3.5): VerifyResponse refuses an unsigned response with
// missing_credential when the request carried wimse-sign-response, and accepts it (nil
// Result, nil error) otherwise. A response that carries a signature is always verified.
// Checking that the response's Dialog-Context equals the request's (dialog-binding
// section 7) is left to the dialog layer, which knows both values.
//
// A base can be read back: ParseSignatureBase and ParseSignatureParams give the covered
// components' values and the parameters of a signature verified elsewhere (package
// dialog's provenance records carry their hops' bases), so that no other package
// parses RFC 9421 bases.
package httpsig
