//go:build !linux

/*
 * SPDX-FileCopyrightText: © 2017-2025 Istari Digital, Inc.
 * SPDX-License-Identifier: Apache-2.0
 */

package y

import "os"

// DataSync flushes f to disk (fsync where fdatasync is not available). crow's patch.
func DataSync(f *os.File) error {
	runDataSyncHook(f)
	return f.Sync()
}
