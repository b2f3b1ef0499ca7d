// Package cgroups owns the node's pod-level cgroups: the kubepods root, the
// burstable and besteffort QoS tiers and one pod<uid> cgroup per pod
// (kubelet-facts §5.5, §5.6). It is a narrow layer over
// github.com/containerd/cgroups/v3 and knows nothing about Kubernetes types:
// the agent computes a neutral Resources value per cgroup and hands it to a
// Manager together with a Name.
//
// Three implementations hide behind Manager:
//
//	cgroupfs on cgroup v1 (and hybrid)  cgroup1 from containerd/cgroups, one
//	                                    directory per mounted controller
//	cgroupfs on cgroup v2 (unified)     own directory creation and
//	                                    subtree_control, values via cgroup2
//	systemd (v1 or v2)                  slice units over D-Bus via cgroup2's
//	                                    systemd support, then the cgroupfs
//	                                    writer on the slice's directory
//
// The filesystem root is injectable (Config.Root) so that tests run against a
// fake tree in a temporary directory.
package cgroups
