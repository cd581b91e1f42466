// Package netjson is how the project reads JSON that comes from the network: token
// claims, request and response bodies, keys, metadata, request parameters. Every such
// decode goes through it, so that every reader applies the strictness the specs need:
//
//   - member names match exactly: encoding/json matches a member to a struct field
//     case-insensitively when no name matches exactly and would read {"AUD": ...} as the
//     claim aud; JWT claim names are case-sensitive (RFC 7519 section 4), and so are the
//     members of every JSON document this project reads. A member whose name equals a
//     field's only under case folding is refused (NameError); one that matches no field
//     in any case is ignored, as encoding/json ignores it (DecodeOnlyKnown refuses it).
//   - a member named twice in one object is refused (DuplicateError) where it decodes
//     into something, a struct field or a map entry: encoding/json keeps the last copy and
//     another parser may keep the first, so two readers could see two claims sets (RFC
//     7519 section 4 lets a parser reject duplicate claim names; RFC 8259 section 4 leaves
//     the behaviour open). Callers map it, like a NameError, to their invalid-encoding
//     code. DecodeMembers refuses a repetition at any depth.
//   - sizes are the callers' to bound before they call (the verifiers' MaxTokenSize, the
//     body limits); nesting is bounded here (DeeperThan for request parameters, 10000
//     levels in the name check, as in encoding/json).
//
// Which function to use:
//
//   - DecodeClaims: the claims set of a token (WIT, WPT, grant, client assertion, subject
//     token), with codes. Claims in the plain form the project's issuers write take one
//     fast path shared by every token kind (plain.go); the others, and every error, go
//     through DecodeObject.
//   - DecodeKeepingNumbers: the same checks where numbers must survive octet for octet
//     (a Txn-Token's tctx and rctx).
//   - DecodeObject: any other JSON document from a peer.
//   - DecodeOnlyKnown: a document of this project's own protocols, where an unknown member
//     is an error.
//   - DecodeMembers, FirstDuplicate, DeeperThan: a JSON object carried in a request
//     parameter, kept as its members' text.
//   - SkipSpace, StringEnd, ValueEnd: walking JSON text already validated (package
//     handoff splits objects into members with them).
//
// Read decode.go first; names.go is the name and duplicate check, plain.go the fast
// path, scan.go the scanners.
package netjson
