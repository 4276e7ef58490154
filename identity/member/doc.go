// Package member holds the membership formats of a crow (SPEC §2, §7, issue
// 10): certificates, revocations, invites and the join by invitation. It is
// pure: no I/O, no clock (callers pass now), no randomness but the readers
// they pass. Every format is frozen (version byte, length-prefixed fields,
// one encoding per record) and pinned by golden vectors in testdata/.
//
// # Keys
//
// The root key is the seed's ([identity.Seed.RootKey]); it lives only
// on home and signs certificates and revocations. Home's key is home's
// instance key; it signs join answers and its public half travels in
// invites. Each satellite generates its own key and never sees the seed.
//
// # Records
//
//	record        domain (signed bytes: domain || 0x00 || body)  text prefix
//	certificate   "crow-member-v1"       root key                "crowcert1."
//	revocation    "crow-revoke-v1"       root key                "crowrev1."
//	invite        (not signed)                                   "crowinv1."
//	join request  "crow-join-v1"         HMAC(secret) + new key  "crowjoin1."
//	join answer   "crow-join-answer-v1"  home's key              "crowjans1."
//
// Integers and lengths are big-endian, strings are prefixed with a uint16
// length, times are Unix seconds as int64, keys 32 bytes, signatures 64. The
// text form is the prefix followed by the unpadded, strict base64url of the
// binary; records implement encoding.TextMarshaler so JSON carries them as
// that string. The byte layouts are documented on each type.
//
// # Joining by invitation
//
// The join lets a new machine obtain a certificate for a key it generated,
// proving it was given an invite without sending the invite's secret, and
// binding its key so that nobody relaying the messages can swap it.
//
//  1. Home makes an invite ([NewInvite]): gateway URL, home's public key,
//     crow id, a 32-byte random secret and an expiry. Home files the secret
//     and expiry under [InviteID] (SHA-256 of the secret) and prints the
//     invite ([Invite.String]) as one line; the user carries it to the new
//     machine out of band.
//  2. The joiner parses it ([ParseInvite]: malformed or expired invites are
//     refused), generates its Ed25519 key and instance id, and pins the home
//     public key and crow id from the invite.
//  3. The joiner sends a [JoinRequest] ([NewJoinRequest]): invite id, instance
//     id, new public key, name, a random nonce, MAC = HMAC-SHA256(secret,
//     transcript) and an Ed25519 signature by the new key over the same
//     transcript ([Transcript]: domain "crow-join-v1", home public key, crow
//     id, invite id, instance id, new public key, name, nonce). Only the
//     invite id (a hash) and the MAC depend on the secret, so an eavesdropper
//     learns nothing that lets it join.
//  4. Home looks the secret up by invite id, checks that the invite is unused
//     and unexpired and marks it used (its store, in one transaction), then
//     checks the request ([VerifyJoinRequest]): invite id, MAC in constant
//     time, signature. A key swapped in transit breaks the MAC (the swapper
//     lacks the secret) and the signature (it lacks the joiner's private
//     key); a request replayed to another home or crow breaks both, since
//     home recomputes the transcript with its own key and crow id.
//  5. Home issues the certificate with the root key ([Issue]) and answers a
//     [JoinAnswer] ([NewJoinAnswer]): root public key, certificate, and home's
//     signature over domain "crow-join-answer-v1", SHA-256 of the transcript,
//     root public key and certificate ([AnswerMessage]).
//  6. The joiner checks the answer ([VerifyJoinAnswer]) against the home key
//     pinned in step 2, that the root key is the crow id's, that the
//     certificate verifies under it and that it certifies exactly the key,
//     instance id and name it asked for. Only then does it keep its key,
//     certificate and root public key. A forged answer (no home key) or an
//     answer for another request (other transcript) is refused.
//
// Everything else (storage, single use, transport, revocation checks at
// registration, connection, token and feed) is the callers'.
//
// # Revocation
//
// A [Revocation] names an instance id and its key; [Revocation.Revokes]
// matches a certificate with either, so a revoked key cannot come back under
// a new id. [Verify] checks a certificate's signature only: callers check it
// against the verified revocations they hold.
package member
