package agent

// ConfigMaps and Secrets, kept apart by where they come from. The node's
// own (manifest files, the manifest directory, the local API) and those of
// each other source (the cluster's API server) live in separate scopes of
// the store: a pod sees only the scope of its own source (configScope), so
// a node-local object can neither be read by nor shadow a cluster pod's,
// and the other way round.
//
// The agent keeps them in memory for env, volumes and pull secrets.
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
	"reflect"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	strictjson "sigs.k8s.io/json"

	"github.com/minikubelet/minikubelet/agent/decodeerr"
)

// errConfigNotFound classifies a missing ConfigMap or Secret; optional
// references check it with errors.Is.
var errConfigNotFound = errors.New("not found")

// notFoundError is the kubelet's text for a missing object:
// `configmap "x" not found` / `secret "x" not found`.
type notFoundError struct {
	kind, name string
}

func (e *notFoundError) Error() string    { return fmt.Sprintf("%s %q not found", e.kind, e.name) }
func (e *notFoundError) Is(t error) bool  { return t == errConfigNotFound }
func newNotFound(kind, name string) error { return &notFoundError{kind: kind, name: name} }

// configScopeNode is the scope of the node's own ConfigMaps and Secrets:
// those of manifest files, the manifest directory and the local API.
const configScopeNode = "node"

