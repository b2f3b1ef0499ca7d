package probes_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/minikubelet/minikubelet/probes"
)

// probeOutputMax is the probes package's maxOutput: the most of a body a
// probe keeps.
const probeOutputMax = 10 << 10

// rawServer answers every connection with the same bytes after reading
// the request's head, then closes it: a pod's HTTP server at its worst.
type rawServer struct {
	ln   net.Listener
	mu   sync.Mutex
	resp []byte
}

func newRawServer(f *testing.F) *rawServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	s := &rawServer{ln: ln}
	f.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			resp := s.resp
			s.mu.Unlock()
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				_, _ = c.Write(resp)
			}()
		}
	}()
	return s
}

// FuzzHTTPProbeResponse serves arbitrary bytes as the answer to an httpGet
// probe (a pod controls them entirely) and checks what the prober makes of
// them:
//   - never a prober error: whatever a pod answers is Success, Warning or
//     Failure (house style rule 14), and never a panic;
//   - the message is bounded (a body is kept up to 10 KiB) and valid to
//     print (a Failure's text or the body as sent);
//   - the result agrees with net/http's own reading of the same bytes
//     when that reading is plain (a final status, no redirect, a body
//     that reads to its end): 2xx Success with the body's first 10 KiB as
//     the message, 3xx Warning, anything else Failure naming the code.
func FuzzHTTPProbeResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\n\r\nbody until close",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 302 Found\r\nLocation: /next\r\n\r\n",
		"HTTP/1.1 302 Found\r\nLocation: http://elsewhere.example/\r\n\r\n",
		"HTTP/1.1 301 Moved\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
		"HTTP/1.0 200 OK\r\n\r\n" + strings.Repeat("a", 12<<10),
		"garbage",
		"",
	} {
		f.Add([]byte(s))
	}
	srv := newRawServer(f)
	port := srv.ln.Addr().(*net.TCPAddr).Port
	prober := probes.NewHTTPProber()
	f.Fuzz(func(t *testing.T, resp []byte) {
		srv.mu.Lock()
		srv.resp = resp
		srv.mu.Unlock()
		req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/healthz", nil)
		if err != nil {
			t.Fatal(err)
		}
		res, msg, err := prober.Probe(context.Background(), req, 5*time.Second)
		if err != nil {
			t.Fatalf("answer %q made a prober error: %v", resp, err)
		}
		if res != probes.Success && res != probes.Warning && res != probes.Failure {
			t.Fatalf("answer %q gave result %v", resp, res)
		}
		if len(msg) > probeOutputMax+200 {
			t.Fatalf("message of %d bytes", len(msg))
		}
		if res == probes.Failure && !utf8.ValidString(msg) && !strings.HasPrefix(msg, "HTTP probe failed") {
			// A failure's text is the prober's own (it may quote bytes
			// of the answer, escaped).
			t.Fatalf("failure message is not UTF-8: %q", msg)
		}

		// What net/http reads from the same bytes, when it is plain.
		hr, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(resp)), req)
		if err != nil || hr.StatusCode < 200 {
			return
		}
		if loc := hr.Header.Get("Location"); loc != "" && hr.StatusCode >= 300 && hr.StatusCode < 400 {
			return // a redirect: followed or not by host
		}
		body, err := io.ReadAll(io.LimitReader(hr.Body, probeOutputMax))
		if err != nil {
			return
		}
		switch code := hr.StatusCode; {
		case code < 300:
			if res != probes.Success || msg != string(body) {
				t.Fatalf("answer %q: got %v %q, want Success %q", resp, res, msg, body)
			}
		case code < 400:
			if res != probes.Warning {
				t.Fatalf("answer %q: got %v %q, want Warning", resp, res, msg)
			}
		default:
			if want := "HTTP probe failed with statuscode: " + strconv.Itoa(code); res != probes.Failure || msg != want {
				t.Fatalf("answer %q: got %v %q, want Failure %q", resp, res, msg, want)
			}
		}
	})
}

// TestHTTPProbe_EndlessStatusLine: a pod that answers a probe with one
// endless line (no newline, 64 MiB) gets a Failure with a bounded message
// as soon as the prober has read 1 MiB of it, not at the deadline with
// the whole line in the agent's memory.
func TestHTTPProbe_EndlessStatusLine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte("HTTP/1.1 200 "))
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range 64 {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	}()
	req, err := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, msg, err := probes.NewHTTPProber().Probe(context.Background(), req, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res != probes.Failure || !strings.Contains(msg, "server response headers exceeded 1048576 bytes") || len(msg) > probeOutputMax {
		t.Fatalf("got %v %q", res, msg[:min(len(msg), 200)])
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %s", d)
	}
}
