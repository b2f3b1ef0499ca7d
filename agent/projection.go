package agent

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
// data and refreshed service account tokens (token.go) follow their
// sources. Secret volumes, and projected volumes with a secret or a token,
// live on a tmpfs, as in the kubelet, so secrets never reach the node's
// disk.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/minikubelet/minikubelet/agent/manifest"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Names inside a projected volume directory.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
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

// fileProjection is one file of a payload.
type fileProjection struct {
	data []byte
	mode os.FileMode
	// uid, when set, owns the file (the kubelet's FsUser: service account
	// tokens of a pod whose containers all run as one user).
	uid *int64
}

// mountError is a failed volume setup, reported as the kubelet's
// FailedMount event: `MountVolume.SetUp failed for volume "v" : <err>`.
type mountError struct {
	volume string
	err    error
}

func (e *mountError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.volume, e.err)
}
func (e *mountError) Unwrap() error { return e.err }

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

// volumeMounterOrHost returns the agent's mounter.
func (a *Agent) volumeMounterOrHost() volumeMounter {
	if a.mounter == nil {
		return hostMounter{logger: a.logger}
	}
	return a.mounter
}

// setupDataVolume writes one configMap, secret, downwardAPI or projected
// volume at dir (creating it, with its tmpfs for secrets). It is idempotent
// and rewrites the files only when the payload changed.
func (a *Agent) setupDataVolume(pod *v1.Pod, vol *v1.Volume, dir string) error {
	// The payload is built before taking the lock: a token request may
	// wait on the API server, and must not hold up every other pod's
	// volumes meanwhile.
	payload, err := a.volumePayload(pod, vol)
	if err != nil {
		return &mountError{volume: vol.Name, err: err}
	}
	gid, policy := podFSGroup(pod)
	if gid != nil {
		// The bits the fsGroup ownership change adds (g+r), written at
		// once: an unchanged payload then compares equal to what is on
		// disk and is not rewritten at every sync.
		for k, f := range payload {
			f.mode |= fsGroupROMask
			payload[k] = f
		}
	}
	projectionMu.Lock()
	defer projectionMu.Unlock()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return &mountError{volume: vol.Name, err: err}
	}
	tmpfs := false
	if vol.Secret != nil || (vol.Projected != nil && projectsSecret(vol.Projected)) {
		// The kubelet backs secret and projected volumes with a memory
		// emptyDir.
		if tmpfs, err = a.volumeMounterOrHost().mountTmpfs(dir, emptyDirMemorySize(pod, nil, a.cfg.Node.Allocatable)); err != nil {
			return &mountError{volume: vol.Name, err: err}
		}
	}
	if !tmpfs {
		// The kubelet's emptyDir wrapper leaves the directory 0777 (a
		// tmpfs root keeps its 1777).
		if err := os.Chmod(dir, 0o777); err != nil {
			return &mountError{volume: vol.Name, err: err}
		}
	}
	changed, err := (&atomicWriter{dir: dir}).write(payload)
	if err != nil {
		return &mountError{volume: vol.Name, err: err}
	}
	if gid != nil && changed {
		// The kubelet's SetVolumeOwnership after each write (security.go).
		if err := applyFSGroupReadOnly(dir, *gid, policy); err != nil {
			return &mountError{volume: vol.Name, err: err}
		}
	}
	return nil
}

// projectsSecret reports whether a projected volume has a secret or a
// service account token source.
func projectsSecret(p *v1.ProjectedVolumeSource) bool {
	for _, s := range p.Sources {
		if s.Secret != nil || s.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}

// refreshDataVolumes re-projects the API data volumes already set up (the
// kubelet remounts them on every sync): labels, annotations, ConfigMap and
// Secret changes reach running containers. Failures are logged only: the
// containers keep the previous content.
func (a *Agent) refreshDataVolumes(pw *podWorker, pod *v1.Pod) {
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if !isAPIDataVolume(vol) {
			continue
		}
		dir := a.volumeHostPath(pod, vol)
		if _, err := os.Lstat(filepath.Join(dir, dataDirName)); err != nil {
			continue // not set up yet: the next container start does it
		}
		if err := a.setupDataVolume(pod, vol, dir); err != nil {
			pw.logger.Warn("Refresh volume failed", "volume", vol.Name, "err", err)
		}
	}
}

// setupMemoryEmptyDir mounts the tmpfs of an emptyDir with medium Memory
// at dir, which exists (setupVolumes sets its mode). Without root it stays
// a plain directory (unit tests).
func (a *Agent) setupMemoryEmptyDir(pod *v1.Pod, vol *v1.Volume, dir string) error {
	projectionMu.Lock()
	defer projectionMu.Unlock()
	_, err := a.volumeMounterOrHost().mountTmpfs(dir, emptyDirMemorySize(pod, vol.EmptyDir.SizeLimit, a.cfg.Node.Allocatable))
	return err
}

