package main

import (
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// newCountBar draws a count of total items (unit: what they are) on w when
// w is a terminal and the output is not JSON; nil otherwise, so piped and
// scripted runs stay quiet.
func newCountBar(w io.Writer, total int, what, unit string, asJSON bool) *progressbar.ProgressBar {
	f, ok := w.(*os.File)
	if !ok || asJSON || total <= 0 || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return progressbar.NewOptions(total, progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(what), progressbar.OptionShowCount(), progressbar.OptionShowIts(),
		progressbar.OptionSetItsString(unit), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
}
