package registry

import "bytes"

// LocalOnlyKey reports whether key is one of the registry's local-only keys
// that a backup leaves out: probe observations (this machine's view of its
// peers) and invites (only the home that made them can honour them, once).
func LocalOnlyKey(key []byte) bool {
	return bytes.HasPrefix(key, []byte(obsPrefix)) || bytes.HasPrefix(key, []byte(invitePrefix))
}
