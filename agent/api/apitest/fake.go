// Package apitest holds an in-memory api.Backend for tests of the API
// server and of its clients.
package apitest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/minikubelet/minikubelet/agent/api"
)

var _ api.Backend = (*Backend)(nil)

var (
	podsResource       = schema.GroupResource{Resource: "pods"}
	configMapsResource = schema.GroupResource{Resource: "configmaps"}
	secretsResource    = schema.GroupResource{Resource: "secrets"}
)

// Backend is an in-memory api.Backend. Set its fields before use, or use
// the helpers; every method records its call in Calls.
type Backend struct {
	// mu guards every field below.
	mu sync.Mutex
	// pods by "ns/name".
	pods map[string]*v1.Pod
	// static maps "ns/name" of static pods to their manifest file.
	static map[string]string
	// events, details and logs by "ns/name" (logs: "ns/name/container" plus
	// "/previous" for the previous instance).
	events  map[string][]v1.Event
	details map[string]*api.PodDetails
	logs    map[string]string
	// configMaps and secrets by "ns/name".
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
	// staticConfig marks "ConfigMap ns/name" and "Secret ns/name" as
	// defined in the manifest directory (delete is Forbidden).
	staticConfig map[string]bool
	// calls records "Method ns/name" of each call.
	calls []string
	// hub streams the pod changes to watches (its own lock).
	hub *api.PodWatchHub

	// DeleteDelay, when set, keeps a deleted pod (Terminating) that long
	// before it disappears; zero removes it at once.
	DeleteDelay time.Duration
	// ExecFunc answers Exec; nil echoes the command with exit code 0.
	ExecFunc func(ctx context.Context, ns, name, container string, cmd []string, timeout time.Duration) (*api.ExecResult, error)
	// HealthErr and ReadyErr are returned by Healthz and Readyz.
	HealthErr, ReadyErr error
	// Info is returned by Version.
	Info api.VersionInfo
	// Metrics is written by WriteMetrics.
	Metrics string
}

// New returns an empty Backend.
func New() *Backend {
	return &Backend{
		pods: map[string]*v1.Pod{}, static: map[string]string{}, events: map[string][]v1.Event{},
		details: map[string]*api.PodDetails{}, logs: map[string]string{},
		configMaps: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}, staticConfig: map[string]bool{},
		hub:  api.NewPodWatchHub(0, 0),
		Info: api.VersionInfo{Version: "test", RuntimeName: "fake", RuntimeVersion: "1", RuntimeAPIVersion: "v1", NodeName: "node1"},
	}
}

func key(ns, name string) string { return ns + "/" + name }

func (b *Backend) record(method, ns, name string) {
	b.calls = append(b.calls, method+" "+key(ns, name))
}

// Calls returns the calls made so far.
func (b *Backend) Calls() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.calls)
}

// SetPod adds or replaces a pod (namespace "" means default).
func (b *Backend) SetPod(pod *v1.Pod) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pod = pod.DeepCopy()
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	if old, ok := b.pods[key(pod.Namespace, pod.Name)]; ok && old.UID != pod.UID {
		b.hub.Delete(old)
	}
	b.pods[key(pod.Namespace, pod.Name)] = pod
	b.hub.Update(pod)
}

// RemovePod forgets a pod at once, as when its teardown ends (watches get
// DELETED); false when there is none.
func (b *Backend) RemovePod(ns, name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.pods[key(ns, name)]
	if ok {
		delete(b.pods, key(ns, name))
		b.hub.Delete(p)
	}
	return ok
}

// Hub is the backend's watch hub (for tests that need it directly).
func (b *Backend) Hub() *api.PodWatchHub { return b.hub }

// WatchPods implements api.Backend.
func (b *Backend) WatchPods(opts api.PodWatchOptions) (api.PodWatch, error) {
	b.mu.Lock()
	b.record("WatchPods", opts.Namespace, opts.Name)
	b.mu.Unlock()
	return b.hub.Watch(opts)
}

// PodsResourceVersion implements api.Backend.
func (b *Backend) PodsResourceVersion() string { return b.hub.ResourceVersion() }

// SetStatic marks a pod as coming from the manifest file.
func (b *Backend) SetStatic(ns, name, file string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.static[key(ns, name)] = file
}

// SetEvents sets a pod's events.
func (b *Backend) SetEvents(ns, name string, evs []v1.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events[key(ns, name)] = evs
}

// SetDetails sets a pod's details.
func (b *Backend) SetDetails(ns, name string, d *api.PodDetails) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.details[key(ns, name)] = d
}

// SetLog sets the log file of a container instance.
func (b *Backend) SetLog(ns, name, container string, previous bool, path string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := key(ns, name) + "/" + container
	if previous {
		k += "/previous"
	}
	b.logs[k] = path
}

// ListPods implements api.Backend.
func (b *Backend) ListPods(namespace string) []*v1.Pod {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record("ListPods", namespace, "")
	var out []*v1.Pod
	for _, p := range b.pods {
		if namespace == "" || p.Namespace == namespace {
			out = append(out, p.DeepCopy())
		}
	}
	return out
}

