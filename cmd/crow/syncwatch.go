package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/muesli/termenv"
	"golang.org/x/term"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
)

// syncFrame is one redraw of `crow sync status --watch` (and one NDJSON
// line with --json): the status with the rates measured between polls.
type syncFrame struct {
	At          string        `json:"at"`
	InstanceID  string        `json:"instance_id"`
	Paused      bool          `json:"paused"`
	PausedPeers []string      `json:"paused_peers"`
	Feeds       []frameFeed   `json:"feeds"`
	Peers       []framePeer   `json:"peers"`
	Anchors     *frameAnchors `json:"anchors,omitempty"`
	Forked      string        `json:"forked,omitempty"`
	Error       string        `json:"error,omitempty"` // this poll failed; the numbers are the last ones read
}

type frameFeed struct {
	Feed       string  `json:"feed"`
	InstanceID string  `json:"instance_id,omitempty"`
	Name       string  `json:"name,omitempty"`
	Length     uint64  `json:"length"`
	Known      uint64  `json:"known"` // longest head known here
	Lag        uint64  `json:"lag"`
	Rate       float64 `json:"entries_per_second"`
	// ETASeconds is Lag at Rate (absent: no lag, or no progress to tell).
	ETASeconds *float64 `json:"eta_seconds,omitempty"`
}

type framePeer struct {
	InstanceID string  `json:"instance_id,omitempty"`
	Name       string  `json:"name,omitempty"`
	Connected  bool    `json:"connected"`
	Paused     bool    `json:"paused"`
	Lag        uint64  `json:"lag"`
	Received   uint64  `json:"entries_received"`
	Sent       uint64  `json:"entries_sent"`
	RecvRate   float64 `json:"received_per_second"`
	SentRate   float64 `json:"sent_per_second"`
}

// frameAnchors is what anchoring still has to do (chain.status).
type frameAnchors struct {
	Kind      string         `json:"kind"`
	Roots     map[string]int `json:"roots"`
	NotFinal  int            `json:"roots_not_final"`
	PendingTx int            `json:"pending_transactions"`
	Error     string         `json:"error,omitempty"`
}

// rateMeter turns successive counter readings into a smoothed rate per key.
type rateMeter struct {
	last  map[string]uint64
	rate  map[string]float64
	at    time.Time
	first bool
}

func newRateMeter() *rateMeter {
	return &rateMeter{last: map[string]uint64{}, rate: map[string]float64{}, first: true}
}

// observe records the readings taken at now and returns the rates per
// second (an exponential moving average over the polls; a counter that went
// down, e.g. after a daemon restart, counts as no progress).
func (m *rateMeter) observe(now time.Time, vals map[string]uint64) map[string]float64 {
	dt := now.Sub(m.at).Seconds()
	out := map[string]float64{}
	for k, v := range vals {
		prev, seen := m.last[k]
		switch {
		case m.first || !seen || dt <= 0:
			out[k] = m.rate[k]
		default:
			inst := 0.0
			if v > prev {
				inst = float64(v-prev) / dt
			}
			out[k] = 0.5*inst + 0.5*m.rate[k]
		}
	}
	m.last, m.rate, m.at, m.first = vals, out, now, false
	return out
}

// syncWatcher polls sync.status (and chain.status) and builds frames.
type syncWatcher struct {
	feeds, recv, sent *rateMeter
	last              syncFrame
}

func newSyncWatcher() *syncWatcher {
	return &syncWatcher{feeds: newRateMeter(), recv: newRateMeter(), sent: newRateMeter()}
}

func (w *syncWatcher) frame(now time.Time, doc app.SyncStatus, chain *app.ChainStatus, chainErr error) syncFrame {
	f := syncFrame{At: now.UTC().Format(time.RFC3339), InstanceID: doc.InstanceID, Paused: doc.Paused,
		PausedPeers: doc.PausedPeers, Feeds: []frameFeed{}, Peers: []framePeer{}}
	if doc.Forked != nil {
		f.Forked = doc.Forked.Error
	}
	lengths := map[string]uint64{}
	for _, fd := range doc.Feeds {
		lengths[fd.Feed] = fd.Length
	}
	rates := w.feeds.observe(now, lengths)
	for _, fd := range doc.Feeds {
		ff := frameFeed{Feed: fd.Feed, InstanceID: fd.InstanceID, Name: fd.Name, Length: fd.Length,
			Known: max(fd.Known, fd.Length), Rate: rates[fd.Feed]}
		ff.Lag = ff.Known - ff.Length
		if ff.Lag > 0 && ff.Rate > 0 {
			eta := float64(ff.Lag) / ff.Rate
			ff.ETASeconds = &eta
		}
		f.Feeds = append(f.Feeds, ff)
	}
	recv, sent := map[string]uint64{}, map[string]uint64{}
	for _, p := range doc.Peers {
		k := p.PeerID + "/" + p.InstanceID
		recv[k], sent[k] = p.EntriesReceived, p.EntriesSent
	}
	rr, sr := w.recv.observe(now, recv), w.sent.observe(now, sent)
	for _, p := range doc.Peers {
		k := p.PeerID + "/" + p.InstanceID
		f.Peers = append(f.Peers, framePeer{InstanceID: p.InstanceID, Name: p.Name, Connected: p.Connected, Paused: p.Paused,
			Lag: p.Lag, Received: p.EntriesReceived, Sent: p.EntriesSent, RecvRate: rr[k], SentRate: sr[k]})
	}
	switch {
	case chainErr != nil:
		f.Anchors = &frameAnchors{Error: chainErr.Error()}
	case chain != nil:
		a := &frameAnchors{Kind: chain.Kind, Roots: chain.Roots, NotFinal: len(chain.Open), PendingTx: len(chain.Pending), Error: chain.Error}
		if a.Roots == nil {
			a.Roots = map[string]int{}
		}
		f.Anchors = a
	}
	w.last = f
	return f
}