// emptyDirMemorySize is the size of a memory-backed volume, the kubelet's
// rule (SizeMemoryBackedVolumes): the pod's memory limit (the sum of its
// containers' limits, or the largest init container's), the node's
// allocatable memory when no container has one, and sizeLimit when it is
// smaller. 0 means the kernel's default (half the RAM).
func emptyDirMemorySize(pod *v1.Pod, sizeLimit *resource.Quantity, allocatable v1.ResourceList) int64 {
	var limit int64
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
			limit += q.Value()
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if q, ok := c.Resources.Limits[v1.ResourceMemory]; ok && q.Value() > limit {
			limit = q.Value()
		}
	}
	if limit == 0 {
		if q, ok := allocatable[v1.ResourceMemory]; ok {
			limit = q.Value()
		}
	}
	if sizeLimit != nil && sizeLimit.Value() > 0 && (limit == 0 || sizeLimit.Value() < limit) {
		limit = sizeLimit.Value()
	}
	return limit
}

// unmountPodVolumes unmounts every mount point under the pod's volume
// directories (tmpfs of secrets and memory emptyDirs) before they are
// removed. Best effort: every volume is tried. The pod's service account
// tokens go with its volumes (the kubelet's DeleteServiceAccountToken).
func (a *Agent) unmountPodVolumes(pod *v1.Pod) error {
	a.tokens.forget(pod.UID)
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
			if m.isMountPoint(dir) {
				if err := m.unmount(dir); err != nil {
					errs = append(errs, fmt.Errorf("unmount volume %s: %w", dir, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// volumePayload builds the files of an API data volume.
func (a *Agent) volumePayload(pod *v1.Pod, vol *v1.Volume) (map[string]fileProjection, error) {
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
		return a.projectedPayload(pod, vol.Projected)
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
func (a *Agent) configMapPayload(pod *v1.Pod, name string, items []v1.KeyToPath, mode os.FileMode, optional bool) (map[string]fileProjection, error) {
	cm, err := a.configData().configMap(pod, name)
	if err != nil {
		if errors.Is(err, errConfigNotFound) && optional {
			return map[string]fileProjection{}, nil
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
func (a *Agent) secretPayload(pod *v1.Pod, name string, items []v1.KeyToPath, mode os.FileMode, optional bool) (map[string]fileProjection, error) {
	s, err := a.configData().secret(pod, name)
	if err != nil {
		if errors.Is(err, errConfigNotFound) && optional {
			return map[string]fileProjection{}, nil
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
func keyPayload(keys []string, lookup func(string) ([]byte, bool), items []v1.KeyToPath, mode os.FileMode, optional bool, missing string) (map[string]fileProjection, error) {
	payload := map[string]fileProjection{}
	if len(items) == 0 {
		for _, k := range keys {
			v, _ := lookup(k)
			payload[k] = fileProjection{data: v, mode: mode}
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
		payload[it.Path] = fileProjection{data: v, mode: modeOr(it.Mode, mode)}
	}
	return payload, nil
}

// downwardAPIPayload writes the pod's metadata fields and its containers'
// resource fields, one file per item.
func (a *Agent) downwardAPIPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, mode os.FileMode) (map[string]fileProjection, error) {
	payload := map[string]fileProjection{}
	var errs []error
	for _, it := range items {
		var (
			val string
			err error
		)
		switch {
		case it.FieldRef != nil:
			val, err = metadataFieldValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			val, err = a.resourceFieldValue(pod, nil, it.ResourceFieldRef)
		default:
			err = fmt.Errorf("item %q: no fieldRef or resourceFieldRef", it.Path)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		payload[it.Path] = fileProjection{data: []byte(val), mode: modeOr(it.Mode, mode)}
	}
	return payload, aggregate(errs)
}

// projectedPayload merges the sources in order (a later source wins a
// path), with the volume's defaultMode for items without a mode.
func (a *Agent) projectedPayload(pod *v1.Pod, p *v1.ProjectedVolumeSource) (map[string]fileProjection, error) {
	mode := modeOr(p.DefaultMode, defaultProjectionMode)
	payload := map[string]fileProjection{}
	var errs []error
	for i, src := range p.Sources {
		var (
			part map[string]fileProjection
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
			part, err = a.serviceAccountTokenPayload(pod, src.ServiceAccountToken, mode) // token.go
		default:
			// Validation refuses clusterTrustBundle and podCertificate.
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

// atomicWriter writes payloads into one volume directory (see the file
// comment for the layout).
type atomicWriter struct {
	dir string
	// beforeSwap, when set, runs after the new version is written and
	// before ..data points to it (tests).
	beforeSwap func()
	// now names the version directory; nil is time.Now.
	now func() time.Time
}

// write makes dir hold exactly payload. It reports whether anything
// changed; an unchanged payload touches nothing.
func (w *atomicWriter) write(payload map[string]fileProjection) (bool, error) {
	// Step 1: check the paths: relative, clean, without ".." elements or a
	// leading "..", which would escape the directory or clash with ours.
	for p := range payload {
		if err := checkPayloadPath(p); err != nil {
			return false, err
		}
	}

	// Step 2: compare with the current version.
	dataLink := filepath.Join(w.dir, dataDirName)
	oldVersion, err := os.Readlink(dataLink)
	if err != nil && !os.IsNotExist(err) {
		return false, err
	}
	if oldVersion != "" && sameContent(filepath.Join(w.dir, oldVersion), payload) {
		// Recreate user-visible links a previous write may have missed.
		return false, w.linkUserPaths(payload)
	}

	// Step 3: write the new version into a fresh timestamped directory.
	now := time.Now
	if w.now != nil {
		now = w.now
	}
	version, err := os.MkdirTemp(w.dir, now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, err
	}
	if err := os.Chmod(version, 0o755); err != nil {
		_ = os.RemoveAll(version)
		return false, err
	}
	if err := writePayload(version, payload); err != nil {
		_ = os.RemoveAll(version)
		return false, err
	}

	// Step 4: swap ..data to the new version with a rename (atomic).
	if w.beforeSwap != nil {
		w.beforeSwap()
	}
	tmpLink := filepath.Join(w.dir, newDataDirName)
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(version), tmpLink); err != nil {
		_ = os.RemoveAll(version)
		return false, err
	}
	if err := os.Rename(tmpLink, dataLink); err != nil {
		_ = os.Remove(tmpLink)
		_ = os.RemoveAll(version)
		return false, err
	}

	// Step 5: user-visible links, stale ones removed, old version gone.
	if err := w.linkUserPaths(payload); err != nil {
		return true, err
	}
	if oldVersion != "" && oldVersion != filepath.Base(version) {
		if err := os.RemoveAll(filepath.Join(w.dir, oldVersion)); err != nil {
			return true, err
		}
	}
	return true, nil
}

// checkPayloadPath refuses a path that could escape the volume or clash
// with the writer's own names.
func checkPayloadPath(p string) error {
	switch {
	case p == "":
		return errors.New("invalid path: must not be empty")
	case filepath.IsAbs(p):
		return fmt.Errorf("invalid path %q: must be relative", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("invalid path %q: must not start with '..'", p)
	case manifest.HasBacksteps(p):
		return fmt.Errorf("invalid path %q: must not contain '..'", p)
	}
	return nil
}

// writePayload writes every file of payload under dir with its mode.
func writePayload(dir string, payload map[string]fileProjection) error {
	for p, f := range payload {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.data, f.mode); err != nil {
			return err
		}
		// WriteFile's mode passes through the umask.
		if err := os.Chmod(full, f.mode); err != nil {
			return err
		}
		if f.uid != nil {
			if err := os.Lchown(full, int(*f.uid), -1); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameContent reports whether the version directory holds exactly
// payload: the same files with the same bytes and modes.
func sameContent(version string, payload map[string]fileProjection) bool {
	n := 0
	err := filepath.Walk(version, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(version, p)
		want, ok := payload[rel]
		if !ok || fi.Mode().Perm() != want.mode.Perm() {
			return errors.New("differs")
		}
		if st, isUnix := fi.Sys().(*syscall.Stat_t); want.uid != nil && isUnix && int64(st.Uid) != *want.uid {
			return errors.New("differs")
		}
		data, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(data, want.data) {
			return errors.New("differs")
		}
		n++
		return nil
	})
	return err == nil && n == len(payload)
}

// linkUserPaths makes dir/<top> -> ..data/<top> for every top-level name
// of payload and removes the user-visible names no longer in it.
func (w *atomicWriter) linkUserPaths(payload map[string]fileProjection) error {
	tops := map[string]bool{}
	for p := range payload {
		top, _, _ := strings.Cut(filepath.ToSlash(p), "/")
		tops[top] = true
	}
	names := make([]string, 0, len(tops))
	for t := range tops {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		link := filepath.Join(w.dir, t)
		target := filepath.Join(dataDirName, t)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") || tops[e.Name()] {
			continue
		}
		errs = append(errs, os.Remove(filepath.Join(w.dir, e.Name())))
	}
	return errors.Join(errs...)
}

// readOnlyDataMounts makes every mount of an API data volume (or of a
// subPath inside one) read-only: the kubelet mounts configMap, secret,
// downwardAPI and projected volumes read-only whatever the volumeMount
// says.
func (a *Agent) readOnlyDataMounts(pod *v1.Pod, mounts []*runtimeapi.Mount) {
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
