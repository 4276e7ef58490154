// Package chaos holds crow's chaos suite (chaos_test.go): real crow daemons
// (home and satellites, run as processes) with a fault proxy
// (package chaos/proxy) in every sync path, writers acknowledged by the REST
// API, kill -9 loops, partitions with concurrent edits of shared rows and a
// full-disk phase; at the end every acknowledged write must be present on
// every instance, once, with identical table digests and conflict records.
//
// A short run (-chaos.duration, default 45s of chaos) runs in plain
// go test; a long run is started by hand:
//
//	go test ./chaos -run TestChaos -count=1 -v -timeout 60m -chaos.duration=20m
//
// See docs/reliability/chaos.md for what it promises and its figures.
package chaos
