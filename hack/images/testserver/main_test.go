package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// fakeClock is a settable clock for --fail-after.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func get(t *testing.T, h http.Handler, target string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	body, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return rec.Code, string(body)
}

func TestServer_HealthzSwitches(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	var logs strings.Builder
	s := newServer(config{failAfter: 10 * time.Second}, clock.now, &logs)
	h := s.handler()

	code, body := get(t, h, "/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)

	clock.t = clock.t.Add(10 * time.Second)
	code, _ = get(t, h, "/healthz")
	assert.Equal(t, http.StatusInternalServerError, code, "--fail-after elapsed")

	code, _ = get(t, h, "/set?healthz=200")
	require.Equal(t, http.StatusOK, code)
	code, _ = get(t, h, "/healthz")
	assert.Equal(t, http.StatusOK, code, "override beats --fail-after")

	get(t, h, "/set?healthz=503")
	code, body = get(t, h, "/healthz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "unhealthy\n", body)

	get(t, h, "/set?healthz=0")
	code, _ = get(t, h, "/healthz")
	assert.Equal(t, http.StatusInternalServerError, code, "0 returns to automatic")

	assert.Contains(t, logs.String(), "GET /healthz 503 from")
}

func TestServer_SetRejectsBadValues(t *testing.T) {
	s := newServer(config{}, time.Now, io.Discard)
	h := s.handler()
	for _, target := range []string{"/set?healthz=abc", "/set?healthz=42", "/set?grpc=MAYBE"} {
		code, _ := get(t, h, target)
		assert.Equal(t, http.StatusBadRequest, code, target)
	}
}

func TestServer_GRPCStatus(t *testing.T) {
	s := newServer(config{}, time.Now, io.Discard)
	h := s.handler()
	check := func() healthpb.HealthCheckResponse_ServingStatus {
		resp, err := s.health.Check(context.Background(), &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
		return resp.Status
	}
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, check())
	get(t, h, "/set?grpc=NOT_SERVING")
	assert.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, check())
}

func TestServer_Hello(t *testing.T) {
	s := newServer(config{}, time.Now, io.Discard)
	s.hostname, s.podName, s.podIP = "h1", "web", "10.88.0.5"
	code, body := get(t, s.handler(), "/")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "hello from h1\npod: web\nip: 10.88.0.5\n", body)
	code, _ = get(t, s.handler(), "/nope")
	assert.Equal(t, http.StatusNotFound, code)
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    config
		wantErr string
	}{
		{name: "defaults", want: config{port: 8080, exitCode: 1}},
		{
			name: "env",
			env:  map[string]string{"PORT": "9000", "FAIL_AFTER": "10s", "GRPC_PORT": "9001"},
			want: config{port: 9000, grpcPort: 9001, failAfter: 10 * time.Second, exitCode: 1},
		},
		{
			name: "flags beat env",
			args: []string{"--port=81", "--exit-after=2s", "--exit-code=3", "--listen-delay=5s"},
			env:  map[string]string{"PORT": "9000"},
			want: config{port: 81, exitAfter: 2 * time.Second, exitCode: 3, listenDelay: 5 * time.Second},
		},
		{name: "bad env", env: map[string]string{"PORT": "x"}, wantErr: `env PORT="x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFlags(tt.args, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
