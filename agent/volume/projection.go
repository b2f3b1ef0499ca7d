package volume

// Projected volumes: configMap, secret, downwardAPI and projected volumes
// are files the agent writes into the pod's volume directory, and memory
// emptyDirs are tmpfs mounts. The files are written the way the kubelet's
// AtomicWriter does, so a reader in the container never sees a mix of old
// and new content:
//
//	<volume dir>/
//	  ..2026_11_22_05_00_00.123456789/   the payload, one directory per version
//	    key                              (file, mode from items/defaultMode)
//	  ..data -> ..2026_11_22_05_00_00.123456789
//	  key -> ..data/key                  one symlink per top-level path
//
// A new version is a new timestamped directory; the ..data symlink is
// swapped to it with a rename (atomic), then the old directory goes. The
// payload is rebuilt on every sync of the pod and written only when it
// changed, so labels and annotations (downwardAPI), ConfigMap or Secret
// data and refreshed service account tokens (token_files.go) follow their
// sources. Secret volumes, and projected volumes with a secret or a token,
// live on a tmpfs, as in the kubelet, so secrets never reach the node's
// disk.

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Volume plugin directory names under <podDir>/volumes, the kubelet's.
const (
	pluginEmptyDir  = "kubernetes.io~empty-dir"
	pluginConfigMap = "kubernetes.io~configmap"
	pluginSecret    = "kubernetes.io~secret"
	pluginDownward  = "kubernetes.io~downward-api"
	pluginProjected = "kubernetes.io~projected"
)

// defaultProjectionMode is the API's default file mode (0644).
const defaultProjectionMode = os.FileMode(0o644)

// projectionMu serialises volume setup: containers of one pod start
// concurrently and would otherwise race on the same ..data swap.
var projectionMu sync.Mutex

// MountError is a failed volume setup, reported as the kubelet's
// FailedMount event: `MountVolume.SetUp failed for volume "v" : <err>`.
type MountError struct {
	Volume string
	Err    error
}

func (e *MountError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.Volume, e.Err)
}
func (e *MountError) Unwrap() error { return e.Err }

// pluginDir is the volume plugin directory of an API data volume ("" for
// other volumes).
func pluginDir(vol *v1.Volume) string {
	switch {
	case vol.ConfigMap != nil:
		return pluginConfigMap
	case vol.Secret != nil:
		return pluginSecret
	case vol.DownwardAPI != nil:
		return pluginDownward
	case vol.Projected != nil:
		return pluginProjected
	}
	return ""
}

// isAPIDataVolume reports whether vol is written by the agent from API
// data; the kubelet always mounts those read-only.
func isAPIDataVolume(vol *v1.Volume) bool { return pluginDir(vol) != "" }

// volumeMounterOrHost returns the manager's mounter.
func (a *Manager) volumeMounterOrHost() VolumeMounter {
	if a.mounter == nil {
		return HostMounter{Logger: a.logger}
	}
	return a.mounter
}

// setupDataVolume writes one configMap, secret, downwardAPI or projected
// volume at dir (creating it, with its tmpfs for secrets). It is idempotent
// and rewrites the files only when the payload changed.
func (a *Manager) setupDataVolume(pod *v1.Pod, vol *v1.Volume, dir string) error {
	// The payload is built before taking the lock: a token request may
	// wait on the API server, and must not hold up every other pod's
	// volumes meanwhile.
	payload, err := a.VolumePayload(pod, vol)
	if err != nil {
		return &MountError{Volume: vol.Name, Err: err}
	}
	gid, policy := podFSGroup(pod)
	if gid != nil {
		// The bits the fsGroup ownership change adds (g+r), written at
		// once: an unchanged payload then compares equal to what is on
		// disk and is not rewritten at every sync.
		for k, f := range payload {
			f.Mode |= fsGroupROMask
			payload[k] = f
		}
	}
	projectionMu.Lock()
	defer projectionMu.Unlock()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return &MountError{Volume: vol.Name, Err: err}
	}
	tmpfs := false
	if vol.Secret != nil || (vol.Projected != nil && projectsSecret(vol.Projected)) {
		// The kubelet backs secret and projected volumes with a memory
		// emptyDir.
		if tmpfs, err = a.volumeMounterOrHost().MountTmpfs(dir, EmptyDirMemorySize(pod, nil, a.cfg.Allocatable)); err != nil {
			return &MountError{Volume: vol.Name, Err: err}
		}
	}
	if !tmpfs {
		// The kubelet's emptyDir wrapper leaves the directory 0777 (a
		// tmpfs root keeps its 1777).
		if err := os.Chmod(dir, 0o777); err != nil {
			return &MountError{Volume: vol.Name, Err: err}
		}
	}
	changed, err := (&AtomicWriter{Dir: dir}).Write(payload)
	if err != nil {
		return &MountError{Volume: vol.Name, Err: err}
	}
	if gid != nil && changed {
		// The kubelet's SetVolumeOwnership after each write (fsgroup.go).
		if err := applyFSGroupReadOnly(dir, *gid, policy); err != nil {
			return &MountError{Volume: vol.Name, Err: err}
		}
	}
	return nil
}

