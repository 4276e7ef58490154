/*
 * SPDX-FileCopyrightText: © 2017-2025 Istari Digital, Inc.
 * SPDX-License-Identifier: Apache-2.0
 */

package y

import (
	"os"

	"golang.org/x/sys/unix"
)

// DataSync flushes f's data (and the metadata needed to read it) to disk:
// fdatasync, what msync(MS_SYNC) does for a mapped range. crow's patch.
func DataSync(f *os.File) error {
	runDataSyncHook(f)
	return unix.Fdatasync(int(f.Fd()))
}
