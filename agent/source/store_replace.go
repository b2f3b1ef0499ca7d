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
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// UpdatePod changes the stored pod of pod's namespace/name in place: pod
// keeps the UID of the stored one (pod.UID, which the file now names, so a
// restarted daemon reads the same UID back and adopts the running pod). It
// is defaulted and validated as Add does, then check (if not nil) is given
// the prepared pod and the stored one (both read-only) and may refuse the
// change (the API server's update rule) before anything is written. A pod
// equal to the stored one once prepared is not written (changed is
// false). A refused pod is a *PodInvalidError or check's error (the old
// one stays); a pod the store does not hold wraps ErrPodNotFound, and one
// whose stored UID is not pod.UID (deleted and created again) wraps
// ErrPodReplaced.
func (s *PodStore) UpdatePod(pod *v1.Pod, check func(next, stored *v1.Pod) error) (_ *v1.Pod, changed bool, _ error) {
	if pod.UID == "" {
		return nil, false, fmt.Errorf("update pod %s/%s: the UID of the stored pod is required", pod.Namespace, pod.Name)
	}
	p, data, prepared, err := s.storedForm(pod)
	if err != nil {
		return nil, false, err
	}
	key := p.Namespace + "/" + p.Name
	name := storeFileName(p.Namespace, p.Name)
	s.mu.Lock()
	stored := s.pods[name]
	s.mu.Unlock()
	switch {
	case stored == nil:
		return nil, false, fmt.Errorf("pod %s: %w", key, ErrPodNotFound)
	case stored.UID != pod.UID:
		return nil, false, fmt.Errorf("pod %s: %w", key, ErrPodReplaced)
	}
	// The creation time is the server's, the stored pod's (the file's
	// modification time).
	prepared.CreationTimestamp = stored.CreationTimestamp
	// metadata.generation is the server's: the stored one, plus one when
	// the spec changes (KEP 5067); what the client sent is ignored.
	gen := max(stored.Generation, 1)
	if !apiequality.Semantic.DeepEqual(prepared.Spec, stored.Spec) {
		gen++
	}
	if prepared.Generation != gen {
		pod = pod.DeepCopy()
		pod.Generation = gen
		if p, data, prepared, err = s.storedForm(pod); err != nil {
			return nil, false, err
		}
		prepared.CreationTimestamp = stored.CreationTimestamp
	}
	if check != nil {
		if err := check(prepared, stored); err != nil {
			return nil, false, err
		}
	}
	if apiequality.Semantic.DeepEqual(prepared, stored) {
		return stored.DeepCopy(), false, nil
	}
	tmp, err := s.writeTemp(s.dir, name, data)
	if err != nil {
		return nil, false, fmt.Errorf("update pod %s: %w", key, err)
	}
	// The pod keeps its creation time: the file's modification time
	// carries it across restarts (stampCreation).
	created := stored.CreationTimestamp.Time
	if created.IsZero() {
		created = time.Now()
	}
	prepared.CreationTimestamp = stampCreation(tmp, created)
	// The commit checks the UID again: a delete and create queued
	// meanwhile wins.
	op := &storeOp{dir: s.dir, name: name, tmp: tmp, pod: prepared, what: "pod " + key, notFound: ErrPodNotFound, replace: true,
		sameUID: pod.UID, apply: func() { s.pods[name] = prepared }}
	if err := s.commit(op); err != nil {
		return nil, false, err
	}
	return prepared.DeepCopy(), true, nil
}

// Get returns the stored pod namespace/name (shared: read-only).
func (s *PodStore) Get(namespace, name string) (*v1.Pod, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pods[storeFileName(namespace, name)]
	return p, ok
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
