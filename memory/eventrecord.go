package memory

import "time"

// EventHashDomain is the domain separator EventHash writes before the event
// record: "CM_MEMORY_EVENT_V1".
const EventHashDomain = eventHashDomain

// EventRecord returns the exact bytes EventHash hashes after
// EventHashDomain: the RFC 8785 canonical JSON of the memory's event record
// (see EventHash). Proofs show it so anyone can recompute the hash.
func EventRecord(number uint64, project, contentHash string, createdAt time.Time, origin string) []byte {
	return eventRecord(number, project, contentHash, createdAt, origin)
}
