// Package cgroups will own pod-level cgroups (the kubepods hierarchy, QoS
// tiers and pod<uid> cgroups) over github.com/containerd/cgroups/v3.
//
// TODO(minikubelet): implement with the QoS issue (#4). Until then pods run
// in the runtime's default cgroup parent and only container-level CPU and
// memory limits are applied (agent/container.go).
package cgroups
