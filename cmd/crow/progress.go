package main

import (
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// The CLI's progress bars (audit, verify, export, import, backup, restore) are drawn only
// on a terminal and never with --json, so piped and scripted runs stay quiet.

// barTerminal returns w as a terminal to draw a bar on, or nil when w is not a terminal or
// the output is JSON for a script.
func barTerminal(w io.Writer, asJSON bool) *os.File {
	f, ok := w.(*os.File)
	if !ok || asJSON || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return f
}

// newCountBar draws a count of total items (unit: what they are) on w when w is a terminal
// and the output is not JSON; nil otherwise (and for an empty total).
func newCountBar(w io.Writer, total int64, what, unit string, asJSON bool) *progressbar.ProgressBar {
	f := barTerminal(w, asJSON)
	if f == nil || total <= 0 {
		return nil
	}
	return progressbar.NewOptions64(total, progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(what), progressbar.OptionShowCount(), progressbar.OptionShowIts(),
		progressbar.OptionSetItsString(unit), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
}

// newBytesBar draws a byte count (total -1: unknown) on w when it is a terminal and the
// output is not JSON; nil otherwise.
func newBytesBar(w io.Writer, total int64, what string, asJSON bool) *progressbar.ProgressBar {
	f := barTerminal(w, asJSON)
	if f == nil {
		return nil
	}
	return progressbar.NewOptions64(total, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true), progressbar.OptionShowTotalBytes(true), progressbar.OptionSetPredictTime(total > 0),
		progressbar.OptionSpinnerType(14), progressbar.OptionClearOnFinish())
}
