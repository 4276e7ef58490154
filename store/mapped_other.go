//go:build !linux

package store

import "errors"

const mappedTrimSupported = false

func residentFileKB() int64 { return 0 }

func pageOutMapped(string) error { return errPageoutUnsupported }

var errPageoutUnsupported = errors.New("trimming mapped pages is implemented only on Linux")
