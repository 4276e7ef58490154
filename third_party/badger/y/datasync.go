/*
 * SPDX-FileCopyrightText: © 2017-2025 Istari Digital, Inc.
 * SPDX-License-Identifier: Apache-2.0
 */

package y

import (
	"os"
	"sync/atomic"
)

// dataSyncHook, if set, runs at the start of every DataSync. crow's patch.
var dataSyncHook atomic.Pointer[func(*os.File)]

// SetDataSyncHook makes DataSync call fn(f) first, before syncing f; nil
// removes it. It is for tests (crow's store tests hold a WAL sync with it, to
// have a commit in flight); fn runs on the syncing goroutine and sees every
// database's syncs, so it must check the file. crow's patch.
func SetDataSyncHook(fn func(f *os.File)) {
	if fn == nil {
		dataSyncHook.Store(nil)
		return
	}
	dataSyncHook.Store(&fn)
}

func runDataSyncHook(f *os.File) {
	if h := dataSyncHook.Load(); h != nil {
		(*h)(f)
	}
}
