package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/crow-sync/crow/app"
)

// Stream calls operation d, which answers with a stream of bytes (an
// *app.Stream), and returns the answer's body for the caller to read and
// close. It has no overall timeout (a backup may take a while): ctx ends it.
// An error answer becomes an *Error. A body that ends early (the daemon
// failed midway) fails its Read with an error, as the stream's own format
// also detects.
func Stream[In any](ctx context.Context, c *Client, d *app.Def[In, *app.Stream], in In) (io.ReadCloser, error) {
	sp := d.Info()
	path, q, body, err := d.Input().EncodeREST(sp.Path, in)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", sp.Name, err)
	}
	if body != nil {
		return nil, fmt.Errorf("operation %s: a streamed answer takes no body", sp.Name)
	}
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, sp.Method, u, nil)
	if err != nil {
		return nil, err
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	hc := *c.http
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("daemon at %s is not answering (is 'crow serve' running?): %w", c.base, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		e := &Error{Status: resp.StatusCode, Kind: app.KindOfStatus(resp.StatusCode)}
		if json.Unmarshal(data, e) != nil || e.Msg == "" {
			e.Msg = fmt.Sprintf("%s %s: %s", sp.Method, path, resp.Status)
		}
		return nil, e
	}
	return resp.Body, nil
}
