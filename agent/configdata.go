package agent

import (
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/agent/source"
	"github.com/minikubelet/minikubelet/agent/volume"
)

// The ConfigMaps and Secrets the pods see, by scope (their source), are
// kept in agent/source's ConfigStore (source.ConfigScope).

// errConfigNotFound classifies a missing ConfigMap or Secret; optional
// references check it with errors.Is.
var errConfigNotFound = volume.ErrConfigNotFound

// configScopeNode is the scope of the node's own ConfigMaps and Secrets.
const configScopeNode = source.ConfigScopeNode

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
// (source.ConfigScope): the node's, and each other pod source's.
func (a *Agent) setConfigScopes(sets map[string]configSet) {
	if err := a.configData().Replace(sets); err != nil {
		a.logger.Warn("Write config data failed", "dir", a.configData().Dir(), "err", err)
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
func (a *Agent) configData() *source.ConfigStore {
	a.configOnce.Do(func() {
		if a.config == nil {
			a.config = source.NewConfigStore(filepath.Join(a.cfg.RootDir, "configdata"))
		}
		if removed, err := a.config.RemoveLegacySecrets(); err != nil {
			a.logger.Warn("Removing the Secrets an older version kept under the root dir failed", "dir", a.config.Dir(), "err", err)
		} else if removed {
			a.logger.Info("Removed the Secrets an older version kept under the root dir; they come back from their sources, in memory", "dir", filepath.Join(a.config.Dir(), "secrets"))
		}
	})
	return a.config
}
