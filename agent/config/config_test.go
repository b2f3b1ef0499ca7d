package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/minikubelet/minikubelet/agent/node"
)

func TestConfig_DefaultPodSecurity(t *testing.T) {
	assert.Equal(t, node.PodSecurityBaseline, Config{}.WithDefaults().PodSecurity, "the default level")
}

// Unset fields get the kubelet's defaults; set ones are kept.
func TestConfig_WithDefaults(t *testing.T) {
	got := Config{}.WithDefaults()
	assert.Equal(t, "/var/lib/minikubelet", got.RootDir)
	assert.Equal(t, "/var/log/pods", got.PodLogDir)
	assert.Equal(t, "/etc/resolv.conf", got.ResolvConf)
	assert.Equal(t, "cluster.local", got.ClusterDomain)
	assert.Equal(t, "containerd", got.RuntimeName)
	assert.Equal(t, 30*time.Second, got.RuntimeTimeout)
	assert.Equal(t, time.Second, got.RelistPeriod)
	assert.Equal(t, time.Minute, got.ResyncPeriod)
	assert.Equal(t, 10*time.Second, got.ErrorBackoff)
	assert.Equal(t, 10*time.Second, got.BackoffInitial)
	assert.Equal(t, 300*time.Second, got.BackoffMax)
	assert.Equal(t, node.ServeAgentID("/var/lib/minikubelet"), got.AgentID)
	assert.NotEmpty(t, got.Network.Name, "the pod network's own defaults")

	set := Config{RootDir: "/srv/mk", ClusterDomain: "example.org", RelistPeriod: 2 * time.Second, PodSecurity: node.PodSecurityRestricted}.WithDefaults()
	assert.Equal(t, "/srv/mk", set.RootDir)
	assert.Equal(t, "example.org", set.ClusterDomain)
	assert.Equal(t, 2*time.Second, set.RelistPeriod)
	assert.Equal(t, node.PodSecurityRestricted, set.PodSecurity)
	assert.Equal(t, node.ServeAgentID("/srv/mk"), set.AgentID, "the agent ID follows the root dir")
}

// TestAdmissionNode: the Node's labels from NodeLabels when it has them
// (the API server's Node object), the configured ones otherwise; the rest
// of Node unchanged.
func TestAdmissionNode(t *testing.T) {
	c := Config{Node: node.Info{Name: "n", Labels: map[string]string{"own": "1"}}}
	if got := c.AdmissionNode(); got.Labels["own"] != "1" || got.Name != "n" {
		t.Fatalf("without NodeLabels: %+v", got)
	}
	c.NodeLabels = func() map[string]string { return nil }
	if got := c.AdmissionNode(); got.Labels["own"] != "1" {
		t.Fatalf("NodeLabels without the Node yet: %+v, want the configured labels", got)
	}
	c.NodeLabels = func() map[string]string { return map[string]string{"own": "1", "node": "n"} }
	if got := c.AdmissionNode(); got.Labels["node"] != "n" || got.Name != "n" {
		t.Fatalf("with the Node's labels: %+v", got)
	}
	if c.Node.Labels["node"] != "" {
		t.Fatal("AdmissionNode changed Node")
	}
}