// GetPod implements api.Backend.
func (b *Backend) GetPod(namespace, name string) (*v1.Pod, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record("GetPod", namespace, name)
	return b.get(namespace, name)
}

func (b *Backend) get(namespace, name string) (*v1.Pod, error) {
	p, ok := b.pods[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	return p.DeepCopy(), nil
}

// CreatePod implements api.Backend: AlreadyExists for a known pod,
// Invalid for a pod without containers.
func (b *Backend) CreatePod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record("CreatePod", pod.Namespace, pod.Name)
	k := key(pod.Namespace, pod.Name)
	if _, ok := b.pods[k]; ok {
		return nil, apierrors.NewAlreadyExists(podsResource, pod.Name)
	}
	if len(pod.Spec.Containers) == 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, pod.Name,
			field.ErrorList{field.Required(field.NewPath("spec", "containers"), "a pod needs at least one container")})
	}
	p := pod.DeepCopy()
	p.UID = types.UID("uid-" + p.Name)
	p.CreationTimestamp = metav1.Now()
	p.Status.Phase = v1.PodPending
	b.pods[k] = p
	b.hub.Update(p)
	return p.DeepCopy(), nil
}

// PreparePod implements api.PodPreparer: the pod as CreatePod would
// validate it (Invalid without containers), with the namespace defaulted.
func (b *Backend) PreparePod(pod *v1.Pod) (*v1.Pod, error) {
	if len(pod.Spec.Containers) == 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, pod.Name,
			field.ErrorList{field.Required(field.NewPath("spec", "containers"), "a pod needs at least one container")})
	}
	p := pod.DeepCopy()
	if p.Namespace == "" {
		p.Namespace = metav1.NamespaceDefault
	}
	return p, nil
}

// DeletePod implements api.Backend: Forbidden for static pods.
func (b *Backend) DeletePod(ctx context.Context, namespace, name string, grace *int64) (*v1.Pod, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record("DeletePod", namespace, name)
	k := key(namespace, name)
	if file, ok := b.static[k]; ok {
		return nil, apierrors.NewForbidden(podsResource, name, fmt.Errorf("a static pod: remove %s instead", file))
	}
	p, ok := b.pods[k]
	if !ok {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	now := metav1.Now()
	p.DeletionTimestamp = &now
	p.DeletionGracePeriodSeconds = grace
	out := p.DeepCopy()
	b.hub.Update(p)
	if b.DeleteDelay <= 0 {
		delete(b.pods, k)
		b.hub.Delete(p)
		return out, nil
	}
	time.AfterFunc(b.DeleteDelay, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.pods[k] == p {
			delete(b.pods, k)
			b.hub.Delete(p)
		}
	})
	return out, nil
}

// SetStaticConfig marks a ConfigMap or Secret (kind) as coming from the
// manifest directory, so that deleting it is Forbidden.
func (b *Backend) SetStaticConfig(kind, ns, name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.staticConfig[kind+" "+key(ns, name)] = true
}

