package podspec

import (
	"fmt"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// ContainerInputs are what a container's config needs beside the pod and
// the container: the engine's facts and what it prepared.
type ContainerInputs struct {
	// Type is the AnnotationContainerType value (ContainerTypeInit,
	// ContainerTypeRegular, or the engine's ephemeral type).
	Type string
	// RestartCount is the container's attempt and restart count.
	RestartCount int
	// ImageRef is the image to create the container from (its ID or
	// digest, from the runtime); c.Image stays the user's.
	ImageRef string
	// AgentID is the LabelAgent value.
	AgentID string
	// Env is the container's environment, in order, and EnvMap the same as
	// a map, which command and args are expanded against.
	Env    []*runtimeapi.KeyValue
	EnvMap map[string]string
	// Mounts are the container's volume mounts as prepared (Mounts, then
	// the engine's read-only data mounts).
	Mounts []*runtimeapi.Mount
	// SeccompRoot is the directory of Localhost seccomp profiles.
	SeccompRoot string
	// MemoryCapacity is the node's memory in bytes (0: unknown), for the
	// oom_score_adj.
	MemoryCapacity int64
	// UserNamespace is the pod's user namespace, the sandbox's
	// (SandboxInputs.UserNamespace): nil for the node's.
	UserNamespace *runtimeapi.UserNamespace
}

// ContainerConfig converts one container into its CRI config. The image's
// user (ApplyImageUser) and the /etc/hosts and termination-log mounts are
// added by the engine afterwards.
func ContainerConfig(pod *v1.Pod, c *v1.Container, in ContainerInputs) (*runtimeapi.ContainerConfig, error) {
	// The effective security context (security.go).
	sc, err := ContainerSecurityContext(pod, c, in.SeccompRoot)
	if err != nil {
		return nil, err
	}
	sc.NamespaceOptions.UsernsOptions = in.UserNamespace
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(in.RestartCount)},
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Image:       &runtimeapi.ImageSpec{Image: in.ImageRef, UserSpecifiedImage: c.Image},
		Command:     ExpandAll(c.Command, in.EnvMap),
		Args:        ExpandAll(c.Args, in.EnvMap),
		WorkingDir:  c.WorkingDir,
		Envs:        in.Env,
		Mounts:      in.Mounts,
		Labels:      ContainerLabels(pod, c, in.AgentID),
		Annotations: ContainerAnnotations(pod, c, in.RestartCount, in.Type),
		LogPath:     filepath.Join(c.Name, fmt.Sprintf("%d.log", in.RestartCount)),
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       ContainerResources(pod, c, in.MemoryCapacity),
			SecurityContext: sc,
		},
	}, nil
}

// PinFunc pins the subPath sub of the index-th volumeMount of a container
// inside the volume at root and returns the host path to mount: the
// engine's is agent/volume's PinSubPath (subpath_pin.go).
type PinFunc func(index int, volume, root, sub string) (string, error)

// Mounts maps the container's volumeMounts onto host paths: subPath
// (or subPathExpr, expanded against the container's environment) selects a
// path inside the volume, which pin opens beneath the volume's root
// (creating missing directories) and pins; mountPropagation becomes the
// CRI propagation mode.
//
// A mount of an image volume (images: its name → the image the engine
// pulled for it) has no host path: the runtime mounts the image itself
// (CRI Mount.Image, containerd 2.1 or later), read-only whatever the
// volumeMount says (the kubelet's image plugin is ReadOnly), and resolves
// subPath inside it as Mount.ImageSubPath, never on the host, so nothing
// is pinned.
func Mounts(c *v1.Container, volPaths map[string]string, images map[string]*runtimeapi.ImageSpec, env map[string]string, pin PinFunc) ([]*runtimeapi.Mount, error) {
	var out []*runtimeapi.Mount
	for i, m := range c.VolumeMounts {
		img, isImage := images[m.Name]
		hp, ok := volPaths[m.Name]
		if !ok && !isImage {
			return nil, fmt.Errorf("volumeMount %q: no such volume", m.Name)
		}
		sub := m.SubPath
		if m.SubPathExpr != "" {
			sub = ExpandVars(m.SubPathExpr, func(name string) (string, bool) {
				v, ok := env[name]
				return v, ok
			})
			if strings.Contains(sub, "$(") {
				return nil, fmt.Errorf("volumeMount %q: subPathExpr %q refers to an undefined variable", m.Name, m.SubPathExpr)
			}
		}
		if sub != "" {
			if err := manifest.CheckSubPath(sub); err != nil {
				return nil, fmt.Errorf("volumeMount %q: %w", m.Name, err)
			}
		}
		if isImage {
			out = append(out, &runtimeapi.Mount{
				ContainerPath: m.MountPath,
				Image:         img,
				ImageSubPath:  sub,
				Readonly:      true,
				Propagation:   MountPropagation(m.MountPropagation),
			})
			continue
		}
		if sub != "" {
			p, err := pin(i, m.Name, hp, sub)
			if err != nil {
				return nil, fmt.Errorf("volumeMount %q: %w", m.Name, err)
			}
			hp = p
		}
		out = append(out, &runtimeapi.Mount{
			ContainerPath: m.MountPath,
			HostPath:      hp,
			Readonly:      m.ReadOnly,
			Propagation:   MountPropagation(m.MountPropagation),
		})
	}
	return out, nil
}

// ImageVolumeSpec is the CRI image of an image volume: ref is what the
// pull returned (the image's ID), reference the user's, as the kubelet's
// getImageVolumes passes them (it adds the pod's annotations, which
// containerd reads only when it pulls: minikubelet passes none, as for
// container images).
func ImageVolumeSpec(reference, ref string) *runtimeapi.ImageSpec {
	return &runtimeapi.ImageSpec{Image: ref, UserSpecifiedImage: reference}
}

// MountPropagation maps the API's mode to the CRI's (None is private).
func MountPropagation(m *v1.MountPropagationMode) runtimeapi.MountPropagation {
	if m == nil {
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE
	}
	switch *m {
	case v1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
	case v1.MountPropagationBidirectional:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
	}
	return runtimeapi.MountPropagation_PROPAGATION_PRIVATE
}

// IDMapMounts gives every mount of a container in a user namespace of the
// pod's own the namespace's ID mappings (CRI Mount.uid_mappings and
// gid_mappings), as the kubelet's applyPlatformSpecificContainerConfig
// does once the mounts are complete: the runtime then makes each an
// idmapped mount, so the files of volumes, /etc/hosts and the termination
// log keep the IDs the pod sees (root in the pod writes uid 0 on disk).
// Without it the runtime binds them as they are, and a file root writes
// belongs to the pod's host uid. The engine calls it after adding its own
// mounts; a container in the node's user namespace is left alone.
func IDMapMounts(cfg *runtimeapi.ContainerConfig) {
	userNS := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
	if userNS == nil {
		return
	}
	for _, m := range cfg.Mounts {
		m.UidMappings, m.GidMappings = userNS.Uids, userNS.Gids
	}
}
