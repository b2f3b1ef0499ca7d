package agent

// The pods accepted through the API, as manifests in the daemon's root dir
// (house style rule 5: manifest files are the only persisted desired state).
// One file per pod, <dir>/<namespace>_<name>.yaml, holding the pod as
// submitted; reading it back yields the same defaulted pod with the same UID,
// so a restarted daemon adopts the running pod instead of recreating it.
//
// The ConfigMaps and Secrets accepted through the API live beside them, in
// <dir>/configmaps/<namespace>_<name>.yaml and <dir>/secrets/…, written the
// same way (atomically, mode 0600 in 0700 directories), defaulted as the
// API server would (a Secret's stringData already merged into data).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

var (
	// ErrPodExists classifies PodStore.Add of a namespace/name (or an
	// explicit UID) the store already holds.
	ErrPodExists = errors.New("pod already exists")
	// ErrPodNotFound classifies PodStore.Delete of a pod the store does not
	// hold.
	ErrPodNotFound = errors.New("pod not found")
	// ErrConfigDataExists classifies PodStore.AddConfigMap or AddSecret of
	// a namespace/name the store already holds.
	ErrConfigDataExists = errors.New("already exists")
	// ErrConfigDataNotFound classifies PodStore.DeleteConfigMap or
	// DeleteSecret of an object the store does not hold.
	ErrConfigDataNotFound = errors.New("not found")
)

// Subdirectories of the store directory for the API's ConfigMaps and
// Secrets. List skips directories, so they never read as pods.
const (
	storeConfigMapDir = "configmaps"
	storeSecretDir    = "secrets"
)

// storeTempPrefix starts the name of a file being written; a crash can leave
// one behind, which NewPodStore removes and List ignores (a dotfile).
const storeTempPrefix = ".tmp-"

// PodInvalidError is PodStore.Add's refusal of a pod by defaulting and
// validation. Errs are the field errors, ready for a 422
// (apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, Name, Errs)). It
// unwraps to a *ManifestError with the same problems, so errors.As with a
// *ManifestError and errors.Is(err, ErrInvalidManifest) also hold.
type PodInvalidError struct {
	Namespace, Name string
	// Errs lists every problem, as the validation produced it.
	Errs field.ErrorList
}

// Error lists the problems, one per line, like a ManifestError.
func (e *PodInvalidError) Error() string { return e.Unwrap().Error() }

// Unwrap returns the problems as a *ManifestError.
func (e *PodInvalidError) Unwrap() error {
	me := &ManifestError{Source: apiPodSource(e.Namespace, e.Name)}
	for _, fe := range e.Errs {
		me.Problems = append(me.Problems, fe.Error())
	}
	return me
}

// PodStore keeps the pods accepted through the API as manifest files in one
// directory.
type PodStore struct {
	dir      string
	nodeName string

	// mu serialises Add and Delete: the existence check and the write are
	// one step, and updates are sent in the order of the changes.
	mu sync.Mutex
	// updates has capacity 1 and holds the newest unread set: a sender
	// (holding mu) drains the stale one first, so Add and Delete never block.
	updates chan SourceUpdate

	// decoded caches List's work per file: a file whose bytes did not
	// change is not decoded and validated again (every Add and Delete
	// lists the whole store). Guarded by decodedMu.
	decodedMu sync.Mutex
	decoded   map[string]decodedPod
}

// decodedPod is one stored file as List last prepared it.
type decodedPod struct {
	data []byte
	pod  *v1.Pod
}

// NewPodStore opens (creating it 0700) the store directory dir, e.g.
// <root>/api-pods, and removes temporary files a crash left behind.
func NewPodStore(dir, nodeName string) (*PodStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create pod store: %w", err)
	}
	// The subdirectories of ConfigMaps and Secrets appear with their first
	// object (addConfig).
	for _, d := range []string{dir, filepath.Join(dir, storeConfigMapDir), filepath.Join(dir, storeSecretDir)} {
		entries, err := os.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) && d != dir {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read pod store: %w", err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), storeTempPrefix) {
				_ = os.Remove(filepath.Join(d, e.Name())) // a leftover; List ignores it anyway
			}
		}
	}
	return &PodStore{dir: dir, nodeName: nodeName, updates: make(chan SourceUpdate, 1)}, nil
}

