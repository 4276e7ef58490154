// Package backup is the format of crow's backup archive and the restore of
// one into a new data directory (`crow backup --out FILE`, `crow restore
// FILE`).
//
// # The archive (format 1, frozen)
//
// An archive is an age file (filippo.io/age) encrypted to a passphrase
// (age's scrypt recipient: scrypt work factor 2^18 by default), holding a
// tar stream whose entries are, in this order:
//
//  1. crow-backup.json: the Manifest (format, when, the instance it was
//     taken of: id, name, role, crow id, its feed's public key; whether it
//     holds the seed);
//  2. identity: the master seed in hex, if the instance held it (home, or a
//     satellite made with `init --import`; a locked identity is unlocked by
//     `crow backup` first);
//  3. the files of home.RestoredNames that exist (config.toml, the contract
//     records);
//  4. db/000000, db/000001, …: the store snapshot (store.DB.Snapshot, one
//     read transaction of the running daemon) cut into chunks of at most
//     1 MiB;
//  5. end.json: the number of chunks, their bytes and their SHA-256.
//
// age authenticates every 64 KiB of plaintext and the end of the stream, so a
// wrong passphrase, a flipped byte or a cut file fails the restore before it
// writes anything in place; the end record and the snapshot's own end catch
// an archive whose writer stopped midway.
//
// Not in the archive: the instance id, key, certificate and api-key (a restore
// makes new ones), gateway.addr, serve.lock, join.json and instances.json
// (local to the machine that ran), the search index (rebuilt from the rows on
// the first start) and home's embedded chain (see docs/reliability/backup.md).
//
// # Restore
//
// Restore writes into an empty or missing directory only, and builds the
// whole data directory in a staging directory beside it, moved into place at
// the end: a failure at any step leaves the target as it was.
//
//  1. The manifest is read; an archive without the seed needs an Enroll
//     function (`--join INVITE`), else the restore stops here.
//  2. The snapshot is loaded into staging/db and checked against end.json;
//     the age stream is read to its authenticated end.
//  3. Only then is the new identity made: a new instance id and key,
//     certified by the seed (home.Init, role satellite) or by home through
//     Enroll (home.InitJoined; this spends the invite).
//  4. The old instance's feed, whose every entry the rows already hold, is
//     marked applied: it is now a read-only replica of the old id; the new
//     instance authors a new feed, so it can never fork the old one.
//     Home's numberer position (a queue consumer) is dropped: the restored
//     instance is a satellite, and the position would pin the queue.
//  5. With the seed, join.json names home (from the restored registry), so
//     the first start registers the new instance with it.
//  6. The configuration files are written, and staging is moved into place.
package backup
