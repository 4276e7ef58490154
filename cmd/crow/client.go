package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/crow-sync/crow/home"
)

// client talks to the local daemon over its REST API, finding it through
// $CROW_HOME/gateway.addr and authenticating with $CROW_HOME/api-key.
type client struct {
	base string
	key  string
	http *http.Client
}

func newClient(g *globals) (*client, error) {
	dir := home.Resolve(g.home)
	paths := home.PathsOf(dir)
	base, err := paths.ReadGatewayAddr()
	if errors.Is(err, home.ErrNoGateway) {
		return nil, fmt.Errorf("%w for %s (no gateway.addr): start it with 'crow serve'", errNoDaemon, dir)
	} else if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(paths.APIKeyFile())
	if err != nil {
		return nil, fmt.Errorf("reading API key (is %s initialised? run 'crow init'): %w", dir, err)
	}
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return &client{base: base, key: strings.TrimSpace(string(key)), http: &http.Client{Timeout: 60 * time.Second}}, nil
}

// errNoDaemon is returned by newClient when no daemon runs for the data
// directory (it has no gateway.addr).
var errNoDaemon = errors.New("no daemon is running")

// apiError is an error answer of the daemon.
type apiError struct {
	Status int
	Msg    string
}

func (e *apiError) Error() string { return e.Msg }

// do sends a JSON request and decodes a JSON answer into out (if non-nil).
func (c *client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("daemon at %s is not answering (is 'crow serve' running?): %w", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("reading answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return &apiError{Status: resp.StatusCode, Msg: e.Error}
		}
		return &apiError{Status: resp.StatusCode, Msg: fmt.Sprintf("%s %s: %s", method, path, resp.Status)}
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], data...)
		return nil
	}
	return json.Unmarshal(data, out)
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