// projectsSecret reports whether a projected volume has a secret, a
// service account token or a pod certificate (its private key) source.
func projectsSecret(p *v1.ProjectedVolumeSource) bool {
	for _, s := range p.Sources {
		if s.Secret != nil || s.ServiceAccountToken != nil || s.PodCertificate != nil {
			return true
		}
	}
	return false
}

// RefreshDataVolumes re-projects the API data volumes already set up (the
// kubelet remounts them on every sync): labels, annotations, ConfigMap and
// Secret changes reach running containers. Failures are logged only: the
// containers keep the previous content.
func (a *Manager) RefreshDataVolumes(logger *slog.Logger, pod *v1.Pod) {
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if !isAPIDataVolume(vol) {
			continue
		}
		dir := a.volumeHostPath(pod, vol)
		if _, err := os.Lstat(filepath.Join(dir, DataDirName)); err != nil {
			continue // not set up yet: the next container start does it
		}
		if err := a.setupDataVolume(pod, vol, dir); err != nil {
			logger.Warn("Refresh volume failed", "volume", vol.Name, "err", err)
		}
	}
}

// setupMemoryEmptyDir mounts the tmpfs of an emptyDir with medium Memory
// at dir, which exists (setupVolumes sets its mode). Without root it stays
// a plain directory (unit tests).
func (a *Manager) setupMemoryEmptyDir(pod *v1.Pod, vol *v1.Volume, dir string) error {
	projectionMu.Lock()
	defer projectionMu.Unlock()
	_, err := a.volumeMounterOrHost().MountTmpfs(dir, EmptyDirMemorySize(pod, vol.EmptyDir.SizeLimit, a.cfg.Allocatable))
	return err
}