// watchSync is `crow sync status --watch`: a frame every interval until
// ctx ends (Ctrl-C). On a terminal it redraws in place (the alternate
// screen, left with the last frame printed); otherwise it prints one plain
// block per interval, or with --json one JSON object per line.
func watchSync(ctx context.Context, g *globals, c *client.Client, interval time.Duration) error {
	w := newSyncWatcher()
	poll := func() (syncFrame, error) {
		doc, err := client.Do(ctx, c, app.SyncStatusOp, app.NoInput{})
		if err != nil {
			return syncFrame{}, err
		}
		ch, chErr := client.Do(ctx, c, app.ChainStatusGet, app.NoInput{})
		return w.frame(time.Now(), doc, &ch, chErr), nil
	}
	f, err := poll()
	if err != nil {
		return err // no daemon to watch: say so and exit non-zero
	}
	var out *termenv.Output
	if file, ok := g.stdout.(*os.File); ok && !g.json && term.IsTerminal(int(file.Fd())) {
		out = termenv.NewOutput(file)
		out.AltScreen()
		out.HideCursor()
		defer func() {
			out.ShowCursor()
			out.ExitAltScreen()
			io.WriteString(g.stdout, renderSyncFrame(w.last, interval)) // what was on screen stays readable
		}()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := emitSyncFrame(g, out, f, interval); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		next, err := poll()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			next = w.last
			next.At, next.Error = time.Now().UTC().Format(time.RFC3339), err.Error()
		}
		f = next
	}
}

func emitSyncFrame(g *globals, out *termenv.Output, f syncFrame, interval time.Duration) error {
	switch {
	case g.json:
		b, err := json.Marshal(f)
		if err != nil {
			return err
		}
		_, err = g.stdout.Write(append(b, '\n'))
		return err
	case out != nil:
		out.ClearScreen()
		_, err := io.WriteString(out, renderSyncFrame(f, interval))
		return err
	default:
		_, err := io.WriteString(g.stdout, renderSyncFrame(f, interval)+"\n")
		return err
	}
}

// renderSyncFrame is the plain text of a frame (no escape codes).
func renderSyncFrame(f syncFrame, interval time.Duration) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "crow sync status at %s (every %s; Ctrl-C stops)\n", f.At, interval)
	if f.Error != "" {
		fmt.Fprintf(&b, "last poll FAILED: %s (showing the previous numbers)\n", f.Error)
	}
	switch {
	case f.Paused:
		fmt.Fprintln(&b, "sync is PAUSED with every peer (crow sync resume)")
	case len(f.PausedPeers) > 0:
		fmt.Fprintf(&b, "paused peers: %s (crow sync resume ID)\n", strings.Join(f.PausedPeers, ", "))
	}
	if f.Forked != "" {
		fmt.Fprintln(&b, "status: FORKED:", f.Forked)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FEED\tLENGTH\tKNOWN\tLAG\tENTRIES/S\tETA")
	for _, fd := range f.Feeds {
		name := fd.Name
		if name == "" {
			name = "(" + fd.Feed[:min(12, len(fd.Feed))] + "…)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%s\n", name, fd.Length, fd.Known, fd.Lag, fd.Rate, etaText(fd))
	}
	if len(f.Feeds) == 0 {
		fmt.Fprintln(tw, "(none)\t\t\t\t\t")
	}
	tw.Flush()
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PEER\tSTATE\tLAG\tRECEIVED\tSENT\tRECV/S\tSENT/S")
	peers := append([]framePeer(nil), f.Peers...)
	sort.SliceStable(peers, func(i, j int) bool { return peers[i].Name < peers[j].Name })
	for _, p := range peers {
		state := "disconnected"
		if p.Connected {
			state = "connected"
		}
		if p.Paused {
			state += ",paused"
		}
		name := cmpOr(p.Name, p.InstanceID, "(unregistered)")
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.1f\t%.1f\n", name, state, p.Lag, p.Received, p.Sent, p.RecvRate, p.SentRate)
	}
	if len(peers) == 0 {
		fmt.Fprintln(tw, "(none registered)\t\t\t\t\t\t")
	}
	tw.Flush()
	if a := f.Anchors; a != nil {
		switch {
		case a.Kind == "" && a.Error != "":
			fmt.Fprintf(&b, "anchors: unavailable (%s)\n", a.Error)
		case a.Kind == "none":
			fmt.Fprintln(&b, "anchors: no chain configured")
		default:
			fmt.Fprintf(&b, "anchors (%s): roots included=%d final=%d, %d not final yet, %d transaction(s) pending\n",
				a.Kind, a.Roots["included"], a.Roots["final"], a.NotFinal, a.PendingTx)
			if a.Error != "" {
				fmt.Fprintf(&b, "  chain read failed: %s\n", a.Error)
			}
		}
	}
	return b.String()
}

func etaText(f frameFeed) string {
	switch {
	case f.Lag == 0:
		return "caught up"
	case f.ETASeconds == nil:
		return "stalled"
	}
	return (time.Duration(*f.ETASeconds * float64(time.Second))).Round(time.Second).String()
}

func cmpOr(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
