package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/client"
	"github.com/crow-sync/crow/home"
)

// newClient returns the typed client of the daemon serving g's data
// directory (found through $CROW_HOME/gateway.addr, authenticating with
// $CROW_HOME/api-key).
func newClient(g *globals) (*client.Client, error) {
	return client.FromHome(home.Resolve(g.home))
}

// printJSON pretty-prints raw JSON to w.
func printJSON(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		_, err = w.Write(raw)
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// call runs operation d with in on c. With --json it prints the answer as
// the daemon wrote it and returns printed=true; otherwise it returns the
// typed answer for the command to print.
func call[In, Out any](ctx context.Context, g *globals, c *client.Client, d *app.Def[In, Out], in In) (out Out, printed bool, err error) {
	if g.json {
		raw, err := client.DoRaw(ctx, c, d, in)
		if err != nil {
			return out, false, err
		}
		return out, true, printJSON(g.stdout, raw)
	}
	out, err = client.Do(ctx, c, d, in)
	return out, false, err
}