// UnmountPodVolumes unmounts every mount point under the pod's volume
// directories (tmpfs of secrets and memory emptyDirs) before they are
// removed. Best effort: every volume is tried. The pod's service account
// tokens go with its volumes (the kubelet's DeleteServiceAccountToken).
func (a *Manager) UnmountPodVolumes(pod *v1.Pod) error {
	a.tokens.Forget(pod.UID)
	a.podCerts.Forget(pod.UID)
	m := a.volumeMounterOrHost()
	plugins, err := os.ReadDir(filepath.Join(a.podDir(pod), "volumes"))
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	var errs []error
	for _, p := range plugins {
		base := filepath.Join(a.podDir(pod), "volumes", p.Name())
		vols, _ := os.ReadDir(base)
		for _, v := range vols {
			dir := filepath.Join(base, v.Name())
			if m.IsMountPoint(dir) {
				if err := m.Unmount(dir); err != nil {
					errs = append(errs, fmt.Errorf("unmount volume %s: %w", dir, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// VolumePayload builds the files of an API data volume.
func (a *Manager) VolumePayload(pod *v1.Pod, vol *v1.Volume) (map[string]FileProjection, error) {
	switch {
	case vol.ConfigMap != nil:
		s := vol.ConfigMap
		return a.configMapPayload(pod, s.Name, s.Items, modeOr(s.DefaultMode, defaultProjectionMode), isTrue(s.Optional))
	case vol.Secret != nil:
		s := vol.Secret
		return a.secretPayload(pod, s.SecretName, s.Items, modeOr(s.DefaultMode, defaultProjectionMode), isTrue(s.Optional))
	case vol.DownwardAPI != nil:
		s := vol.DownwardAPI
		return a.downwardAPIPayload(pod, s.Items, modeOr(s.DefaultMode, defaultProjectionMode))
	case vol.Projected != nil:
		return a.projectedPayload(pod, vol.Name, vol.Projected)
	}
	return nil, fmt.Errorf("volume %q: not an API data volume", vol.Name)
}

// modeOr reads an optional mode.
func modeOr(m *int32, def os.FileMode) os.FileMode {
	if m == nil {
		return def
	}
	return os.FileMode(*m) & os.ModePerm
}

// configMapPayload is the kubelet's configmap MakePayload: every key of
// data and binaryData, or only items (key → path, own mode). A missing
// ConfigMap is an empty payload when optional.
func (a *Manager) configMapPayload(pod *v1.Pod, name string, items []v1.KeyToPath, mode os.FileMode, optional bool) (map[string]FileProjection, error) {
	cm, err := a.data.ConfigMap(pod, name)
	if err != nil {
		if errors.Is(err, ErrConfigNotFound) && optional {
			return map[string]FileProjection{}, nil
		}
		return nil, err
	}
	lookup := func(k string) ([]byte, bool) {
		if v, ok := cm.Data[k]; ok {
			return []byte(v), true
		}
		v, ok := cm.BinaryData[k]
		return v, ok
	}
	keys := append(sortedKeys(cm.Data), sortedKeys(cm.BinaryData)...)
	return keyPayload(keys, lookup, items, mode, optional, "configmap references non-existent config key: %s")
}

// secretPayload is configMapPayload for a Secret.
func (a *Manager) secretPayload(pod *v1.Pod, name string, items []v1.KeyToPath, mode os.FileMode, optional bool) (map[string]FileProjection, error) {
	s, err := a.data.Secret(pod, name)
	if err != nil {
		if errors.Is(err, ErrConfigNotFound) && optional {
			return map[string]FileProjection{}, nil
		}
		return nil, err
	}
	lookup := func(k string) ([]byte, bool) {
		v, ok := s.Data[k]
		return v, ok
	}
	return keyPayload(sortedKeys(s.Data), lookup, items, mode, optional, "references non-existent secret key: %s")
}

// keyPayload maps keys to files: all keys, or the items.
func keyPayload(keys []string, lookup func(string) ([]byte, bool), items []v1.KeyToPath, mode os.FileMode, optional bool, missing string) (map[string]FileProjection, error) {
	payload := map[string]FileProjection{}
	if len(items) == 0 {
		for _, k := range keys {
			v, _ := lookup(k)
			payload[k] = FileProjection{Data: v, Mode: mode}
		}
		return payload, nil
	}
	for _, it := range items {
		v, ok := lookup(it.Key)
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf(missing, it.Key)
		}
		payload[it.Path] = FileProjection{Data: v, Mode: modeOr(it.Mode, mode)}
	}
	return payload, nil
}

// downwardAPIPayload writes the pod's metadata fields and its containers'
// resource fields, one file per item.
func (a *Manager) downwardAPIPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, mode os.FileMode) (map[string]FileProjection, error) {
	payload := map[string]FileProjection{}
	var errs []error
	for _, it := range items {
		var (
			val string
			err error
		)
		switch {
		case it.FieldRef != nil:
			val, err = a.fields.MetadataFieldValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			val, err = a.fields.ResourceFieldValue(pod, nil, it.ResourceFieldRef)
		default:
			err = fmt.Errorf("item %q: no fieldRef or resourceFieldRef", it.Path)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		payload[it.Path] = FileProjection{Data: []byte(val), Mode: modeOr(it.Mode, mode)}
	}
	return payload, aggregate(errs)
}

// projectedPayload merges the sources in order (a later source wins a
// path), with the volume's defaultMode for items without a mode.
func (a *Manager) projectedPayload(pod *v1.Pod, volName string, p *v1.ProjectedVolumeSource) (map[string]FileProjection, error) {
	mode := modeOr(p.DefaultMode, defaultProjectionMode)
	payload := map[string]FileProjection{}
	var errs []error
	for i, src := range p.Sources {
		var (
			part map[string]FileProjection
			err  error
		)
		switch {
		case src.ConfigMap != nil:
			part, err = a.configMapPayload(pod, src.ConfigMap.Name, src.ConfigMap.Items, mode, isTrue(src.ConfigMap.Optional))
		case src.Secret != nil:
			part, err = a.secretPayload(pod, src.Secret.Name, src.Secret.Items, mode, isTrue(src.Secret.Optional))
		case src.DownwardAPI != nil:
			part, err = a.downwardAPIPayload(pod, src.DownwardAPI.Items, mode)
		case src.ServiceAccountToken != nil:
			part, err = a.serviceAccountTokenPayload(pod, src.ServiceAccountToken, mode) // token_files.go
		case src.ClusterTrustBundle != nil:
			part, err = a.clusterTrustBundlePayload(pod, src.ClusterTrustBundle, mode) // trustbundle.go
		case src.PodCertificate != nil:
			part, err = a.podCertificatePayload(pod, volName, i, src.PodCertificate, mode) // podcert.go
		default:
			err = fmt.Errorf("sources[%d]: unsupported projection", i)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for k, v := range part {
			payload[k] = v
		}
	}
	return payload, aggregate(errs)
}

// aggregate joins errors as the Kubernetes utilerrors aggregate prints
// them: the error itself when there is one, "[a, b]" when several.
func aggregate(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New("[" + strings.Join(msgs, ", ") + "]")
}

// ReadOnlyDataMounts makes every mount of an API data volume (or of a
// subPath inside one) read-only: the kubelet mounts configMap, secret,
// downwardAPI and projected volumes read-only whatever the volumeMount
// says.
func (a *Manager) ReadOnlyDataMounts(pod *v1.Pod, mounts []*runtimeapi.Mount) {
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if !isAPIDataVolume(vol) {
			continue
		}
		dir := a.volumeHostPath(pod, vol)
		for _, m := range mounts {
			if m.HostPath == dir || strings.HasPrefix(m.HostPath, dir+"/") || a.subPathVolume(pod, m.HostPath) == vol.Name {
				m.Readonly = true
			}
		}
	}
}
