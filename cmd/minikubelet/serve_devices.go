package main

import (
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
//
// Unlike the kubelet, which does not start without its device manager, a
// failure here (a root dir whose socket path is too long for a unix
// socket, a directory that is not root's) leaves the node without device
// plugins, with a warning: pods keep running and nothing else depends on it.
func startDevicePlugins(rootDir string, logger *slog.Logger) *deviceplugin.Manager {
	m := deviceplugin.New(deviceplugin.Config{Dir: filepath.Join(rootDir, deviceplugin.DirName), Logger: logger})
	if err := m.Start(); err != nil {
		logger.Warn("Device plugins are off: their registration socket could not be served (use a shorter --root-dir, such as /var/lib/kubelet, owned by root)", "err", err)
		return nil
	}
	return m
}

// withDevices adds the device plugins' resources to the Node's status
// config, and their changes as a trigger of its update.
func withDevices(cfg cluster.NodeConfig, m *deviceplugin.Manager) cluster.NodeConfig {
	if m != nil {
		cfg.Devices, cfg.DevicesChanged = m.Resources, m.Changed()
	}
	return cfg
}
