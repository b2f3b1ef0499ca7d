package kubeletserver

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Summary is the node's stats summary (agent/stats.Provider): with
// onlyCPUAndMemory only the CPU and memory fields. Its pods are those the
// cluster sees, as Pods lists them (cmd's clusterSummary).
type Summary interface {
	Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsapi.Summary, error)
}

// statsSummary serves /stats/summary, the Summary API (stats/v1alpha1):
// the node's and its pods' CPU, memory, network and filesystem usage.
// ?only_cpu_and_memory=true (metrics-server's query) leaves out all but CPU
// and memory. GET only, as the kubelet's current handler (its POST form
// with a request body was removed).
func (s *Server) statsSummary(w http.ResponseWriter, r *http.Request) {
	only := false
	if v := r.URL.Query().Get("only_cpu_and_memory"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			http.Error(w, fmt.Sprintf("invalid only_cpu_and_memory %q: want true or false", v), http.StatusBadRequest)
			return
		}
		only = b
	}
	ctx, cancel := context.WithTimeout(r.Context(), criTimeout)
	defer cancel()
	sum, err := s.deps.Summary.Summary(ctx, only)
	if err != nil {
		s.logger.Warn("Building the stats summary failed", "err", err)
		http.Error(w, fmt.Sprintf("failed to get the node's stats summary: %v", err), http.StatusInternalServerError)
		return
	}
	writeJSON(w, sum)
}

// probeMetrics serves /metrics/probes: the prober_probe_total family of
// the daemon's metrics (the kubelet serves its prober metrics registry
// there).
func (s *Server) probeMetrics(w http.ResponseWriter, _ *http.Request) {
	var all bytes.Buffer
	if err := s.deps.Metrics.WriteMetrics(&all); err != nil {
		s.logger.Warn("Writing metrics failed", "err", err)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(filterFamily(all.Bytes(), "prober_probe_total"))
}

// filterFamily keeps the lines of one metric family of a Prometheus text
// exposition: its HELP and TYPE comments and its samples.
func filterFamily(text []byte, family string) []byte {
	var out bytes.Buffer
	for line := range strings.Lines(string(text)) {
		name := line
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name = rest
		} else if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name = rest
		}
		if n, _, _ := strings.Cut(strings.TrimRight(name, "\n"), " "); n == family || strings.HasPrefix(n, family+"{") {
			out.WriteString(line)
		}
	}
	return out.Bytes()
}
