package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Do calls the node's REST API with the owner key: body (if not nil) is
// sent as JSON, and the answer is decoded into out (if not nil). It returns
// the HTTP status; an error means no answer, or one that does not decode.
func (n *Node) Do(method, path string, body, out any) (int, error) {
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, n.URL+path, r)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+n.APIKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: %s %s: %w", n.Name, method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s: %s %s: reading answer: %w", n.Name, method, path, err)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s: %s %s: answer %d is not JSON: %s", n.Name, method, path, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, nil
}

// MustDo is Do that fails the test unless the status is want.
func (n *Node) MustDo(want int, method, path string, body, out any) {
	n.c.t.Helper()
	var raw json.RawMessage
	st, err := n.Do(method, path, body, &raw)
	if err != nil || st != want {
		n.c.fatalf("%s: %s %s = %d (%v) %s, want %d", n.Name, method, path, st, err, raw, want)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			n.c.fatalf("%s: %s %s: decoding %s: %v", n.Name, method, path, raw, err)
		}
	}
}
