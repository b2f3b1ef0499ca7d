package main

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/minikubelet/minikubelet/agent/cluster"
	"github.com/minikubelet/minikubelet/agent/deviceplugin"
)

// startDevicePlugins serves the kubelet's device plugin Registration API
// on <root-dir>/device-plugins/kubelet.sock (with --root-dir
// /var/lib/kubelet, the path plugins dial), before the agent is built: the
// engine admits pods against the devices and applies the plugins' answers
// to containers (agent/deviceplugin). Stop closes it.
func startDevicePlugins(rootDir string, logger *slog.Logger) (*deviceplugin.Manager, error) {
	m := deviceplugin.New(deviceplugin.Config{Dir: filepath.Join(rootDir, deviceplugin.DirName), Logger: logger})
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("device plugins: %w (check --root-dir; the directory must be root's)", err)
	}
	return m, nil
}

// withDevices adds the device plugins' resources to the Node's status
// config, and their changes as a trigger of its update.
func withDevices(cfg cluster.NodeConfig, m *deviceplugin.Manager) cluster.NodeConfig {
	if m != nil {
		cfg.Devices, cfg.DevicesChanged = m.Resources, m.Changed()
	}
	return cfg
}
