package source

// ConfigMaps and Secrets, kept apart by where they come from. The node's
// own (manifest files, the manifest directory, the local API) and those of
// each other source (the cluster's API server) live in separate scopes of
// the store: a pod sees only the scope of its own source (ConfigScope), so
// a node-local object can neither be read by nor shadow a cluster pod's,
// and the other way round.
//
// The engine keeps them in a ConfigStore for env, volumes and pull
// secrets; it lives here, with the desired state whose tmpfs keeps the
// local API's Secrets.
// ConfigMaps are also mirrored under <root>/configdata, so what a node's
// pods see can be inspected on the node. Secrets never touch the root dir:
// they live in memory here, in tmpfs-backed secret volumes of the pods,
// and, for the local API's, in the tmpfs secret dir of PodStore (which
// survives a daemon restart, not a reboot). Cluster Secrets are in memory
// only: the API server hands them back after a restart.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/volume"
)

// notFoundError is the kubelet's text for a missing object (it is
// volume.ErrConfigNotFound for errors.Is, which optional references check):
// `configmap "x" not found` / `secret "x" not found`.
type notFoundError struct {
	kind, name string
}

func (e *notFoundError) Error() string    { return fmt.Sprintf("%s %q not found", e.kind, e.name) }
func (e *notFoundError) Is(t error) bool  { return t == volume.ErrConfigNotFound }
func newNotFound(kind, name string) error { return &notFoundError{kind: kind, name: name} }

// ConfigScopeNode is the scope of the node's own ConfigMaps and Secrets:
// those of manifest files, the manifest directory and the local API.
const ConfigScopeNode = "node"

// ConfigScope is the scope of the ConfigMaps and Secrets pod may see: the
// node's for a pod of a manifest file, the manifest directory or the local
// API (or with no source annotation: a foreground run), else its source's
// own (kubernetes.io/config.source, "cluster" for the API server's pods).
func ConfigScope(pod *v1.Pod) string {
	switch src := pod.Annotations[AnnotationConfigSource]; src {
	case "", SourceFile, SourceAPI:
		return ConfigScopeNode
	default:
		return src
	}
}

// configScopeData is the objects of one scope by namespace/name; the maps
// are replaced whole, their objects never mutated.
type configScopeData struct {
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
}

// ConfigSet is the ConfigMaps and Secrets of one scope.
type ConfigSet struct {
	ConfigMaps []*v1.ConfigMap
	Secrets    []*v1.Secret
}

// ConfigStore holds the ConfigMaps and Secrets by scope and namespace/name.
type ConfigStore struct {
	// dir is <root>/configdata.
	dir string
	// mu guards scopes; a scope's data is replaced whole, never mutated.
	mu     sync.RWMutex
	scopes map[string]configScopeData
	// written are the files this store wrote (guarded by mu): only those
	// are removed when their object goes.
	written map[string]bool
}

// NewConfigStore is an empty store that mirrors its ConfigMaps under dir.
func NewConfigStore(dir string) *ConfigStore {
	return &ConfigStore{dir: dir, scopes: map[string]configScopeData{}}
}

// Dir is where the store mirrors its ConfigMaps (<root>/configdata).
func (s *ConfigStore) Dir() string { return s.dir }

// ConfigMap returns the ConfigMap name of pod's namespace, from the scope
// of pod's source, or a notFoundError.
func (s *ConfigStore) ConfigMap(pod *v1.Pod, name string) (*v1.ConfigMap, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if cm, ok := s.scopes[ConfigScope(pod)].configMaps[pod.Namespace+"/"+name]; ok {
		return cm, nil
	}
	return nil, newNotFound("configmap", name)
}

// Secret returns the Secret name of pod's namespace, from the scope of
// pod's source, or a notFoundError.
func (s *ConfigStore) Secret(pod *v1.Pod, name string) (*v1.Secret, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sec, ok := s.scopes[ConfigScope(pod)].secrets[pod.Namespace+"/"+name]; ok {
		return sec, nil
	}
	return nil, newNotFound("secret", name)
}

// Replace swaps in new sets, by scope (scopes not in sets are dropped),
// and mirrors the ConfigMaps on disk. Writing is best effort: memory is
// what pods use, the files are for people. Secrets are never written.
func (s *ConfigStore) Replace(sets map[string]ConfigSet) error {
	scopes := make(map[string]configScopeData, len(sets))
	for scope, set := range sets {
		d := configScopeData{configMaps: make(map[string]*v1.ConfigMap, len(set.ConfigMaps)), secrets: make(map[string]*v1.Secret, len(set.Secrets))}
		for _, cm := range set.ConfigMaps {
			d.configMaps[cm.Namespace+"/"+cm.Name] = cm.DeepCopy()
		}
		for _, sec := range set.Secrets {
			d.secrets[sec.Namespace+"/"+sec.Name] = sec.DeepCopy()
		}
		scopes[scope] = d
	}
	s.mu.Lock()
	s.scopes = scopes
	s.mu.Unlock()

	// <dir>/configmaps/<ns>/<name>.json for the node's, and
	// <dir>/sources/<source>/configmaps/… for another source's.
	objs := map[string]any{}
	for scope, d := range scopes {
		sub := "configmaps"
		if scope != ConfigScopeNode {
			sub = filepath.Join("sources", scope, "configmaps")
		}
		for key, cm := range d.configMaps {
			objs[filepath.Join(sub, key)] = cm
		}
	}
	return s.mirror(s.dir, 0o644, objs)
}

// RemoveLegacySecrets removes <dir>/secrets, where versions before the
// tmpfs secret dir mirrored every Secret (cluster ones too). Nothing there
// is lost: each of those objects comes back from its source (the manifest
// files, the local API's store, the API server). It reports whether there
// was something to remove.
func (s *ConfigStore) RemoveLegacySecrets() (bool, error) {
	dir := filepath.Join(s.dir, "secrets")
	if _, err := os.Lstat(dir); err != nil {
		return false, nil
	}
	return true, os.RemoveAll(dir)
}

// mirror writes objs (by <sub>/<ns>/<name>) as <dir>/<sub>/<ns>/<name>.json
// with mode and removes the files of objects no longer present.
// Directories are 0700 when the files are private.
func (s *ConfigStore) mirror(dir string, mode os.FileMode, objs map[string]any) error {
	dirMode := os.FileMode(0o755)
	if mode&0o077 == 0 {
		dirMode = 0o700
	}
	var errs []error
	want := map[string]bool{}
	for key, obj := range objs {
		p := filepath.Join(dir, key+".json")
		want[p] = true
		data, err := json.Marshal(obj)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), dirMode); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, volume.WriteConfigFile(p, data, mode))
	}
	// Drop what this store wrote before and is gone now. Files it never
	// wrote are left alone: several foreground `run`s may share a root dir.
	s.mu.Lock()
	if s.written == nil {
		s.written = map[string]bool{}
	}
	for p := range s.written {
		if strings.HasPrefix(p, dir+"/") && !want[p] {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				errs = append(errs, err)
			}
			_ = os.Remove(filepath.Dir(p)) // the namespace dir, once empty
			delete(s.written, p)
		}
	}
	for p := range want {
		s.written[p] = true
	}
	s.mu.Unlock()
	return errors.Join(errs...)
}
