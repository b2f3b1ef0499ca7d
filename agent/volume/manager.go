package volume

import (
	"errors"
	"log/slog"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// Config is what the volume manager needs of the node's configuration
// (the engine's agent.Config, copied).
type Config struct {
	// RootDir holds the pods' directories (<RootDir>/pods/<uid>) and the
	// agent's own state.
	RootDir string
	// PodLogDir is where the pods' logs live.
	PodLogDir string
	// ProtectedPaths are host paths a pod's hostPath may not reach
	// without AllowPrivileged (the API socket's directory).
	ProtectedPaths []string
	// AllowPrivileged lets pods mount any hostPath (--pod-security=privileged).
	AllowPrivileged bool
	// Allocatable is the node's allocatable resources: the size of a
	// memory volume without a limit.
	Allocatable v1.ResourceList
}

// ConfigData looks up the ConfigMaps and Secrets a pod may read (its
// source's scope). A missing one is an error that Is ErrConfigNotFound.
type ConfigData interface {
	ConfigMap(pod *v1.Pod, name string) (*v1.ConfigMap, error)
	Secret(pod *v1.Pod, name string) (*v1.Secret, error)
}

// ErrConfigNotFound classifies a missing ConfigMap or Secret; optional
// references then yield nothing instead of failing.
var ErrConfigNotFound = errors.New("not found")

// DownwardAPI resolves the downward API's fields of a pod: the engine's,
// shared with its environment variables.
type DownwardAPI interface {
	// MetadataFieldValue is a fieldRef's value (metadata.*).
	MetadataFieldValue(pod *v1.Pod, path string) (string, error)
	// ResourceFieldValue is a resourceFieldRef's value for c, or for
	// the container the reference names.
	ResourceFieldValue(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector) (string, error)
}

// Deps are the engine's parts the manager uses, each a narrow interface
// or a type of this package.
type Deps struct {
	// Data is the ConfigMaps and Secrets of configMap, secret and
	// projected volumes.
	Data ConfigData
	// Fields resolves the downward API.
	Fields DownwardAPI
	// Mounter mounts tmpfs and bind mounts; nil is the host's.
	Mounter VolumeMounter
	// Tokens caches service account tokens; nil without a token source.
	Tokens *TokenCache
	// TrustBundles reads the cluster's ClusterTrustBundles (cluster
	// mode); nil refuses every pod that projects one (trustbundle.go).
	TrustBundles ClusterTrustBundles
	// PodCerts is the pod certificate manager (cluster mode); nil refuses
	// every pod that projects one (podcert.go).
	PodCerts *PodCertificates
	// Logger; nil discards.
	Logger *slog.Logger
}

// Manager prepares and removes a pod's files on the host: volume setup
// and teardown (volumes.go), the payload of each API data volume
// (projection.go), service account token files (token_files.go), the
// hostPath guard (hostpath_guard.go). It holds no state of its own (the
// lock of the ..data swaps is the package's): the engine builds one from
// its configuration and dependencies when it needs it
// (agent.Agent.volumes), so a change to those (tests swap the mounter) is
// seen at once.
type Manager struct {
	cfg     Config
	data    ConfigData
	fields  DownwardAPI
	mounter VolumeMounter
	tokens  *TokenCache
	// trustBundles reads ClusterTrustBundles; nil outside cluster mode.
	trustBundles ClusterTrustBundles
	// podCerts keeps the pods' certificates; nil outside cluster mode.
	podCerts *PodCertificates
	logger   *slog.Logger
}

// NewManager builds a volume manager.
func NewManager(cfg Config, deps Deps) *Manager {
	m := &Manager{cfg: cfg, data: deps.Data, fields: deps.Fields, mounter: deps.Mounter, tokens: deps.Tokens,
		trustBundles: deps.TrustBundles, podCerts: deps.PodCerts, logger: deps.Logger}
	if m.logger == nil {
		m.logger = slog.New(slog.DiscardHandler)
	}
	return m
}

// isTrue reads an optional *bool.
func isTrue(b *bool) bool { return b != nil && *b }

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