// CreateConfigMap implements api.Backend: AlreadyExists for a known one,
// Invalid for one without a name.
func (b *Backend) CreateConfigMap(ctx context.Context, cm *v1.ConfigMap) (*v1.ConfigMap, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record("CreateConfigMap", cm.Namespace, cm.Name)
	if cm.Name == "" {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "",
			field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	k := key(cm.Namespace, cm.Name)
	if _, ok := b.configMaps[k]; ok {
		return nil, apierrors.NewAlreadyExists(configMapsResource, cm.Name)
	}
	b.configMaps[k] = cm.DeepCopy()
	return cm.DeepCopy(), nil
}

// CreateSecret implements api.Backend as CreateConfigMap; stringData is
// merged into data and the type defaults to Opaque.
func (b *Backend) CreateSecret(ctx context.Context, secret *v1.Secret) (*v1.Secret, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record("CreateSecret", secret.Namespace, secret.Name)
	if secret.Name == "" {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "",
			field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	k := key(secret.Namespace, secret.Name)
	if _, ok := b.secrets[k]; ok {
		return nil, apierrors.NewAlreadyExists(secretsResource, secret.Name)
	}
	s := secret.DeepCopy()
	if s.Type == "" {
		s.Type = v1.SecretTypeOpaque
	}
	for k, v := range s.StringData {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
	b.secrets[k] = s
	return s.DeepCopy(), nil
}

// DeleteConfigMap implements api.Backend: Forbidden for static ones.
func (b *Backend) DeleteConfigMap(ctx context.Context, namespace, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record("DeleteConfigMap", namespace, name)
	if b.staticConfig["ConfigMap "+key(namespace, name)] {
		return apierrors.NewForbidden(configMapsResource, name, errors.New("defined in the manifest directory"))
	}
	if _, ok := b.configMaps[key(namespace, name)]; !ok {
		return apierrors.NewNotFound(configMapsResource, name)
	}
	delete(b.configMaps, key(namespace, name))
	return nil
}

// DeleteSecret implements api.Backend: Forbidden for static ones.
func (b *Backend) DeleteSecret(ctx context.Context, namespace, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record("DeleteSecret", namespace, name)
	if b.staticConfig["Secret "+key(namespace, name)] {
		return apierrors.NewForbidden(secretsResource, name, errors.New("defined in the manifest directory"))
	}
	if _, ok := b.secrets[key(namespace, name)]; !ok {
		return apierrors.NewNotFound(secretsResource, name)
	}
	delete(b.secrets, key(namespace, name))
	return nil
}

// ListConfigMaps implements api.Backend.
func (b *Backend) ListConfigMaps(namespace string) []*v1.ConfigMap {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record("ListConfigMaps", namespace, "")
	var out []*v1.ConfigMap
	for _, k := range slices.Sorted(maps.Keys(b.configMaps)) {
		if cm := b.configMaps[k]; namespace == "" || cm.Namespace == namespace {
			out = append(out, cm.DeepCopy())
		}
	}
	return out
}

// ListSecrets implements api.Backend.
func (b *Backend) ListSecrets(namespace string) []*v1.Secret {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record("ListSecrets", namespace, "")
	var out []*v1.Secret
	for _, k := range slices.Sorted(maps.Keys(b.secrets)) {
		if s := b.secrets[k]; namespace == "" || s.Namespace == namespace {
			out = append(out, s.DeepCopy())
		}
	}
	return out
}

// Events implements api.Backend.
func (b *Backend) Events(namespace, name string) ([]v1.Event, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record("Events", namespace, name)
	if _, err := b.get(namespace, name); err != nil {
		return nil, err
	}
	return slices.Clone(b.events[key(namespace, name)]), nil
}

// Details implements api.Backend.
func (b *Backend) Details(namespace, name string) (*api.PodDetails, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record("Details", namespace, name)
	if _, err := b.get(namespace, name); err != nil {
		return nil, err
	}
	if d := b.details[key(namespace, name)]; d != nil {
		c := *d
		return &c, nil
	}
	return &api.PodDetails{Source: "api"}, nil
}

// LogPath implements api.Backend: BadRequest when no log was set, like
// the kubelet for a container without a previous instance.
func (b *Backend) LogPath(namespace, name, container string, previous bool) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record("LogPath", namespace, name)
	if _, err := b.get(namespace, name); err != nil {
		return "", err
	}
	k := key(namespace, name) + "/" + container
	if previous {
		k += "/previous"
	}
	p, ok := b.logs[k]
	if !ok {
		if previous {
			return "", apierrors.NewBadRequest(fmt.Sprintf("previous terminated container %q in pod %q not found", container, name))
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("container %q in pod %q has no log", container, name))
	}
	return p, nil
}

// Exec implements api.Backend.
func (b *Backend) Exec(ctx context.Context, namespace, name, container string, cmd []string, timeout time.Duration) (*api.ExecResult, error) {
	b.mu.Lock()
	b.record("Exec", namespace, name)
	_, err := b.get(namespace, name)
	f := b.ExecFunc
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if f != nil {
		return f(ctx, namespace, name, container, cmd, timeout)
	}
	return &api.ExecResult{Stdout: []byte(strings.Join(cmd, " ") + "\n")}, nil
}

// Healthz implements api.Backend.
func (b *Backend) Healthz() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.HealthErr
}

// Readyz implements api.Backend.
func (b *Backend) Readyz() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ReadyErr
}

// Version implements api.Backend.
func (b *Backend) Version() api.VersionInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Info
}

// WriteMetrics implements api.Backend.
func (b *Backend) WriteMetrics(w io.Writer) error {
	b.mu.Lock()
	m := b.Metrics
	b.mu.Unlock()
	if m == "" {
		return errors.New("no metrics")
	}
	_, err := io.WriteString(w, m)
	return err
}

// UpdateConfigMap implements api.ConfigUpdater: NotFound for an unknown
// one, Forbidden for a static one.
func (b *Backend) UpdateConfigMap(ctx context.Context, cm *v1.ConfigMap) (*v1.ConfigMap, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record("UpdateConfigMap", cm.Namespace, cm.Name)
	k := key(cm.Namespace, cm.Name)
	if b.staticConfig["ConfigMap "+k] {
		return nil, apierrors.NewForbidden(configMapsResource, cm.Name, errors.New("defined in the manifest directory"))
	}
	if _, ok := b.configMaps[k]; !ok {
		return nil, apierrors.NewNotFound(configMapsResource, cm.Name)
	}
	b.configMaps[k] = cm.DeepCopy()
	return cm.DeepCopy(), nil
}

// UpdateSecret implements api.ConfigUpdater as UpdateConfigMap, merging
// stringData into data.
func (b *Backend) UpdateSecret(ctx context.Context, secret *v1.Secret) (*v1.Secret, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.record("UpdateSecret", secret.Namespace, secret.Name)
	k := key(secret.Namespace, secret.Name)
	if _, ok := b.secrets[k]; !ok {
		return nil, apierrors.NewNotFound(secretsResource, secret.Name)
	}
	s := secret.DeepCopy()
	for k, v := range s.StringData {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
	b.secrets[k] = s
	return s.DeepCopy(), nil
}
