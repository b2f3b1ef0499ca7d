package api

// describe node's view (issue #21): what the daemon knows of the node
// beyond the Node object, served at /api/v1/nodes/{name}/details by a
// backend that implements NodeDescriber.

import (
	"context"
	"net/http"
	"net/url"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// NodeDescriber is implemented by a Backend that can describe the node
// (the daemon); the API answers 404 for the details otherwise. It is
// apart from Backend so that backends without eviction need nothing.
type NodeDescriber interface {
	// DescribeNode returns the node's details.
	DescribeNode() (*NodeDetails, error)
}

// NodeDetails is describe node's view.
type NodeDetails struct {
	// Capacity and Allocatable are what admission uses.
	Capacity    v1.ResourceList `json:"capacity"`
	Allocatable v1.ResourceList `json:"allocatable"`
	// Conditions are the pressure conditions with their last transition.
	Conditions []v1.NodeCondition `json:"conditions"`
	// Filesystems are the node and image filesystems.
	Filesystems []Filesystem `json:"filesystems"`
	// Signals are the eviction signals at the last observation.
	Signals []Signal `json:"signals,omitempty"`
	// ObservedAt is when the signals were last observed.
	ObservedAt time.Time `json:"observedAt"`
	// Thresholds are the eviction thresholds in flag syntax.
	Thresholds []string `json:"thresholds,omitempty"`
	// Evictions are the last evictions, oldest first.
	Evictions []Eviction `json:"evictions,omitempty"`
	// Errors are observations that failed.
	Errors []string `json:"errors,omitempty"`
}

// Filesystem is one filesystem's usage.
type Filesystem struct {
	Name           string `json:"name"` // nodefs, imagefs
	Path           string `json:"path"`
	CapacityBytes  int64  `json:"capacityBytes"`
	AvailableBytes int64  `json:"availableBytes"`
	InodesTotal    int64  `json:"inodesTotal"`
	InodesFree     int64  `json:"inodesFree"`
}

// Signal is one eviction signal's observation.
type Signal struct {
	Name      string `json:"name"`
	Available int64  `json:"available"`
	Capacity  int64  `json:"capacity"`
}

// Eviction is one pod evicted.
type Eviction struct {
	Pod     string    `json:"pod"`
	Signal  string    `json:"signal"`
	Time    time.Time `json:"time"`
	Message string    `json:"message"`
}

func (s *Server) nodeDetails(w http.ResponseWriter, r *http.Request) error {
	if name := r.PathValue("name"); name != s.backend.Version().NodeName {
		return notFound("nodes", name)
	}
	nd, ok := s.backend.(NodeDescriber)
	if !ok {
		return apierrors.NewNotFound(v1.Resource("nodes/details"), r.PathValue("name"))
	}
	d, err := nd.DescribeNode()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

// NodeDetails returns describe node's view of the node name.
func (c *Client) NodeDetails(ctx context.Context, name string) (*NodeDetails, error) {
	var d NodeDetails
	if err := c.call(ctx, http.MethodGet, "/api/v1/nodes/"+url.PathEscape(name)+"/details", nil, nil, "", &d); err != nil {
		return nil, err
	}
	return &d, nil
}