// configScope is the scope of the ConfigMaps and Secrets pod may see: the
// node's for a pod of a manifest file, the manifest directory or the local
// API (or with no source annotation: a foreground run), else its source's
// own (kubernetes.io/config.source, "cluster" for the API server's pods).
func configScope(pod *v1.Pod) string {
	switch src := pod.Annotations[annotationConfigSource]; src {
	case "", sourceFile, sourceAPI:
		return configScopeNode
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

// configStore holds the ConfigMaps and Secrets by scope and namespace/name.
type configStore struct {
	// dir is <root>/configdata.
	dir string
	// mu guards scopes; a scope's data is replaced whole, never mutated.
	mu     sync.RWMutex
	scopes map[string]configScopeData
	// written are the files this store wrote (guarded by mu): only those
	// are removed when their object goes.
	written map[string]bool
}

func newConfigStore(dir string) *configStore {
	return &configStore{dir: dir, scopes: map[string]configScopeData{}}
}

// configMap returns the ConfigMap name of pod's namespace, from the scope
// of pod's source, or a notFoundError.
func (s *configStore) configMap(pod *v1.Pod, name string) (*v1.ConfigMap, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if cm, ok := s.scopes[configScope(pod)].configMaps[pod.Namespace+"/"+name]; ok {
		return cm, nil
	}
	return nil, newNotFound("configmap", name)
}

// secret returns the Secret name of pod's namespace, from the scope of
// pod's source, or a notFoundError.
func (s *configStore) secret(pod *v1.Pod, name string) (*v1.Secret, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sec, ok := s.scopes[configScope(pod)].secrets[pod.Namespace+"/"+name]; ok {
		return sec, nil
	}
	return nil, newNotFound("secret", name)
}

// replace swaps in new sets, by scope (scopes not in sets are dropped),
// and mirrors the ConfigMaps on disk. Writing is best effort: memory is
// what pods use, the files are for people. Secrets are never written.
func (s *configStore) replace(sets map[string]configSet) error {
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
		if scope != configScopeNode {
			sub = filepath.Join("sources", scope, "configmaps")
		}
		for key, cm := range d.configMaps {
			objs[filepath.Join(sub, key)] = cm
		}
	}
	return s.mirror(s.dir, 0o644, objs)
}

// removeLegacySecrets removes <dir>/secrets, where versions before the
// tmpfs secret dir mirrored every Secret (cluster ones too). Nothing there
// is lost: each of those objects comes back from its source (the manifest
// files, the local API's store, the API server). It reports whether there
// was something to remove.
func (s *configStore) removeLegacySecrets() (bool, error) {
	dir := filepath.Join(s.dir, "secrets")
	if _, err := os.Lstat(dir); err != nil {
		return false, nil
	}
	return true, os.RemoveAll(dir)
}

// mirror writes objs (by <sub>/<ns>/<name>) as <dir>/<sub>/<ns>/<name>.json
// with mode and removes the files of objects no longer present.
// Directories are 0700 when the files are private.
func (s *configStore) mirror(dir string, mode os.FileMode, objs map[string]any) error {
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
		errs = append(errs, writeConfigFile(p, data, mode))
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

// writeConfigFile writes a file through a temporary file and a rename, so
// a reader never sees half of it.
func writeConfigFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// SetConfigData replaces the node's ConfigMaps and Secrets (the whole set,
// as prepared by PrepareObjects), for an agent whose pods all come from
// the node (a foreground run); the daemon hands over every source's scope
// with setConfigScopes. Call it before SetPods with the pods of the same
// input, so that their first start sees the data. Running pods are synced
// again: their configMap, secret and projected volumes follow the new data
// (env is read at container start only, as in the kubelet).
func (a *Agent) SetConfigData(cms []*v1.ConfigMap, secrets []*v1.Secret) {
	a.setConfigScopes(map[string]configSet{configScopeNode: {ConfigMaps: cms, Secrets: secrets}})
}

// setConfigScopes replaces the ConfigMaps and Secrets of every scope
// (configScope): the node's, and each other pod source's.
func (a *Agent) setConfigScopes(sets map[string]configSet) {
	if err := a.configData().replace(sets); err != nil {
		a.logger.Warn("Write config data failed", "dir", a.configData().dir, "err", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, w := range a.workers {
		w.trigger()
	}
}

// configData returns the agent's store, creating it on first use (an Agent
// built as a struct literal in tests has none). The first use also removes
// the Secrets older versions mirrored under the root dir.
func (a *Agent) configData() *configStore {
	a.configOnce.Do(func() {
		if a.config == nil {
			a.config = newConfigStore(filepath.Join(a.cfg.RootDir, "configdata"))
		}
		if removed, err := a.config.removeLegacySecrets(); err != nil {
			a.logger.Warn("Removing the Secrets an older version kept under the root dir failed", "dir", a.config.dir, "err", err)
		} else if removed {
			a.logger.Info("Removed the Secrets an older version kept under the root dir; they come back from their sources, in memory", "dir", filepath.Join(a.config.dir, "secrets"))
		}
	})
	return a.config
}

// setConfigMapDefaults applies the API server's defaults: namespace.
func setConfigMapDefaults(cm *v1.ConfigMap) {
	if cm.Namespace == "" {
		cm.Namespace = v1.NamespaceDefault
	}
}

// setSecretDefaults applies the API server's defaults: namespace, type
// Opaque, and stringData merged into data (stringData wins).
func setSecretDefaults(s *v1.Secret) {
	if s.Namespace == "" {
		s.Namespace = v1.NamespaceDefault
	}
	if s.Type == "" {
		s.Type = v1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
}

// maxConfigSize is the API server's limit on the data of one ConfigMap or
// Secret (1 MiB).
const maxConfigSize = v1.MaxSecretSize

// validateConfigMeta checks the name and namespace of a ConfigMap or
// Secret, and refuses the metadata an API server would set.
func validateConfigMeta(name, namespace string, meta *field.Path, extra field.ErrorList) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(meta.Child("name"), "name or generateName is required"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(meta.Child("name"), name, msg))
		}
	}
	for _, msg := range validation.IsDNS1123Label(namespace) {
		errs = append(errs, field.Invalid(meta.Child("namespace"), namespace, msg))
	}
	return append(errs, extra...)
}

// refusedConfigMeta refuses metadata only an API server sets.
func refusedConfigMeta(m *v1.ConfigMap, s *v1.Secret) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	om := func() (gen string, rv string, ts bool) {
		if m != nil {
			return m.GenerateName, m.ResourceVersion, !m.CreationTimestamp.IsZero()
		}
		return s.GenerateName, s.ResourceVersion, !s.CreationTimestamp.IsZero()
	}
	gen, rv, ts := om()
	if gen != "" {
		errs = append(errs, field.Forbidden(meta.Child("generateName"), reasonNever+": there is no API server to generate names"))
	}
	if rv != "" {
		errs = append(errs, field.Forbidden(meta.Child("resourceVersion"), reasonNever+": set by the API server"))
	}
	if ts {
		errs = append(errs, field.Forbidden(meta.Child("creationTimestamp"), reasonNever+": set by the API server"))
	}
	return errs
}

// validateConfigKeys checks the keys of a data map with the API's
// configmap key rules and adds their sizes to *total.
func validateConfigKeys[V string | []byte](data map[string]V, p *field.Path, total *int) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(data) {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(p.Key(k), k, msg))
		}
		*total += len(data[k])
	}
	return errs
}

// ValidateConfigMap checks a defaulted ConfigMap as the API server would:
// name, namespace, keys of data and binaryData (disjoint), total size.
func ValidateConfigMap(cm *v1.ConfigMap) field.ErrorList {
	errs := validateConfigMeta(cm.Name, cm.Namespace, field.NewPath("metadata"), refusedConfigMeta(cm, nil))
	total := 0
	errs = append(errs, validateConfigKeys(cm.Data, field.NewPath("data"), &total)...)
	errs = append(errs, validateConfigKeys(cm.BinaryData, field.NewPath("binaryData"), &total)...)
	for _, k := range sortedKeys(cm.BinaryData) {
		if _, dup := cm.Data[k]; dup {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(k), k, "duplicate of key present in data"))
		}
	}
	if total > maxConfigSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxConfigSize))
	}
	return errs
}

