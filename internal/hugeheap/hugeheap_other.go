//go:build !linux

package hugeheap

// Reserve does nothing outside Linux.
func Reserve(size uintptr) (Outcome, error) {
	return Outcome{Skipped: "not Linux"}, ErrUnsupported
}
