package gateway

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// lockedBuffer is a bytes.Buffer for a logger written from the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// An answer cut because the client closed its connection is logged at info with
// client_gone and the write error, so a log says which end gave up first; a
// complete answer's line carries neither.
func TestObserveLogsAnAnswerTheClientDidNotWaitFor(t *testing.T) {
	var logs lockedBuffer
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
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

	var line string
	for deadline := time.Now().Add(10 * time.Second); line == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "path=/stream") {
				line = l
			}
		}
	}
	if line == "" {
		t.Fatalf("no log line for the cut answer:\n%s", logs.String())
	}
	for _, want := range []string{"level=INFO", "client_gone=true", "write_err=", "body_bytes="} {
		if !strings.Contains(line, want) {
			t.Errorf("the cut answer's line %q lacks %q", line, want)
		}
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "path=/whole") && (strings.Contains(l, "client_gone") || !strings.Contains(l, "level=DEBUG")) {
			t.Errorf("a complete answer logged as %q", l)
		}
	}
}
