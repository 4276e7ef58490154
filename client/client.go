// Package client is the typed client of a crow daemon's REST API. Its calls
// are the operations of package app: the method, path, query, body and the
// answer's type all come from the operation's definition, so the CLI, the
// demo and the end-to-end tests declare no request or response types of
// their own.
//
//	c, err := client.FromHome(dir)        // $CROW_HOME/gateway.addr and api-key
//	m, err := client.Do(ctx, c, app.MemoryGet, app.MemoryID{ID: id})
package client

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

	"github.com/crow-sync/crow/app"
	"github.com/crow-sync/crow/home"
)

// Client calls one daemon's REST API with the owner key (or none, for the
// public operations).
type Client struct {
	base string
	key  string
	http *http.Client
}

// New returns a client of the gateway at base ("http://127.0.0.1:3001" or
// "127.0.0.1:3001") authenticating with key ("" for public calls only).
func New(base, key string) *Client {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return &Client{base: strings.TrimRight(base, "/"), key: key, http: &http.Client{Timeout: 60 * time.Second}}
}

// ErrNoDaemon is returned by FromHome when no daemon runs for the data
// directory (it has no gateway.addr).
var ErrNoDaemon = errors.New("no daemon is running")

// FromHome returns a client of the daemon serving the data directory dir:
// its address from gateway.addr, its key from api-key.
func FromHome(dir string) (*Client, error) {
	paths := home.PathsOf(dir)
	base, err := paths.ReadGatewayAddr()
	if errors.Is(err, home.ErrNoGateway) {
		return nil, fmt.Errorf("%w for %s (no gateway.addr): start it with 'crow serve'", ErrNoDaemon, dir)
	} else if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(paths.APIKeyFile())
	if err != nil {
		return nil, fmt.Errorf("reading API key (is %s initialised? run 'crow init'): %w", dir, err)
	}
	return New(base, strings.TrimSpace(string(key))), nil
}

// Base is the gateway's base URL.
func (c *Client) Base() string { return c.base }

// WithKey returns a copy of c that authenticates with key.
func (c *Client) WithKey(key string) *Client {
	cp := *c
	cp.key = key
	return &cp
}

// Error is a failed call: the daemon's status and message, and the kind
// the status stands for. Its JSON form is the gateway's error document,
// {"error": msg}, so a raw error answer decodes into it.
type Error struct {
	Status int      `json:"-"`
	Kind   app.Kind `json:"-"`
	Msg    string   `json:"error"`
}

func (e *Error) Error() string { return e.Msg }

// KindOf is the kind of a call's error (KindInternal for transport errors).
func KindOf(err error) app.Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return app.KindInternal
}

// StatusOf is the HTTP status of a call's error (0 for transport errors).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// Do calls operation d with in and decodes its answer.
func Do[In, Out any](ctx context.Context, c *Client, d *app.Def[In, Out], in In) (Out, error) {
	var out Out
	sp := d.Info()
	if sp.Method == "" {
		return out, fmt.Errorf("operation %s has no REST route", sp.Name)
	}
	path, q, body, err := d.Input().EncodeREST(sp.Path, in)
	if err != nil {
		return out, fmt.Errorf("encoding %s: %w", sp.Name, err)
	}
	raw, err := c.Raw(ctx, sp.Method, path, q, body)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, fmt.Errorf("decoding the answer of %s %s: %w", sp.Method, path, err)
	}
	return out, nil
}

// DoRaw calls operation d with in and returns its answer undecoded (for
// printing it as the daemon wrote it).
func DoRaw[In, Out any](ctx context.Context, c *Client, d *app.Def[In, Out], in In) (json.RawMessage, error) {
	sp := d.Info()
	path, q, body, err := d.Input().EncodeREST(sp.Path, in)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", sp.Name, err)
	}
	return c.Raw(ctx, sp.Method, path, q, body)
}

// Raw sends one request (body: JSON, or nil) and returns the answer's body;
// an error answer becomes an *Error.
func (c *Client) Raw(ctx context.Context, method, path string, q url.Values, body []byte) ([]byte, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("daemon at %s is not answering (is 'crow serve' running?): %w", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		e := &Error{Status: resp.StatusCode, Kind: app.KindOfStatus(resp.StatusCode)}
		if json.Unmarshal(data, e) != nil || e.Msg == "" {
			e.Msg = fmt.Sprintf("%s %s: %s", method, path, resp.Status)
		}
		return nil, e
	}
	return data, nil
}
