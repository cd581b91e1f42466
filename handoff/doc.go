// Package handoff implements signed handoff context for agent dialogs:
// draft-srivastava-agentproto-handoff-context-01 (shared/specs), all of it.
//
// Read model.go first (the data model of section 2: Offer, Status, Digest), then
// signed.go (Signed, the signed forms), sign.go and verify.go (section 3), container.go
// (the Handoff object and its JSON and CBOR forms) and receiver.go (Receiver.Receive,
// section 5.1; the delegate's records, statuses and cancels in receiver_record.go,
// receiver_status.go and receiver_cancel.go). delegator.go is the other side; json.go
// and cbor.go decode and encode the elements; chain.go, grant.go and refs.go are
// sections 5.5, 5.7 and 2.2; carriage.go and meta.go are section 6.
//
// What is where, by section of the draft:
//
//   - 2, 2.1, 2.2 data model: Offer, Status, Handoff, ContextRef, Digest, Principal, in
//     JSON (ParseOfferJSON, Offer.MarshalJSON ...) and CBOR (ParseOfferCBOR,
//     Offer.MarshalCBOR ...), every CDDL constraint checked, unknown members kept.
//   - 3 signing: SignOffer, SignStatus, VerifyOffer, VerifyStatusSignature; JWS through
//     package jose (the one typed-token path), COSE_Sign1 through go-cose; the handoff
//     digest (Signed.Digest) over the octets as sent; Trust binds keys to AgentIds.
//   - 4 lifecycle: the delegate's states (Receiver.Accept, Reject, Complete, Fail,
//     HandleCancel) and the delegator's (Delegator), Table 1 (A2ATaskState).
//   - 5.1 to 5.6 processing: Receiver.Receive (steps 1 to 7, first failure wins),
//     freshness and replay with store.Records, retransmissions, outcomes, chains
//     (VerifyChain, ChainPolicy), equivocation, status checks (CheckStatus).
//   - 5.7 grants: BindGrant, CheckGrant, CheckBinding (for the dialog middleware).
//   - 6 carriage: PutA2AMessage, A2AMessageHandoff, PutMCPRequest ... on the JSON of
//     host messages; PutHandoffMeta, HandoffInMeta, PutStatusMeta, StatusInMeta on SDK
//     metadata maps, with JSON-native values only (Handoff.MetaValue); Signed marshals
//     as its text (MarshalText) and Handoff as its JSON form by value or pointer.
//     A2A 0.3 and 1.0 spellings: A2A03TaskState, A2ATaskState, StateForA2ATask (both),
//     AddA2AExtension and AddA2A03Extension (X-A2A-Extensions too).
//   - 8 security: 8.3 ChainPolicy.TrustedOrigins, 8.4 WithRecordsLostAt and
//     Inbound.AuthenticatedSender, 8.6 typ and content type, 8.8 size and length bounds.
//   - Appendices A and B: ParseSCITTReceipt, SCITTStatementDigest, ParseLearnlogHead,
//     ProofVerifier.
//
// Every rejection is an *errcode.Error. The twelve Reason values of section 2 map one
// to one onto the errcode.Handoff* codes (Reason.Code, ReasonOf); a check that could
// not be completed (store or key source down) is Incomplete and carries no reason.
//
// Choices where the draft is open, and why:
//
//   - Reasons for failures the draft does not name. A payload that violates the CDDL,
//     an oversized offer, or a header that breaks section 3.1 or 3.2 fails step 1 with
//     "bad-signature" (its signed form is not acceptable). A chain element that fails
//     check 1 under a key the receiver trusts (malformed, unsigned, bad signature,
//     oversized) is "broken-chain": step 6 names only broken-chain, cycle and too-deep.
//     A grant that does not match is "policy" (code handoff_grant_mismatch), checked at
//     step 5 with the dialog, since both bind the offer to the carrying request.
//   - "An unsigned element MUST be treated as absent": alg "none" is rejected with
//     bad-signature but nothing is answered or remembered; an unsigned chain element
//     breaks the chain.
//   - What is remembered. Only pairs that passed steps 1 to 3 are recorded (section
//     5.2), and only from a copy that may bind them (below), so rejections at steps 1 to 3 (including stale) set no state and are not
//     resent. A "replay" rejection at step 4 (section 8.4) follows steps 1 to 3: its
//     pair is remembered until exp plus skew with the rejection as its last status,
//     resent to copies, but it sets no hop state (nothing can be decided on the hop,
//     and another offer for the pair is equivocation with nothing to send or stop).
//     Rejections at steps 5 to 7 are the hop's last status and are resent to
//     retransmissions. A "received" pair is kept until exp plus skew; a taken
//     hop without a terminal status is kept without expiry (store.NoExpiry) until a
//     terminal status or Receiver.Forget; after a terminal status, for the retention
//     period (default 24 h) and at least until exp plus skew. When a step after the
//     pair was recorded cannot be completed, the record is removed so that the
//     retransmission is processed afresh.
//   - Retransmissions are answered only when Inbound.AuthenticatedSender equals
//     offer.iss (section 8.4's SHOULD taken as a rule); otherwise Decision.Withheld.
//   - Whose copy binds a pair. Section 5.2 remembers a pair and 5.3 answers every later
//     copy of the same octets from that record, so the first copy to arrive decides the
//     hop; anyone who gets hold of an offer (8.4: "anyone who can replay the offer")
//     could send it first and have the delegator's own send answered with a refusal
//     of the stranger's request, or take the work with a request of its own. Only the
//     delegator's copy binds: an offer the receiver does not remember, in a message
//     the host protocol authenticated as another party than offer.iss, is refused
//     (errcode.HandoffSenderNotIssuer); with no sender authenticated, the credential
//     is the only sign of the delegator, and a copy whose credential is not the one
//     grant names, or that has none where one is required, is refused
//     (errcode.HandoffGrantMismatch). These checks run after step 3 and before
//     anything is recorded (reported as step 5, the offer against the message that
//     carries it); the refusal records nothing and signs no status, since a signed
//     "rejected" would resolve the hop for the delegator (5.3) while its own copy can
//     still be accepted, and the delegator's later send is processed afresh. A copy
//     from the authenticated offer.iss is the delegator's: whatever fails at steps 4
//     to 7 (a wrong dialog, credential or chain included) is the hop's rejection,
//     recorded and resent as before. A receiver given no AuthenticatedSender, for an
//     offer without a grant, cannot tell copies apart; the dialog middleware always
//     gives the sender its proof authenticated.
//   - Section 8.4 after a loss of records: an unremembered offer with iat at or before
//     the loss (whole seconds, so an offer from the same second counts as before) is
//     rejected with "replay". With store.MemoryRecords, which lose everything at a
//     restart, the receiver's own start time is the loss unless WithRecordsLostAt says
//     otherwise (the zero time: nothing was lost). Later offers are exp-bounded by step 3 anyway, so the
//     rule lapses by itself once the maximum lifetime has passed.
//   - Equivocation (5.6) by the delegate's state: received and unanswered, "rejected"
//     with reason "equivocation" for the first offer; canceled by the delegator before
//     it was taken and unanswered, the same "rejected" (the hop stays canceled, the
//     rejection is its outcome) and no StopWork, since there is no work; taken,
//     Decision.StopWork and a later Fail defaults to reason "equivocation"; terminal,
//     nothing. Always flagged.
//   - Malleated copies. Equivocation needs other signed content, not just other
//     octets: anyone who has seen an ES256 offer can replace its signature (r, s) with
//     (r, n-s), which verifies too (high-S signatures are accepted: ordinary signers
//     make them half the time), and COSE's unprotected header is not signed at all. A
//     remembered pair whose new octets carry the same signed content (JWS header and
//     payload; COSE protected header and payload) is answered as a retransmission of
//     the remembered offer (5.3) and flagged: Decision.Malleated, and a Flag of kind
//     "malleated-copy".
//   - Statuses are signed in the form of the offer they answer.
//   - Cancels propagate (section 4, a SHOULD) when the receiver is configured
//     WithCancelPropagation with the agent's own Delegator and a CancelSender: every
//     valid cancel HandleCancel records (also one for a hop already finished or
//     canceled) cancels the unresolved offers whose prev is the canceled offer and
//     hands each to the sender; CancelResult.Propagated and PropagateErr say what
//     happened. Without it nothing is sent (Delegator.PropagateCancel by hand).
//   - kid. Offers and statuses are signed with the RFC 7638 thumbprint as kid, in COSE
//     as the UTF-8 octets of the same base64url string, so one trust configuration
//     serves both forms. StaticTrust finds a key by its configured kid or by its
//     thumbprint. A JWS must carry kid (3.1: MUST); a COSE message without kid is
//     accepted when the issuer has exactly one key (3.2: SHOULD).
//   - Algorithms: what package keys supports, one per key (ES256, and EdDSA/Ed25519);
//     for COSE, ES256 (-7), EdDSA (-8) and Ed25519 (-19, RFC 9864 section 2.2). The
//     alg must be the key's one algorithm by jose's rule: the same name, or for an
//     Ed25519 key either of its two names, "EdDSA" (RFC 8037; COSE -8) and "Ed25519"
//     (the fully-specified name of RFC 9864 section 2; COSE -19), which name one
//     signature algorithm (3.4 "exactly one algorithm" holds), whichever of them the
//     key is pinned to. A key without "alg" is pinned to "EdDSA" and still verifies
//     the "Ed25519" JWS or COSE message that other implementations now emit; "Ed448"
//     (COSE -53) and an Ed25519 name on any other key are refused (unsupported_alg).
//     Signing writes the key's own alg in a JWS, and in COSE -7 or -8 (an Ed25519 key
//     pinned to "Ed25519" included), which every COSE verifier knows.
//     COSE crit is refused like JWS crit; COSE typ (label 16, an open issue) is ignored.
//   - Chains. The length (too-deep) is checked before any element is parsed (8.8).
//     Signatures are verified newest first; at the first element whose iss has no
//     trusted key the chain is unverifiable from there back and nothing older is
//     verified, but checks 2 to 4 still run over all elements, so a chain that does not
//     hang together is broken whether or not it is verifiable. Timing allows the skew
//     after the earlier offer's exp. Re-entry is admitted per AgentId by policy.
//   - Encodings. JSON members are split by hand over json.Valid: duplicate names are
//     refused, integers must be plain integer literals (no sign, fraction or exponent),
//     text must be UTF-8. CBOR refuses duplicate keys, indefinite lengths and tags on
//     the members this package interprets. Times above 2^63-1 are refused. A Digest val
//     decodes to at least 32 octets for any alg (exactly 32 for sha-256), since no hash
//     shorter than 256 bits may be defined. Encoding writes the CDDL member order in
//     JSON (the example of section 2.3 comes out byte for byte) and Core Deterministic
//     Encoding in CBOR. Unknown members are generic values; converting an element
//     between encodings turns CBOR byte strings into base64url text.
//   - References. Only the references RefPolicy.Require selects are checked; the rest
//     are reported "not checked". This package fetches nothing (8.8: loc is the
//     caller's business, through RefSource). A salt shorter than 16 octets makes a
//     salted digest unverifiable. scitt-receipt and learnlog-head are parsed (and a
//     SCITT statement's dig is compared when the statement is at hand) and are
//     unverifiable unless a ProofVerifier for the kind is configured.
//   - Grants. A credential that arrived is always checked against grant; a missing
//     credential or grant fails only WithGrantRequired (grant may name a credential
//     the delegate presents rather than receives, section 5.7). "grant MUST NOT
//     contain the credential" is enforced where it is decidable: a grant must name a
//     hash of the RFC 6920 registry of at least 256 bits with a value of that hash's
//     length. SignOffer (and so Delegator.Offer) refuses any other grant, and a
//     receiver refuses it at step 5 whether or not a credential arrived
//     (handoff_grant_mismatch, reason "policy", as every grant failure: the CDDL
//     allows any alg text, so it is no data-model violation).
//   - Salts. A reference with a member named "salt", of any kind, is refused (section
//     2.2: "The salt MUST NOT appear in the element"): by SignOffer and SignStatus, and
//     at receipt as a data-model violation (step 1, bad-signature).
//   - The delegator keeps its hops in memory, bounded; "the same work" is a key the
//     caller names (OfferRequest.Work). A "canceled" from the delegator keeps the hop
//     canceled; a later completed, failed or rejected resolves it (HopState.Outcome).
//   - A2A: a handoff in metadata whose URI is not listed in extensions is an error,
//     not silently ignored.
package handoff