// Add validates pod, as submitted through the API, and persists it. The
// status is dropped (it is never read from a manifest) and an empty namespace
// becomes "default". The pod gets PrepareManifest's defaults and validation
// with the source "api:<namespace>/<name>", so its UID is deterministic and
// List returns the same one. The file <dir>/<namespace>_<name>.yaml is
// written atomically (temp file, fsync, rename, fsync of the directory).
//
// Add returns the defaulted pod, annotated kubernetes.io/config.source=api.
// A refused pod is a *PodInvalidError; a namespace/name (or explicit UID)
// already stored is an error wrapping ErrPodExists.
func (s *PodStore) Add(pod *v1.Pod) (*v1.Pod, error) {
	p := pod.DeepCopy()
	p.Status = v1.PodStatus{}
	p.APIVersion, p.Kind = "v1", "Pod"
	if p.Namespace == "" {
		p.Namespace = v1.NamespaceDefault
	}
	data, err := encodeStoredPod(p)
	if err != nil {
		// The YAML encoder fails on some of what validation refuses (a
		// label key of more than 1 024 bytes): report that instead.
		if _, verr := s.preparePod(p.DeepCopy()); verr != nil {
			return nil, verr
		}
		return nil, err
	}
	// Prepared from the bytes written, exactly as List will read them back.
	prepared, err := s.prepare(data)
	if err != nil {
		return nil, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	key := p.Namespace + "/" + p.Name
	name := storeFileName(p.Namespace, p.Name)
	if _, err := os.Lstat(filepath.Join(s.dir, name)); err == nil {
		return nil, fmt.Errorf("pod %s: %w", key, ErrPodExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("add pod %s: %w", key, err)
	}
	if pod.UID != "" {
		// An explicit UID could collide; derived ones include the name.
		stored, _ := s.List()
		for _, sp := range stored {
			if sp.UID == prepared.UID {
				return nil, fmt.Errorf("pod %s: uid %s is already used by pod %s/%s: %w", key, prepared.UID, sp.Namespace, sp.Name, ErrPodExists)
			}
		}
	}
	if err := writeFileAtomic(s.dir, name, data); err != nil {
		return nil, fmt.Errorf("add pod %s: %w", key, err)
	}
	s.notifyLocked()
	return prepared, nil
}

// Delete removes the pod's file; a pod the store does not hold is an error
// wrapping ErrPodNotFound.
func (s *PodStore) Delete(namespace, name string) error {
	key := namespace + "/" + name
	// Names that no valid pod has could also be paths: refuse them first.
	if len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return fmt.Errorf("pod %s: %w", key, ErrPodNotFound)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.Remove(filepath.Join(s.dir, storeFileName(namespace, name))); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("pod %s: %w", key, ErrPodNotFound)
		}
		return fmt.Errorf("delete pod %s: %w", key, err)
	}
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("delete pod %s: %w", key, err)
	}
	s.notifyLocked()
	return nil
}

// List reads every stored pod back, defaulted and validated as Add did (same
// UIDs), annotated kubernetes.io/config.source=api, in file name order. A
// file that can no longer be used (edited by hand, or refused by a newer
// minikubelet) is a FileError and never hides the others.
func (s *PodStore) List() ([]*v1.Pod, []FileError) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, []FileError{{Path: s.dir, Err: fmt.Errorf("read pod store: %w", err)}}
	}
	var (
		pods []*v1.Pod
		errs []FileError
	)
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".yaml") || e.IsDir() {
			continue
		}
		path := filepath.Join(s.dir, name)
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted while we listed
		}
		if err != nil {
			errs = append(errs, FileError{Path: path, Err: fmt.Errorf("read stored pod: %w", err)})
			continue
		}
		p, err := s.prepareCached(name, data)
		if err != nil {
			errs = append(errs, FileError{Path: path, Err: err})
			continue
		}
		if want := storeFileName(p.Namespace, p.Name); name != want {
			errs = append(errs, FileError{Path: path, Err: fmt.Errorf("stored pod %s/%s belongs in %s: %w", p.Namespace, p.Name, want, ErrInvalidManifest)})
			continue
		}
		pods = append(pods, p)
	}
	s.pruneDecoded(entries)
	return pods, errs
}

// pruneDecoded drops the cached decodings of files that are gone: the
// store's directory listing is the whole set of names there can be.
func (s *PodStore) pruneDecoded(entries []os.DirEntry) {
	present := make(map[string]bool, len(entries))
	for _, e := range entries {
		present[e.Name()] = true
	}
	s.decodedMu.Lock()
	defer s.decodedMu.Unlock()
	for name := range s.decoded {
		if !present[name] {
			delete(s.decoded, name)
		}
	}
}

