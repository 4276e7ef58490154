// Package home owns the layout of a crow data directory ($CROW_HOME, default
// ~/.crow) and the small files in it.
//
//	path             mode  written by          contents
//	identity         0600  Init, LockIdentity  master seed: 64 lowercase hex digits + "\n"; once locked,
//	                                           the identity export blob ("crow-identity-v1:..." + "\n")
//	instance.key     0600  InitJoined          joined satellite only: its own Ed25519 key, the 32-byte
//	                                           private seed (ed25519.PrivateKey.Seed) in hex + "\n"
//	identity.pub     0600  LockIdentity,       where the seed is not in clear: {"format":
//	                       InitJoined          "crow-identity-pub-v1", crow_id, root_public_key,
//	                                           anchor_address (absent on a joined satellite),
//	                                           instance_id, instance_public_key}; removed by
//	                                           UnlockIdentity
//	certificate      0600  Init, InitJoined,   this instance's membership certificate (identity/member)
//	                       EnsureCertificate   in text form, "crowcert1...." + "\n"
//	instance-id      0600  Init, InitJoined    this instance's UUIDv4 + "\n"; never rewritten
//	                       (O_EXCL)
//	instance.json    0600  Init, InitJoined    {"name": "...", "role": "home"|"satellite"}
//	api-key          0600  Init, InitJoined,   owner API key, "crow_" + 43 base64url chars, no newline
//	                       RotateAPIKey
//	api-key.sha256   0600  Init, InitJoined,   lowercase hex SHA-256 of the api-key bytes + "\n"
//	                       RotateAPIKey
//	join.json        0600  InitJoined          {"home_url": "...", "home_id": "..."}: the enrollment a
//	                                           joined satellite's daemon completes on its first start;
//	                                           removed by ClearPendingJoin
//	config.toml      -     the operator        optional settings, see Config
//	gateway.addr     0600  the running daemon  host:port the gateway listens on + "\n"
//	chain-rpc.json   0600  the daemon (home)   the contract home deployed on the [chain] rpc_url chain:
//	                                           ContractRecord JSON; removing it is how to move to
//	                                           another contract on purpose
//	checkpoint-rpc.json 0600 the daemon (home) the same for the [chain.checkpoint] chain
//	instances.json   -     registry            mirror of crow_instances (path only here)
//	db/ index/ chain/ -    store, search, anchor (paths only here)
//
// A directory has one of three layouts, told apart by which key file it
// holds (Load refuses both, and neither without an instance-id is
// ErrNotInitialized):
//
//  1. Seed in clear (home, or a satellite made by `crow init --import`,
//     which holds the seed on purpose): identity holds the hex seed, and the
//     instance key is derived from it (identity.Seed.InstanceKey).
//  2. Seed locked (LockIdentity): identity holds the encrypted blob and
//     identity.pub the public data; Home.Decrypt makes the seed, and so the
//     instance key, available.
//  3. Joined satellite (InitJoined, `crow init --join`): no identity file,
//     ever. instance.key holds its own key, identity.pub the crow's public
//     data and certificate, required, the root key's certificate for
//     exactly this instance id and key. Home.HasSeed is false, Home.Seed
//     panics, and LockIdentity, UnlockIdentity and Home.Decrypt refuse
//     (ErrNoSeed); a joined satellite cannot issue or re-issue a
//     certificate.
//
// In every layout instance-id, instance.json and api-key.sha256 (api-key
// may be removed) are present; certificate is required in layout 3 and
// written by Init in the others (directories initialised before
// certificates existed get theirs from Home.EnsureCertificate, which needs
// the seed). Info, Home.Public, Home.RootPublicKey and Home.Certificate need
// no passphrase in any layout.
//
// The directory itself is 0700. Every file this package writes goes through
// AtomicWrite (temp file → fsync → rename → fsync dir), or, for files that
// must never be overwritten, an exclusive variant that links the finished
// temp file into place.
//
// The api-key file is what the CLI and scripts send as the bearer token. The
// gateway checks keys against a SHA-256 hash: Home.APIKeyHash is the hash of
// the api-key file when it exists (so a rotation interrupted between its two
// writes is still consistent) and the stored api-key.sha256 otherwise (an
// operator may delete the plaintext on a machine where no CLI runs).
package home
