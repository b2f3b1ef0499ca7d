// Package api is minikubelet's local API: Kubernetes-shaped HTTP/JSON over a
// unix socket (and optionally TCP, with TLS and client certificates from
// the node's own CA: pki.go, boundary.go), served to the CLI.
// It knows nothing of the agent's internals: the daemon implements Backend.
package api

import (
	"context"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
)

// Backend is what the API serves. The agent's daemon implements it. Errors
// are apimachinery StatusErrors (k8s.io/apimachinery/pkg/api/errors:
// NewNotFound, NewAlreadyExists, NewInvalid, NewBadRequest, NewForbidden,
// NewServiceUnavailable); any other error is a 500.
type Backend interface {
	// ListPods returns the pods of a namespace ("" = all), with status.
	ListPods(namespace string) []*v1.Pod
	// WatchPods starts a watch of the pods (a PodWatchHub's: watch.go
	// says what resource versions mean). Errors are StatusErrors (410
	// Gone for a resource version too old, 400 for a bad one).
	WatchPods(opts PodWatchOptions) (PodWatch, error)
	// PodsResourceVersion is the pods' current resource version, read
	// before a list is built: a watch from it misses no change after.
	PodsResourceVersion() string
	// GetPod returns one pod with its status.
	GetPod(namespace, name string) (*v1.Pod, error)
	// CreatePod decodes, defaults, validates and admits a pod submitted
	// through the API, persists it, and returns it as accepted.
	CreatePod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error)
	// DeletePod starts the pod's deletion with the grace period (nil: the
	// pod's own). Static pods (from the manifest directory) cannot be
	// deleted through the API: Forbidden, naming the file to remove.
	DeletePod(ctx context.Context, namespace, name string, gracePeriodSeconds *int64) (*v1.Pod, error)
	// CreateConfigMap and CreateSecret default, validate (Invalid with
	// field errors), persist and hand to the agent a ConfigMap or Secret
	// submitted through the API, and return it as stored (a Secret's
	// stringData merged into data). AlreadyExists when the namespace/name
	// is taken, by the API or the manifest directory.
	CreateConfigMap(ctx context.Context, cm *v1.ConfigMap) (*v1.ConfigMap, error)
	CreateSecret(ctx context.Context, secret *v1.Secret) (*v1.Secret, error)
	// DeleteConfigMap and DeleteSecret remove one submitted through the
	// API: NotFound when there is none; Forbidden for one from the manifest
	// directory.
	DeleteConfigMap(ctx context.Context, namespace, name string) error
	DeleteSecret(ctx context.Context, namespace, name string) error
	// ListConfigMaps and ListSecrets return those of a namespace ("" =
	// all) from every source, sorted by namespace and name. Secrets carry
	// their data, as from an API server.
	ListConfigMaps(namespace string) []*v1.ConfigMap
	ListSecrets(namespace string) []*v1.Secret
	// Events returns the pod's events, oldest first.
	Events(namespace, name string) ([]v1.Event, error)
	// Details returns what describe shows beyond the pod: startup trace,
	// probe states, cgroup path, the step the pod is stuck at.
	Details(namespace, name string) (*PodDetails, error)
	// LogPath returns the CRI log file of a container instance: the
	// current one, or with previous the one before it.
	LogPath(namespace, name, container string, previous bool) (string, error)
	// Exec runs a command in a container (CRI ExecSync) and returns its
	// output and exit code.
	Exec(ctx context.Context, namespace, name, container string, cmd []string, timeout time.Duration) (*ExecResult, error)
	// Healthz reports whether the daemon's loops run; Readyz whether the
	// runtime and the pod network are ready.
	Healthz() error
	Readyz() error
	// Version describes the daemon and its runtime.
	Version() VersionInfo
	// WriteMetrics writes the Prometheus text exposition.
	WriteMetrics(w io.Writer) error
}

// PodDetails is describe's view of a pod beyond v1.Pod.
type PodDetails struct {
	// CgroupPath is the pod's cgroup ("" without QoS cgroups).
	CgroupPath string `json:"cgroupPath,omitempty"`
	// Source is where the pod comes from: "file:<path>" or "api".
	Source string `json:"source"`
	// Steps is the startup trace: each step of the chain and its duration.
	Steps []Step `json:"steps"`
	// Probes is the state of each probe of each container.
	Probes []ProbeState `json:"probes,omitempty"`
	// Stuck names the step the pod waits at and the likely cause, when
	// it is not Ready ("" otherwise).
	Stuck *Stuck `json:"stuck,omitempty"`
}

// Step is one link of the startup chain.
type Step struct {
	Name     string        `json:"name"`
	Duration time.Duration `json:"duration"`
	Detail   string        `json:"detail,omitempty"`
	At       time.Time     `json:"at"`
}

// ProbeState is one probe's last result, for describe.
type ProbeState struct {
	Container string `json:"container"`
	Kind      string `json:"kind"` // liveness, readiness, startup
	// Result is the probe's current verdict (success, failure, unknown),
	// which changes only once a threshold of runs agrees.
	Result string `json:"result"`
	// LastResult is what the last run returned (success, failure,
	// warning; "" before the first run).
	LastResult string `json:"lastResult,omitempty"`
	// LastMessage is the last failed or warning run's output, as the
	// kubelet's Unhealthy and ProbeWarning events carry it (cut at
	// MaxProbeMessage): a success's output (an HTTP probe's page) is
	// never shown, as no kubelet event carries it.
	LastMessage   string    `json:"lastMessage,omitempty"`
	LastProbeTime time.Time `json:"lastProbeTime,omitempty"`
	Failures      int       `json:"consecutiveFailures"`
	// FailureThreshold is the probe's failureThreshold (0: unknown).
	FailureThreshold int `json:"failureThreshold,omitempty"`
}

// MaxProbeMessage bounds a probe message describe shows: the API's limit
// on an event's note (validation.NoteLengthLimit, 1024 bytes, which the
// scheduler's truncateMessage cuts to with " ..."). The kubelet itself
// keeps at most 10 KiB of a probe's output (its prober's read limit) and
// its events carry that; one describe line is no place for 10 KiB.
const MaxProbeMessage = 1024

// CutProbeMessage makes a probe's output one line (runs of white space,
// newlines included, become one space) of at most MaxProbeMessage bytes,
// ending in " ..." when cut (never inside a UTF-8 sequence).
func CutProbeMessage(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= MaxProbeMessage {
		return s
	}
	const suffix = " ..."
	cut := MaxProbeMessage - len(suffix)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + suffix
}

// Stuck says where a pod that is not Ready waits, and why.
type Stuck struct {
	// Step is the chain step: admission, network, sandbox, image,
	// create, start, crash-loop, readiness, terminating.
	Step string `json:"step"`
	// Cause is the likely cause in a sentence.
	Cause string `json:"cause"`
	// Hint says what to do next, when there is something to do.
	Hint string `json:"hint,omitempty"`
}

// ExecResult is the outcome of Exec.
type ExecResult struct {
	Stdout   []byte `json:"stdout"`
	Stderr   []byte `json:"stderr"`
	ExitCode int    `json:"exitCode"`
}

// VersionInfo describes the daemon and its runtime.
type VersionInfo struct {
	Version           string `json:"version"`
	RuntimeName       string `json:"runtimeName"`
	RuntimeVersion    string `json:"runtimeVersion"`
	RuntimeAPIVersion string `json:"runtimeApiVersion"`
	NodeName          string `json:"nodeName"`
}
