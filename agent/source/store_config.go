package source

// The ConfigMaps and Secrets of the API source (PodStore): the same files
// and guarantees as its pods. ConfigMaps are in the subdirectory
// configmaps/ of the store directory; Secrets in the daemon's secret dir,
// a tmpfs outside the root dir (NewPodStoreWithSecretDir): they survive a
// restart of the daemon, not of the machine, and never reach the disk.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	strictjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// ConfigInvalidError is PodStore.AddConfigMap's or AddSecret's refusal of
// an object by validation. Errs are the field errors, ready for a 422
// (apierrors.NewInvalid(schema.GroupKind{Kind: Kind}, Name, Errs)). It
// unwraps to a *ManifestError, so errors.Is(err, ErrInvalidManifest) holds.
type ConfigInvalidError struct {
	// Kind is "ConfigMap" or "Secret".
	Kind            string
	Namespace, Name string
	// Errs lists every problem, as the validation produced it.
	Errs field.ErrorList
}

// Error lists the problems, one per line, like a ManifestError.
func (e *ConfigInvalidError) Error() string { return e.Unwrap().Error() }

// Unwrap returns the problems as a *ManifestError.
func (e *ConfigInvalidError) Unwrap() error {
	me := &manifest.ManifestError{Source: "api:" + e.Kind + " " + e.Namespace + "/" + e.Name}
	for _, fe := range e.Errs {
		me.Problems = append(me.Problems, fe.Error())
	}
	return me
}

// configKind describes one of the two kinds the store keeps beside pods.
type configKind struct {
	kind string // "ConfigMap" or "Secret"
	sub  string // subdirectory of the store
}

var (
	configMapKind = configKind{"ConfigMap", storeConfigMapDir}
	secretKind    = configKind{"Secret", storeSecretDir}
)

// AddConfigMap defaults and validates a ConfigMap submitted through the API
// (ValidateConfigMap, as for a manifest file) and persists it atomically.
// It returns the stored object. A refused one is a *ConfigInvalidError; a
// namespace/name already stored wraps ErrConfigDataExists.
func (s *PodStore) AddConfigMap(cm *v1.ConfigMap) (*v1.ConfigMap, error) {
	c := cm.DeepCopy()
	c.APIVersion, c.Kind = "v1", "ConfigMap"
	manifest.SetConfigMapDefaults(c)
	if errs := manifest.ValidateConfigMap(c); len(errs) > 0 {
		return nil, &ConfigInvalidError{Kind: configMapKind.kind, Namespace: c.Namespace, Name: c.Name, Errs: errs}
	}
	// The creation time is the stored file's (readConfigDir), not in it.
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	stored := c.DeepCopy() // the caller's c stays its own
	stored.CreationTimestamp = now
	if err := s.addConfig(configMapKind, c.Namespace, c.Name, c, func(file string) { s.cms[file] = stored }); err != nil {
		return nil, err
	}
	c.CreationTimestamp = now
	return c, nil
}

// AddSecret is AddConfigMap for a Secret (ValidateSecret; type Opaque by
// default, stringData merged into data). The file is mode 0600.
func (s *PodStore) AddSecret(secret *v1.Secret) (*v1.Secret, error) {
	c := secret.DeepCopy()
	c.APIVersion, c.Kind = "v1", "Secret"
	manifest.SetSecretDefaults(c)
	if errs := manifest.ValidateSecret(c); len(errs) > 0 {
		return nil, &ConfigInvalidError{Kind: secretKind.kind, Namespace: c.Namespace, Name: c.Name, Errs: errs}
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	stored := c.DeepCopy() // the caller's c stays its own
	stored.CreationTimestamp = now
	if err := s.addConfig(secretKind, c.Namespace, c.Name, c, func(file string) { s.secrets[file] = stored }); err != nil {
		return nil, err
	}
	c.CreationTimestamp = now
	return c, nil
}

// DeleteConfigMap removes a stored ConfigMap; one the store does not hold
// wraps ErrConfigDataNotFound.
func (s *PodStore) DeleteConfigMap(namespace, name string) error {
	return s.deleteConfig(configMapKind, namespace, name, func(file string) { delete(s.cms, file) })
}

// DeleteSecret removes a stored Secret; one the store does not hold wraps
// ErrConfigDataNotFound.
func (s *PodStore) DeleteSecret(namespace, name string) error {
	return s.deleteConfig(secretKind, namespace, name, func(file string) { delete(s.secrets, file) })
}

// ListConfigData returns the stored ConfigMaps and Secrets, validated as
// when they were added, in file name order, and the files of either kind
// that could not be used when the store opened. They are shared:
// read-only.
func (s *PodStore) ListConfigData() ([]*v1.ConfigMap, []*v1.Secret, []FileError) {
	u, _ := s.SnapshotGen()
	s.mu.Lock()
	defer s.mu.Unlock()
	return u.ConfigMaps, u.Secrets, sortedErrors(s.badConfig)
}

// loadConfigData reads every stored ConfigMap and Secret, validated as
// when they were added, with the files that cannot be used.
func (s *PodStore) loadConfigData() (map[string]*v1.ConfigMap, map[string]*v1.Secret, []FileError) {
	cms, errs := readConfigDir(s, configMapKind, func(data []byte) (*v1.ConfigMap, string, string, error) {
		cm := &v1.ConfigMap{}
		if err := decodeStoredConfig(data, cm); err != nil {
			return nil, "", "", err
		}
		manifest.SetConfigMapDefaults(cm)
		if errs := manifest.ValidateConfigMap(cm); len(errs) > 0 {
			return nil, "", "", &ConfigInvalidError{Kind: configMapKind.kind, Namespace: cm.Namespace, Name: cm.Name, Errs: errs}
		}
		return cm, cm.Namespace, cm.Name, nil
	})
	secrets, secErrs := readConfigDir(s, secretKind, func(data []byte) (*v1.Secret, string, string, error) {
		sec := &v1.Secret{}
		if err := decodeStoredConfig(data, sec); err != nil {
			return nil, "", "", err
		}
		manifest.SetSecretDefaults(sec)
		if errs := manifest.ValidateSecret(sec); len(errs) > 0 {
			return nil, "", "", &ConfigInvalidError{Kind: secretKind.kind, Namespace: sec.Namespace, Name: sec.Name, Errs: errs}
		}
		return sec, sec.Namespace, sec.Name, nil
	})
	return cms, secrets, append(errs, secErrs...)
}

// addConfig durably writes obj as <dir>/<sub>/<namespace>_<name>.yaml
// unless that file exists; set records it in memory once committed.
func (s *PodStore) addConfig(k configKind, namespace, name string, obj any, set func(file string)) error {
	key := namespace + "/" + name
	data, err := encodeStoredConfig(obj)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", k.kind, key, err)
	}
	dir := s.kindDir(k)
	file := storeFileName(namespace, name)
	if err := s.ensureSubdir(dir); err != nil {
		return fmt.Errorf("add %s %s: %w", k.kind, key, err)
	}
	tmp, err := s.writeTemp(dir, file, data)
	if err != nil {
		return fmt.Errorf("add %s %s: %w", k.kind, key, err)
	}
	return s.commit(&storeOp{dir: dir, name: file, tmp: tmp, what: k.kind + " " + key, exists: ErrConfigDataExists,
		apply: func() { set(file) }})
}

