// Package home owns the layout of a crow data directory ($CROW_HOME, default
// ~/.crow) and the small files in it.
//
//	path             mode  written by          contents
//	identity         0600  Init, LockIdentity  master seed: 64 lowercase hex digits + "\n"; once locked,
//	                                           the identity export blob ("crow-identity-v1:..." + "\n")
//	identity.pub     0600  LockIdentity        only while locked: {"format": "crow-identity-pub-v1",
//	                                           crow_id, root_public_key, anchor_address, instance_id,
//	                                           instance_public_key}; removed by UnlockIdentity
//	instance-id      0600  Init (O_EXCL)       this instance's UUIDv4 + "\n"; never rewritten
//	instance.json    0600  Init                {"name": "...", "role": "home"|"satellite"}
//	api-key          0600  Init, RotateAPIKey  owner API key, "crow_" + 43 base64url chars, no newline
//	api-key.sha256   0600  Init, RotateAPIKey  lowercase hex SHA-256 of the api-key bytes + "\n"
//	config.toml      -     the operator        optional settings, see Config
//	gateway.addr     0600  the running daemon  host:port the gateway listens on + "\n"
//	instances.json   -     registry            mirror of crow_instances (path only here)
//	db/ index/ chain/ -    store, search, anchor (paths only here)
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
