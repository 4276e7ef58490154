//go:build !linux

package store

// prefetchFiles does nothing here (see the Linux version).
func prefetchFiles(string) {}
