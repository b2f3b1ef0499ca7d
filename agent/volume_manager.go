package agent

import (
	"errors"
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podspec"
	"github.com/minikubelet/minikubelet/agent/safepath"
	"github.com/minikubelet/minikubelet/agent/volume"
)

// volumes is the pod volume manager (agent/volume) over the agent's
// current configuration, mounter and token cache. Built per call: it holds
// no state, and tests change those fields after New.
func (a *Agent) volumes() *volume.Manager {
	return volume.NewManager(volume.Config{
		RootDir:         a.cfg.RootDir,
		PodLogDir:       a.cfg.PodLogDir,
		ProtectedPaths:  a.cfg.ProtectedPaths,
		AllowPrivileged: a.cfg.PodSecurity == node.PodSecurityPrivileged,
		Allocatable:     a.cfg.Node.Allocatable,
	}, volume.Deps{
		Data:    configDataLookup{a},
		Fields:  downwardFields{a},
		Mounter: a.mounter,
		Tokens:  a.tokens,
		Logger:  a.logger,

		TrustBundles: a.trustBundles,
		PodCerts:     a.podCerts,
	})
}

// podDir is <rootDir>/pods/<uid>, the home of a pod's volumes, as in the
// kubelet's layout (agent/volume's Manager has the same layout).
func (a *Agent) podDir(pod *v1.Pod) string {
	return filepath.Join(a.cfg.RootDir, "pods", string(pod.UID))
}

// cleanupPodDirs removes the pod's volume directory tree and log directory,
// after the volume manager unmounted what is mounted under it. The pod
// wrote into its directory, and pinned subPaths there can be bind mounts
// of host directories: the removal never crosses a mount point (one still
// there is an error, and the pod dir stays for the next try) and never
// follows a symlink.
func (a *Agent) cleanupPodDirs(pod *v1.Pod) error {
	// The pod's user namespace range is free from now on (userns.go).
	uerr := a.userNSManager().Release(pod)
	if err := a.volumes().UnmountPod(pod); err != nil {
		return errors.Join(err, uerr)
	}
	return errors.Join(
		uerr,
		safepath.RemoveAll(a.podDir(pod)),
		safepath.RemoveAll(podspec.LogDir(a.cfg.PodLogDir, pod)),
	)
}

// configDataLookup is the config data store as agent/volume reads it.
type configDataLookup struct{ a *Agent }

func (c configDataLookup) ConfigMap(pod *v1.Pod, name string) (*v1.ConfigMap, error) {
	return c.a.configData().ConfigMap(pod, name)
}

func (c configDataLookup) Secret(pod *v1.Pod, name string) (*v1.Secret, error) {
	return c.a.configData().Secret(pod, name)
}

// downwardFields resolves the downward API for agent/volume's downwardAPI
// files, with the engine's code its env vars use (envvars.go).
type downwardFields struct{ a *Agent }

func (d downwardFields) MetadataFieldValue(pod *v1.Pod, path string) (string, error) {
	return podspec.MetadataFieldValue(pod, path)
}

func (d downwardFields) ResourceFieldValue(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector) (string, error) {
	return podspec.ResourceFieldValue(pod, c, ref, d.a.cfg.Node.Allocatable)
}