// prepareCached is prepare, reusing the result for unchanged bytes; the
// caller gets its own copy. Failures are not cached.
func (s *PodStore) prepareCached(name string, data []byte) (*v1.Pod, error) {
	s.decodedMu.Lock()
	c, ok := s.decoded[name]
	s.decodedMu.Unlock()
	if ok && bytes.Equal(c.data, data) {
		return c.pod.DeepCopy(), nil
	}
	p, err := s.prepare(data)
	if err != nil {
		return nil, err
	}
	s.decodedMu.Lock()
	if s.decoded == nil {
		s.decoded = map[string]decodedPod{} // List prunes the entries of deleted files
	}
	s.decoded[name] = decodedPod{data: data, pod: p.DeepCopy()}
	s.decodedMu.Unlock()
	return p, nil
}

// Updates delivers a SourceUpdate{Source: "api"} with the complete set (pods,
// ConfigMaps and Secrets) after every Add and Delete of any of them. The channel has capacity 1 and the newest set wins:
// an unread set is replaced, never queued behind.
func (s *PodStore) Updates() <-chan SourceUpdate { return s.updates }

// Snapshot returns the complete set the store holds, as Updates delivers it.
func (s *PodStore) Snapshot() SourceUpdate {
	u := SourceUpdate{Source: sourceAPI}
	u.Pods, u.Errors = s.List()
	var errs []FileError
	u.ConfigMaps, u.Secrets, errs = s.ListConfigData()
	u.Errors = append(u.Errors, errs...)
	return u
}

// notifyLocked replaces the unread update with the current set; s.mu is
// held, so no other sender can fill the slot between drain and send.
func (s *PodStore) notifyLocked() {
	u := s.Snapshot()
	select {
	case <-s.updates:
	default:
	}
	s.updates <- u
}

// prepare decodes one stored pod and applies PrepareManifest's defaults and
// checks, with the source "api:<namespace>/<name>". Refusals of the pod are a
// *PodInvalidError.
func (s *PodStore) prepare(data []byte) (*v1.Pod, error) {
	pods, err := DecodeManifest(data, "api")
	if err != nil {
		return nil, err
	}
	if len(pods) != 1 {
		return nil, &ManifestError{Source: "api", Problems: []string{fmt.Sprintf("a stored pod file must hold one Pod, not %d", len(pods))}}
	}
	return s.preparePod(pods[0])
}

// preparePod is prepare for a decoded pod.
func (s *PodStore) preparePod(p *v1.Pod) (*v1.Pod, error) {
	if p.Namespace == "" {
		p.Namespace = v1.NamespaceDefault
	}
	SetPodDefaults(p, apiPodSource(p.Namespace, p.Name), s.nodeName)
	errs := ValidatePod(p)
	// As PrepareManifest: a pod bound to another node is not ours to run.
	if s.nodeName != "" && p.Spec.NodeName != s.nodeName {
		errs = append(errs, field.Invalid(field.NewPath("spec", "nodeName"), p.Spec.NodeName,
			fmt.Sprintf("must be empty or the name of this node (%q)", s.nodeName)))
	}
	if len(errs) > 0 {
		return nil, &PodInvalidError{Namespace: p.Namespace, Name: p.Name, Errs: errs}
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[annotationConfigSource] = sourceAPI
	return p, nil
}

// apiPodSource is the source an API pod's UID is derived from.
func apiPodSource(namespace, name string) string { return "api:" + namespace + "/" + name }

// storeFileName is the file of a pod. A namespace (DNS label) and a name (DNS
// subdomain) never contain "_" or "/", so the name is unambiguous and stays
// in the directory.
func storeFileName(namespace, name string) string { return namespace + "_" + name + ".yaml" }

// encodeStoredPod renders a pod as the YAML manifest a user would write:
// without the empty status and the null creationTimestamp that marshalling a
// v1.Pod adds.
func encodeStoredPod(p *v1.Pod) ([]byte, error) {
	j, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode pod: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber() // keep int64 fields exact
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("encode pod: %w", err)
	}
	delete(obj, "status")
	if meta, ok := obj["metadata"].(map[string]any); ok && meta["creationTimestamp"] == nil {
		delete(meta, "creationTimestamp")
	}
	if j, err = json.Marshal(obj); err != nil {
		return nil, fmt.Errorf("encode pod: %w", err)
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return nil, fmt.Errorf("encode pod: %w", err)
	}
	return y, nil
}

// writeFileAtomic writes dir/name so that, even across a crash or power
// loss, it either holds data completely or keeps its old state: a temp file
// in the same directory is written and fsynced, renamed over name, and the
// directory is fsynced so the rename itself is durable. The file is 0600.
func writeFileAtomic(dir, name string, data []byte) (retErr error) {
	f, err := os.CreateTemp(dir, storeTempPrefix+name+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if retErr != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir fsyncs a directory, making renames and removals in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
