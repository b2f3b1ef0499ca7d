package kubeletserver

import (
	"fmt"
	"net/http"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

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
	if pod, ok := s.streamPod(w, r); ok {
		s.streams().Exec(w, r, pod, r.PathValue("container"))
	}
}

func (s *Server) attach(w http.ResponseWriter, r *http.Request) {
	if pod, ok := s.streamPod(w, r); ok {
		s.streams().Attach(w, r, pod, r.PathValue("container"))
	}
}

func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	if pod, ok := s.streamPod(w, r); ok {
		s.streams().PortForward(w, r, pod)
	}
}

// streamPod is the pod of a stream request, {ns}/{pod} and, in the
// /{ns}/{pod}/{uid}/… forms, only if its UID is {uid}: a request meant
// for a pod that was deleted and created again under its name must not
// reach the new one. Otherwise it answers 404 and returns false.
//
// The kubelet compares the UID for port-forward (404 "pod not found") and
// looks exec and attach up by name and UID in the runtime's pods, which
// fails as a 500 "container not found"; here all three answer 404, the
// status of a pod that is not there. The kubelet also translates a mirror
// pod's UID to its static pod's (podManager.TranslatePodUID); the view
// here knows a static pod by the static pod's UID only (the one /pods
// shows), so a mirror object's UID is a 404. The API server's own stream
// URLs carry no UID (pkg/registry/core/pod: /exec/{ns}/{pod}/{container}),
// so only direct callers use these forms. /containerLogs has no UID form,
// and /run is not served.
func (s *Server) streamPod(w http.ResponseWriter, r *http.Request) (*v1.Pod, bool) {
	name := r.PathValue("pod")
	pod, err := s.deps.Pods.GetPod(r.PathValue("ns"), name)
	if err != nil {
		writeError(w, err)
		return nil, false
	}
	if uid := r.PathValue("uid"); uid != "" && string(pod.UID) != uid {
		writeError(w, apierrors.NewNotFound(v1.Resource("pods"), fmt.Sprintf("%s (uid %s)", name, uid)))
		return nil, false
	}
	return pod, true
}
