package gateway

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// logLines hands each line a slog.TextHandler writes (one Write per record) to the test.
type logLines chan string

func (c logLines) Write(p []byte) (int, error) { c <- string(p); return len(p), nil }

// An answer cut because the client closed its connection is logged at info with
// client_gone and the write error, so a log says which end gave up first; a
// complete answer's line carries neither.
func TestObserveLogsAnAnswerTheClientDidNotWaitFor(t *testing.T) {
	logs := make(logLines, 16)
	s := &Server{log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		metrics: newHTTPMetrics(prometheus.NewRegistry())}
	h := s.observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/whole" {
			io.WriteString(w, "all of it")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the client has closed the connection
		chunk := bytes.Repeat([]byte("x"), 32<<10)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
		t.Error("writes after the client left never failed")
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/whole")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()

	resp, err = http.Get(srv.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len("data: first\n\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // an unread body: the transport closes the connection

	var whole, line string
	for line == "" || whole == "" {
		select {
		case l := <-logs:
			switch {
			case strings.Contains(l, "path=/whole"):
				whole = l
			case strings.Contains(l, "path=/stream"):
				line = l
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("log lines so far: whole %q, cut %q", whole, line)
		}
	}
	for _, want := range []string{"level=INFO", "client_gone=true", "write_err=", "body_bytes="} {
		if !strings.Contains(line, want) {
			t.Errorf("the cut answer's line %q lacks %q", line, want)
		}
	}
	if strings.Contains(whole, "client_gone") || !strings.Contains(whole, "level=DEBUG") {
		t.Errorf("a complete answer logged as %q", whole)
	}
}
