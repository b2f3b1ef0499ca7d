package volume

import (
	"log/slog"
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
	// AllowPrivileged lets pods mount any hostPath.
	AllowPrivileged bool
}

// Deps are the engine's parts the manager uses, each a narrow interface
// or a type of this package.
type Deps struct {
	// Mounter mounts tmpfs and bind mounts; nil is the host's.
	Mounter VolumeMounter
	// Tokens caches service account tokens; nil without a token source.
	Tokens *TokenCache
	// Logger; nil discards.
	Logger *slog.Logger
}

// Manager prepares and removes a pod's files on the host. It holds no
// state of its own: the engine builds one from its configuration and
// dependencies when it needs it (agent.Agent.volumes), so a change to
// those (tests swap the mounter) is seen at once.
type Manager struct {
	cfg     Config
	mounter VolumeMounter
	tokens  *TokenCache
	logger  *slog.Logger
}

// NewManager builds a volume manager.
func NewManager(cfg Config, deps Deps) *Manager {
	m := &Manager{cfg: cfg, mounter: deps.Mounter, tokens: deps.Tokens, logger: deps.Logger}
	if m.logger == nil {
		m.logger = slog.New(slog.DiscardHandler)
	}
	if m.mounter == nil {
		m.mounter = HostMounter{Logger: m.logger}
	}
	return m
}
