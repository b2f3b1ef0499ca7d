package cri

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StatsLister lists the running containers' resource usage (Client has
// it, and so does cri-api's fake).
type StatsLister interface {
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
}

var _ StatsLister = (*Client)(nil)

// ListContainerStats returns the usage (CPU, memory, writable layer) of
// the containers filter selects.
func (c *Client) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	var resp *runtimeapi.ListContainerStatsResponse
	err := call(ctx, "ListContainerStats", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.rt.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: filter})
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp.GetStats(), nil
}

// ListContainerStats implements StatsLister when the wrapped Runtime does.
func (x *Instrumented) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	s, ok := x.rt.(StatsLister)
	if !ok {
		return nil, errNoStats
	}
	start := time.Now()
	stats, err := s.ListContainerStats(ctx, filter)
	x.record(ctx, "ListContainerStats", start, err)
	return stats, err
}

// SandboxStatsLister lists the pod sandboxes' resource usage (CRI
// ListPodSandboxStats; containerd answers it from 1.6 on, with the
// network where the platform supports it).
type SandboxStatsLister interface {
	ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error)
}

var _ SandboxStatsLister = (*Client)(nil)

// ListPodSandboxStats returns the usage of the sandboxes filter selects.
func (c *Client) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	var resp *runtimeapi.ListPodSandboxStatsResponse
	err := call(ctx, "ListPodSandboxStats", c.opts.Timeout, func(ctx context.Context) (err error) {
		resp, err = c.rt.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: filter})
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp.GetStats(), nil
}

// ListPodSandboxStats implements SandboxStatsLister when the wrapped
// Runtime does.
func (x *Instrumented) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	s, ok := x.rt.(SandboxStatsLister)
	if !ok {
		return nil, errNoSandboxStats
	}
	start := time.Now()
	stats, err := s.ListPodSandboxStats(ctx, filter)
	x.record(ctx, "ListPodSandboxStats", start, err)
	return stats, err
}
