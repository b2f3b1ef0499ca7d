package kubeletserver

import (
	"net/http"

	"github.com/minikubelet/minikubelet/agent/streaming"
)

// Runtime is what the streaming endpoints need of the CRI (shared with the
// local API: agent/streaming).
type Runtime = streaming.Runtime

// streams serves exec, attach and port-forward through agent/streaming,
// errors in the kubelet's plain-text form.
func (s *Server) streams() *streaming.Proxy {
	return &streaming.Proxy{Runtime: s.deps.Runtime, Logger: s.logger,
		WriteError: func(w http.ResponseWriter, _ *http.Request, err error) { writeError(w, err) }}
}

func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	pod, err := s.deps.Pods.GetPod(r.PathValue("ns"), r.PathValue("pod"))
	if err != nil {
		writeError(w, err)
		return
	}
	s.streams().Exec(w, r, pod, r.PathValue("container"))
}

func (s *Server) attach(w http.ResponseWriter, r *http.Request) {
	pod, err := s.deps.Pods.GetPod(r.PathValue("ns"), r.PathValue("pod"))
	if err != nil {
		writeError(w, err)
		return
	}
	s.streams().Attach(w, r, pod, r.PathValue("container"))
}

func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	pod, err := s.deps.Pods.GetPod(r.PathValue("ns"), r.PathValue("pod"))
	if err != nil {
		writeError(w, err)
		return
	}
	s.streams().PortForward(w, r, pod)
}