// kindDir is the directory of the stored objects of kind k.
func (s *PodStore) kindDir(k configKind) string {
	if k == secretKind && s.secretDir != "" {
		return s.secretDir
	}
	return filepath.Join(s.dir, k.sub)
}

// ensureSubdir creates a directory of the store (0700) that does not
// exist yet, durably: its parent is fsynced after.
func (s *PodStore) ensureSubdir(dir string) error {
	if _, err := os.Stat(dir); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return s.syncDir(filepath.Dir(dir))
}

// deleteConfig durably removes the file of one ConfigMap or Secret; unset
// drops it from memory once committed.
func (s *PodStore) deleteConfig(k configKind, namespace, name string, unset func(file string)) error {
	key := namespace + "/" + name
	// Names that no valid object has could also be paths: refuse them first.
	if len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return fmt.Errorf("%s %s: %w", k.kind, key, ErrConfigDataNotFound)
	}
	file := storeFileName(namespace, name)
	return s.commit(&storeOp{dir: s.kindDir(k), name: file, what: k.kind + " " + key, notFound: ErrConfigDataNotFound,
		apply: func() { unset(file) }})
}

// readConfigDir loads each stored file of kind k with load, which returns
// the object with the namespace and name it holds; they must match the
// file name. The objects are keyed by file name.
func readConfigDir[T any](s *PodStore, k configKind, load func([]byte) (*T, string, string, error)) (map[string]*T, []FileError) {
	objs := map[string]*T{}
	dir := s.kindDir(k)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return objs, nil // a store from before ConfigMaps and Secrets
	}
	if err != nil {
		return objs, []FileError{{Path: dir, Err: fmt.Errorf("read %s store: %w", k.kind, err)}}
	}
	var errs []FileError
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".yaml") || e.IsDir() {
			continue
		}
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, FileError{Path: path, Err: fmt.Errorf("read stored %s: %w", k.kind, err)})
			continue
		}
		obj, ns, objName, err := load(data)
		if err != nil {
			errs = append(errs, FileError{Path: path, Err: err})
			continue
		}
		if want := storeFileName(ns, objName); name != want {
			errs = append(errs, FileError{Path: path, Err: fmt.Errorf("stored %s %s/%s belongs in %s: %w", k.kind, ns, objName, want, manifest.ErrInvalidManifest)})
			continue
		}
		// The creation time is the file's: written when the object was
		// created, and kept by updates (source_store_replace.go).
		if m, ok := any(obj).(metav1.Object); ok {
			if fi, err := os.Stat(path); err == nil {
				m.SetCreationTimestamp(metav1.NewTime(fi.ModTime().Truncate(time.Second)))
			}
		}
		objs[name] = obj
	}
	return objs, errs
}

// encodeStoredConfig renders a ConfigMap or Secret as YAML, without the
// null creationTimestamp marshalling adds.
func encodeStoredConfig(obj any) ([]byte, error) {
	y, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return []byte(strings.Replace(string(y), "  creationTimestamp: null\n", "", 1)), nil
}

// decodeStoredConfig strictly decodes a stored ConfigMap or Secret.
func decodeStoredConfig(data []byte, obj any) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return &manifest.ManifestError{Problems: []string{err.Error()}}
	}
	strictErrs, err := strictjson.UnmarshalStrict(j, obj)
	if err != nil {
		return &manifest.ManifestError{Problems: []string{manifest.JsonErrorText(err)}}
	}
	if problems := manifest.StrictProblems(strictErrs, nil); len(problems) > 0 {
		return &manifest.ManifestError{Problems: problems}
	}
	return nil
}
