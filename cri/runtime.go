// Package cri is minikubelet's narrow, typed access to a CRI runtime
// (containerd): the subset of cri-api's RuntimeService and ImageManagerService
// that the agent uses, a gRPC client that satisfies it, a logging and timing
// decorator, and the one place where gRPC errors are translated.
//
// The interfaces copy cri-api's method signatures exactly, so both the real
// client and k8s.io/cri-api/pkg/apis/testing's fakes satisfy them without
// adapters (house style rule 12), while new cri-api methods do not force
// changes here.
package cri

import (
	"context"
	"strconv"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is the subset of the CRI RuntimeService used by minikubelet.
type Runtime interface {
	Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error)
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
	RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error)

	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	StopPodSandbox(ctx context.Context, podSandboxID string) error
	RemovePodSandbox(ctx context.Context, podSandboxID string) error
	PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)

	CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, containerID string) error
	StopContainer(ctx context.Context, containerID string, timeout int64) error
	RemoveContainer(ctx context.Context, containerID string) error
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error)
	ReopenContainerLog(ctx context.Context, containerID string) error
	UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error

	GetContainerEvents(ctx context.Context, containerEventsCh chan *runtimeapi.ContainerEventResponse, connectionEstablishedCallback func(runtimeapi.RuntimeService_GetContainerEventsClient)) error
}

// Images is the subset of the CRI ImageManagerService used by minikubelet.
type Images interface {
	PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// EventsReachEverySubscriber reports whether a runtime, by the name and
// version its Version call gives, sends every container event to every
// GetContainerEvents stream, so that a subscriber misses none because
// another (a second agent, a kubelet, crictl events) subscribed too.
// containerd 2.x does (each stream has its own subscription); 1.7 hands
// each event to one of the streams reading its one queue; other runtimes
// are not known to, so no.
func EventsReachEverySubscriber(name, version string) bool {
	major, _, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	n, err := strconv.Atoi(major)
	return name == "containerd" && err == nil && n >= 2
}
