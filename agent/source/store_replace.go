package source

// This file updates what the local API stored: kubectl apply of a changed
// pod, ConfigMap or Secret. The new file is written and fsynced, then
// renamed over the old one (one commit, as an add), so the store never
// holds neither.

import (
	"fmt"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// ReplacePod replaces the stored pod of pod's namespace/name with pod,
// defaulted and validated as Add does. pod.UID must be empty: the new
// pod's UID is derived from its content, so a changed pod is a new pod
// (the daemon stops the old one and starts this one, as for an edited
// manifest file). A refused pod is a *PodInvalidError (the old one stays);
// a pod the store does not hold wraps ErrPodNotFound.
func (s *PodStore) ReplacePod(pod *v1.Pod) (*v1.Pod, error) {
	if pod.UID != "" {
		return nil, fmt.Errorf("replace pod %s/%s: the replacement's UID is derived, not given (%s)", pod.Namespace, pod.Name, pod.UID)
	}
	p, data, prepared, err := s.storedForm(pod)
	if err != nil {
		return nil, err
	}
	key := p.Namespace + "/" + p.Name
	name := storeFileName(p.Namespace, p.Name)
	tmp, err := s.writeTemp(s.dir, name, data)
	if err != nil {
		return nil, fmt.Errorf("replace pod %s: %w", key, err)
	}
	// The same pod (same UID) keeps its creation time; a new one (a
	// changed pod gets a new UID) is created now.
	created := time.Now()
	s.mu.Lock()
	if old := s.pods[name]; old != nil && old.UID == prepared.UID && !old.CreationTimestamp.IsZero() {
		created = old.CreationTimestamp.Time
	}
	s.mu.Unlock()
	prepared.CreationTimestamp = stampCreation(tmp, created)
	op := &storeOp{dir: s.dir, name: name, tmp: tmp, pod: prepared, what: "pod " + key, notFound: ErrPodNotFound, replace: true,
		apply: func() { s.pods[name] = prepared }}
	if err := s.commit(op); err != nil {
		return nil, err
	}
	return prepared.DeepCopy(), nil
}

// Prepare returns pod as Add or ReplacePod would store it (defaulted,
// validated, its UID derived) without storing anything: server-side apply
// compares it with the stored pod. A refused pod is a *PodInvalidError.
func (s *PodStore) Prepare(pod *v1.Pod) (*v1.Pod, error) {
	p := *pod // shallow: storedForm copies deeply
	p.UID = ""
	_, _, prepared, err := s.storedForm(&p)
	return prepared, err
}

// ReplaceConfigMap replaces a stored ConfigMap, defaulted and validated as
// AddConfigMap does; one the store does not hold wraps
// ErrConfigDataNotFound.
// The creation time stays the original's.
func (s *PodStore) ReplaceConfigMap(cm *v1.ConfigMap) (*v1.ConfigMap, error) {
	c := cm.DeepCopy()
	c.APIVersion, c.Kind = "v1", "ConfigMap"
	c.CreationTimestamp = metav1.Time{} // the server's field, kept below
	manifest.SetConfigMapDefaults(c)
	if errs := manifest.ValidateConfigMap(c); len(errs) > 0 {
		return nil, &ConfigInvalidError{Kind: configMapKind.kind, Namespace: c.Namespace, Name: c.Name, Errs: errs}
	}
	s.mu.Lock()
	var created metav1.Time
	if old := s.cms[storeFileName(c.Namespace, c.Name)]; old != nil {
		created = old.CreationTimestamp
	}
	s.mu.Unlock()
	stored := c.DeepCopy()
	stored.CreationTimestamp = created
	if err := s.replaceConfig(configMapKind, c.Namespace, c.Name, c, created, func(file string) { s.cms[file] = stored }); err != nil {
		return nil, err
	}
	c.CreationTimestamp = created
	return c, nil
}

// ReplaceSecret is ReplaceConfigMap for a Secret.
func (s *PodStore) ReplaceSecret(secret *v1.Secret) (*v1.Secret, error) {
	c := secret.DeepCopy()
	c.APIVersion, c.Kind = "v1", "Secret"
	c.CreationTimestamp = metav1.Time{}
	manifest.SetSecretDefaults(c)
	if errs := manifest.ValidateSecret(c); len(errs) > 0 {
		return nil, &ConfigInvalidError{Kind: secretKind.kind, Namespace: c.Namespace, Name: c.Name, Errs: errs}
	}
	s.mu.Lock()
	var created metav1.Time
	if old := s.secrets[storeFileName(c.Namespace, c.Name)]; old != nil {
		created = old.CreationTimestamp
	}
	s.mu.Unlock()
	stored := c.DeepCopy()
	stored.CreationTimestamp = created
	if err := s.replaceConfig(secretKind, c.Namespace, c.Name, c, created, func(file string) { s.secrets[file] = stored }); err != nil {
		return nil, err
	}
	c.CreationTimestamp = created
	return c, nil
}

// replaceConfig is addConfig for a file that must exist; the new file
// carries the creation time as its modification time (readConfigDir).
func (s *PodStore) replaceConfig(k configKind, namespace, name string, obj any, created metav1.Time, set func(file string)) error {
	key := namespace + "/" + name
	data, err := encodeStoredConfig(obj)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", k.kind, key, err)
	}
	dir := s.kindDir(k)
	file := storeFileName(namespace, name)
	if err := s.ensureSubdir(dir); err != nil {
		return fmt.Errorf("replace %s %s: %w", k.kind, key, err)
	}
	tmp, err := s.writeTemp(dir, file, data)
	if err != nil {
		return fmt.Errorf("replace %s %s: %w", k.kind, key, err)
	}
	if !created.IsZero() {
		_ = os.Chtimes(tmp, created.Time, created.Time) // else the update's time stands in
	}
	return s.commit(&storeOp{dir: dir, name: file, tmp: tmp, what: k.kind + " " + key, notFound: ErrConfigDataNotFound, replace: true,
		apply: func() { set(file) }})
}
