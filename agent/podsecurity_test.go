package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/source"
)

// Only the cluster's API server's pods are left to its Pod Security
// Admission: in cluster mode (a token source), and with the source
// annotation every source sets. A foreground run keeps the manifest's
// annotations and has no token source: its pods are local whatever they
// claim.
func TestAgent_PodSecurityLevelBySource(t *testing.T) {
	clk := testclock.NewFakeClock(time.Now())
	cfg := func() Config {
		return Config{NodeName: "node-1", RootDir: t.TempDir(), PodLogDir: t.TempDir(), ResolvConf: "/nonexistent", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"}}
	}
	clusterNode := New(cfg(), Deps{Tokens: &fakeTokens{clock: clk}})
	lone := New(cfg(), Deps{})
	privileged := func(src string) *v1.Pod {
		p := testPod(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: kube-proxy}\nspec:\n  hostNetwork: true\n  containers:\n  - {name: app, image: img, securityContext: {privileged: true}}\n")
		if src != "" {
			p.Annotations = map[string]string{source.AnnotationConfigSource: src}
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		a     *Agent
		pod   *v1.Pod
		admit bool
	}{
		{"cluster pod in cluster mode", clusterNode, privileged(sourceCluster), true},
		{"local API pod in cluster mode", clusterNode, privileged(source.SourceAPI), false},
		{"static pod in cluster mode", clusterNode, privileged(source.SourceFile), false},
		{"foreground run claiming the cluster source", lone, privileged(sourceCluster), false},
		{"foreground run", lone, privileged(""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg := tc.a.admitSecurity(tc.pod)
			if tc.admit {
				assert.Empty(t, reason, msg)
				return
			}
			assert.Equal(t, node.AdmitReasonPodSecurity, reason)
			assert.Contains(t, msg, "spec.hostNetwork: host namespaces")
			assert.Contains(t, msg, "spec.containers[0].securityContext.privileged: privileged")
		})
	}
	// A restricted node admits it too.
	restrictedCfg := cfg()
	restrictedCfg.PodSecurity = node.PodSecurityRestricted
	restrictedNode := New(restrictedCfg, Deps{Tokens: &fakeTokens{clock: clk}})
	reason, msg := restrictedNode.admitSecurity(privileged(sourceCluster))
	assert.Empty(t, reason, msg)
	_, msg = restrictedNode.admitSecurity(privileged(source.SourceAPI))
	assert.True(t, strings.Contains(msg, `violates PodSecurity "restricted:latest"`), msg)
}