// ValidateSecret checks a defaulted Secret as the API server would: name,
// namespace, keys, total size and the keys its type requires.
func ValidateSecret(s *v1.Secret) field.ErrorList {
	errs := validateConfigMeta(s.Name, s.Namespace, field.NewPath("metadata"), refusedConfigMeta(nil, s))
	dataPath := field.NewPath("data")
	total := 0
	errs = append(errs, validateConfigKeys(s.Data, dataPath, &total)...)
	if total > maxConfigSize {
		errs = append(errs, field.TooLong(dataPath, "", maxConfigSize))
	}
	require := func(key string) {
		if _, ok := s.Data[key]; !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
		}
	}
	switch s.Type {
	case v1.SecretTypeServiceAccountToken:
		errs = append(errs, field.Forbidden(field.NewPath("type"), reasonNever+": service account tokens are issued by an API server"))
	case v1.SecretTypeDockercfg, v1.SecretTypeDockerConfigJson:
		key := v1.DockerConfigKey
		if s.Type == v1.SecretTypeDockerConfigJson {
			key = v1.DockerConfigJsonKey
		}
		if v, ok := s.Data[key]; !ok {
			require(key)
		} else if !json.Valid(v) {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", "must be valid JSON"))
		}
	case v1.SecretTypeBasicAuth:
		_, u := s.Data[v1.BasicAuthUsernameKey]
		_, p := s.Data[v1.BasicAuthPasswordKey]
		if !u && !p {
			errs = append(errs, field.Required(dataPath.Key(v1.BasicAuthUsernameKey), ""))
			errs = append(errs, field.Required(dataPath.Key(v1.BasicAuthPasswordKey), ""))
		}
	case v1.SecretTypeSSHAuth:
		require(v1.SSHAuthPrivateKey)
	case v1.SecretTypeTLS:
		require(v1.TLSCertKey)
		require(v1.TLSPrivateKeyKey)
	}
	return errs
}

// decodeConfigObject strictly decodes one v1 ConfigMap or Secret document.
func decodeConfigObject(data []byte, kind string, itemPath *field.Path) ([]manifestPod, []string) {
	var (
		obj any
		mp  = manifestPod{itemPath: itemPath}
	)
	if kind == "Secret" {
		mp.secret = &v1.Secret{}
		obj = mp.secret
	} else {
		mp.cm = &v1.ConfigMap{}
		obj = mp.cm
	}
	strictErrs, err := strictjson.UnmarshalStrict(data, obj)
	if err != nil {
		return nil, []string{decodeerr.Problem(data, reflect.TypeOf(obj), itemPath, err)}
	}
	if problems := strictProblems(strictErrs, itemPath); len(problems) > 0 {
		return nil, problems
	}
	return []manifestPod{mp}, nil
}

// prepareConfigObjects defaults and validates the ConfigMaps and Secrets
// of mps and returns problems with theirs appended.
func prepareConfigObjects(mps []manifestPod, problems []string) []string {
	seen := map[string]string{} // kind/namespace/name → where first defined
	for _, mp := range mps {
		var (
			errs           field.ErrorList
			kind, ns, name string
		)
		switch {
		case mp.cm != nil:
			setConfigMapDefaults(mp.cm)
			errs = ValidateConfigMap(mp.cm)
			kind, ns, name = "ConfigMap", mp.cm.Namespace, mp.cm.Name
		case mp.secret != nil:
			setSecretDefaults(mp.secret)
			errs = ValidateSecret(mp.secret)
			kind, ns, name = "Secret", mp.secret.Namespace, mp.secret.Name
		default:
			continue
		}
		where := mp.where
		if mp.itemPath != nil {
			where = strings.TrimSpace(where + " " + mp.itemPath.String())
		}
		if name != "" {
			key := kind + "/" + ns + "/" + name
			if first, dup := seen[key]; dup {
				e := field.Duplicate(field.NewPath("metadata", "name"), ns+"/"+name)
				e.Detail = fmt.Sprintf("%s also defined in %s", kind, first)
				errs = append(errs, e)
			} else {
				seen[key] = where
			}
		}
		for _, e := range errs {
			problems = append(problems, mp.prefix()+prefixField(e, mp.itemPath).Error())
		}
	}
	return problems
}
