package kubeletserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// LogOptions are the log endpoint's parameters (v1.PodLogOptions' query
// form), parsed and checked.
type LogOptions struct {
	// Follow streams the log as it grows until the container stops.
	Follow bool
	// Previous reads the log of the instance before the current one.
	Previous bool
	// Timestamps prefixes each line with its RFC3339Nano timestamp.
	Timestamps bool
	// TailLines, when set, starts with the last N lines.
	TailLines *int64
	// LimitBytes, when set, stops after N bytes.
	LimitBytes *int64
	// Since, when not zero, skips older lines (sinceSeconds or sinceTime).
	Since time.Time
}

// Logs writes a container's log (the daemon's CRI log reader behind the
// pod's log path). Errors are StatusErrors (NotFound, BadRequest) before
// anything is written; after, the stream just ends.
type Logs interface {
	WriteLog(ctx context.Context, namespace, pod, container string, opts LogOptions, w io.Writer) error
}

// parseLogOptions reads the query of /containerLogs as the kubelet does:
// booleans as strconv.ParseBool, tailLines ≥ 0, limitBytes and
// sinceSeconds ≥ 1, sinceTime RFC3339, at most one of sinceSeconds and
// sinceTime. now is the clock sinceSeconds counts back from.
func parseLogOptions(q url.Values, now time.Time) (LogOptions, error) {
	var o LogOptions
	var err error
	for _, b := range []struct {
		key string
		dst *bool
	}{{"follow", &o.Follow}, {"previous", &o.Previous}, {"timestamps", &o.Timestamps}} {
		if *b.dst, err = queryBool(q, b.key); err != nil {
			return LogOptions{}, err
		}
	}
	if o.TailLines, err = queryInt(q, "tailLines", 0); err != nil {
		return LogOptions{}, err
	}
	if o.LimitBytes, err = queryInt(q, "limitBytes", 1); err != nil {
		return LogOptions{}, err
	}
	since, err := queryInt(q, "sinceSeconds", 1)
	if err != nil {
		return LogOptions{}, err
	}
	sinceTime := q.Get("sinceTime")
	if since != nil && sinceTime != "" {
		return LogOptions{}, apierrors.NewBadRequest("at most one of sinceTime or sinceSeconds may be specified")
	}
	if since != nil {
		o.Since = now.Add(-time.Duration(*since) * time.Second)
	}
	if sinceTime != "" {
		t, err := time.Parse(time.RFC3339, sinceTime)
		if err != nil {
			return LogOptions{}, apierrors.NewBadRequest(fmt.Sprintf("sinceTime %q is not an RFC3339 time", sinceTime))
		}
		o.Since = t
	}
	if o.Previous {
		o.Follow = false // an exited instance has nothing more to write
	}
	return o, nil
}

func queryBool(q url.Values, key string) (bool, error) {
	v := q.Get(key)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, apierrors.NewBadRequest(fmt.Sprintf("%s %q is not a boolean", key, v))
	}
	return b, nil
}

// queryInt parses an integer parameter that must be at least min (absent:
// nil).
func queryInt(q url.Values, key string, min int64) (*int64, error) {
	v := q.Get(key)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < min {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s %q must be an integer, %d or more", key, v, min))
	}
	return &n, nil
}

// containerLogs serves /containerLogs/{ns}/{pod}/{container}.
func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request) {
	ns, pod, container := r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container")
	opts, err := parseLogOptions(r.URL.Query(), time.Now())
	if err != nil {
		writeError(w, err)
		return
	}
	if _, err := s.deps.Pods.GetPod(ns, pod); err != nil {
		writeError(w, err)
		return
	}
	lw := &logWriter{w: w}
	if opts.LimitBytes != nil {
		lw.left = *opts.LimitBytes
		lw.limited = true
	}
	err = s.deps.Logs.WriteLog(r.Context(), ns, pod, container, opts, lw)
	switch {
	case err == nil, errors.Is(err, errLimitReached):
	case !lw.started:
		writeError(w, err)
	default:
		// The status line is sent: all that is left is to log it.
		s.logger.Warn("Log stream ended with an error", "pod", ns+"/"+pod, "container", container, "err", err)
	}
}

// errLimitReached ends a log stream at limitBytes.
var errLimitReached = errors.New("limitBytes reached")

// logWriter sends the status line and headers before the first byte,
// flushes after each write (follow streams line by line), and cuts the
// stream at limitBytes.
type logWriter struct {
	w       http.ResponseWriter
	started bool
	limited bool
	left    int64
}

func (l *logWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		l.w.Header().Set("X-Content-Type-Options", "nosniff")
		l.w.WriteHeader(http.StatusOK)
		l.started = true
	}
	if !l.limited {
		return l.w.Write(p)
	}
	if l.left <= 0 {
		return 0, errLimitReached
	}
	cut := p
	if int64(len(cut)) > l.left {
		cut = cut[:l.left]
	}
	n, err := l.w.Write(cut)
	l.left -= int64(n)
	if err == nil && n < len(p) {
		err = errLimitReached
	}
	return n, err
}

// Flush implements http.Flusher, so a follower's lines go out at once.
func (l *logWriter) Flush() {
	if !l.started {
		l.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		l.w.WriteHeader(http.StatusOK)
		l.started = true
	}
	if f, ok := l.w.(http.Flusher); ok {
		f.Flush()
	}
}
