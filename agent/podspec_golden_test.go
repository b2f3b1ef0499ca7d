package agent

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/node"
	"github.com/minikubelet/minikubelet/agent/podspec"
)

// updateGolden rewrites testdata/podspec-golden.json from the current code:
// go test ./agent/ -run TestPodSpecGolden -update-golden.
var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/podspec-golden.json")

// goldenPods cover what the engine translates into CRI configs: ports,
// hostnames and FQDNs, host namespaces, pod and container security
// contexts, sysctls, DNS policies, QoS (resources, sidecars, critical
// priority), the environment (envFrom, valueFrom, service-less expansion
// into command and args), mounts and propagation, image volumes, hooks and
// annotations.
var goldenPods = []string{`
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, uid: 11111111-2222-3333-4444-555555555555, labels: {app: web}, annotations: {note: hi}}
spec:
  hostname: front
  subdomain: api
  terminationGracePeriodSeconds: 7
  volumes:
  - {name: scratch, emptyDir: {}}
  - {name: host, hostPath: {path: /srv/data}}
  - {name: model, image: {reference: "reg/model:v2"}}
  containers:
  - name: web
    image: reg/web:1
    command: [/app, "$(MODE)", "$$(MODE)"]
    args: [--port, "$(PORT)", "--user=$(USER)"]
    workingDir: /work
    ports:
    - {containerPort: 8080, hostPort: 18080, name: http}
    - {containerPort: 53, hostPort: 5353, protocol: UDP, hostIP: 127.0.0.1}
    - {containerPort: 9090}
    envFrom:
    - configMapRef: {name: settings}
    - {prefix: S_, secretRef: {name: creds}}
    - configMapRef: {name: missing, optional: true}
    env:
    - {name: PORT, value: "8080"}
    - {name: URL, value: "http://$(NAME):$(PORT)/$(UNSET)"}
    - {name: NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: HOSTIP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}
    - {name: CPU_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: MEM_REQ, valueFrom: {resourceFieldRef: {resource: requests.memory, divisor: 1Mi}}}
    - {name: LEVEL, valueFrom: {configMapKeyRef: {name: settings, key: level}}}
    - {name: PASS, valueFrom: {secretKeyRef: {name: creds, key: password}}}
    - {name: OPT, valueFrom: {secretKeyRef: {name: creds, key: nope, optional: true}}}
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: host, mountPath: /data, readOnly: true, mountPropagation: HostToContainer}
    - {name: model, mountPath: /model}
    - {name: model, mountPath: /weights, readOnly: false, subPathExpr: "$(MODE)/w"}
    resources:
      requests: {cpu: 250m, memory: 64Mi}
      limits: {memory: 128Mi}
    lifecycle:
      preStop: {exec: {command: [/bin/sh, -c, "sleep 1"]}}
`, `
apiVersion: v1
kind: Pod
metadata: {name: hostns, namespace: default, uid: 22222222-2222-3333-4444-555555555555}
spec:
  hostNetwork: true
  hostPID: true
  hostIPC: true
  priorityClassName: system-node-critical
  containers:
  - name: agent
    image: reg/agent:1
    securityContext: {privileged: true}
    resources:
      requests: {cpu: "1", memory: 1Gi}
      limits: {cpu: "1", memory: 1Gi}
`, `
apiVersion: v1
kind: Pod
metadata: {name: secure, namespace: default, uid: 33333333-2222-3333-4444-555555555555}
spec:
  shareProcessNamespace: true
  hostnameOverride: custom-host
  dnsPolicy: None
  dnsConfig:
    nameservers: [1.1.1.1, 8.8.8.8]
    searches: [a.example, b.example]
    options: [{name: ndots, value: "2"}, {name: edns0}]
  securityContext:
    runAsUser: 1000
    runAsGroup: 2000
    runAsNonRoot: true
    fsGroup: 3000
    supplementalGroups: [4000, 5000]
    seLinuxOptions: {level: "s0:c1,c2"}
    seccompProfile: {type: RuntimeDefault}
    sysctls:
    - {name: net.ipv4.tcp_syncookies, value: "1"}
    - {name: kernel/shm_rmid_forced, value: "1"}
  initContainers:
  - name: setup
    image: reg/setup:1
    securityContext:
      runAsUser: 0
      runAsNonRoot: false
      capabilities: {add: [NET_ADMIN], drop: [ALL]}
  - name: sidecar
    image: reg/side:1
    restartPolicy: Always
    resources:
      requests: {memory: 32Mi}
  containers:
  - name: app
    image: reg/app:1
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      seccompProfile: {type: Localhost, localhostProfile: profiles/app.json}
      seLinuxOptions: {user: u, role: r, type: t}
    resources:
      requests: {cpu: 100m, memory: 256Mi}
      limits: {cpu: 200m, memory: 512Mi}
  - name: plain
    image: reg/plain:1
    stdin: true
    stdinOnce: true
    tty: true
    securityContext:
      seccompProfile: {type: Unconfined}
`, `
apiVersion: v1
kind: Pod
metadata: {name: fqdn, namespace: team, uid: 44444444-2222-3333-4444-555555555555}
spec:
  hostname: db
  subdomain: backend
  setHostnameAsFQDN: true
  dnsPolicy: ClusterFirstWithHostNet
  dnsConfig:
    searches: [extra.example]
    options: [{name: ndots, value: "1"}]
  terminationGracePeriodSeconds: 0
  containers:
  - name: db
    image: reg/db:1
    terminationMessagePath: /dev/custom-log
    terminationMessagePolicy: FallbackToLogsOnError
    resources:
      limits: {cpu: 1500m}
`, `
apiVersion: v1
kind: Pod
metadata: {name: hostnet-default, namespace: team, uid: 55555555-2222-3333-4444-555555555555}
spec:
  hostNetwork: true
  dnsPolicy: Default
  containers:
  - name: c
    image: reg/c:1
`}

// TestPodSpecGolden pins the CRI configs the engine builds for goldenPods
// (sandbox config, and every container's config before the image's user
// and the /etc/hosts and termination-log mounts are added) byte for byte,
// so that moving the translation out of the engine (issue #30) cannot
// change them.
func TestPodSpecGolden(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	require.NoError(t, os.WriteFile(resolv, []byte("nameserver 10.0.0.2\nsearch corp.example example\noptions ndots:2 edns0\n"), 0o644))
	a := New(Config{
		NodeName: "node-1", RootDir: t.TempDir(), PodLogDir: "/var/log/pods", ResolvConf: resolv,
		ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", AgentID: "golden",
		SeccompProfileRoot: "/var/lib/seccomp", Network: testNetwork(t), HostIPs: []string{"192.0.2.1"},
		Node: node.Info{
			Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")},
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3"), v1.ResourceMemory: resource.MustParse("7Gi")},
		},
	}, Deps{})
	a.SetConfigData([]*v1.ConfigMap{{
		ObjectMeta: metaNS("shop", "settings"),
		Data:       map[string]string{"MODE": "fast", "level": "3", "bad=key": "x", "USER": "cm-user"},
	}}, []*v1.Secret{{
		ObjectMeta: metaNS("shop", "creds"),
		Data:       map[string][]byte{"password": []byte("s3cret"), "user": []byte("admin")},
	}})
	// protojson with every field, so that a zero enum (RuntimeDefault, POD)
	// cannot vanish unnoticed; compacted so the indentation is stable.
	pj := func(m proto.Message) json.RawMessage {
		if !m.ProtoReflect().IsValid() {
			return json.RawMessage("null")
		}
		b, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(m)
		require.NoError(t, err)
		var buf bytes.Buffer
		require.NoError(t, json.Compact(&buf, b))
		return buf.Bytes()
	}
	type containerOut struct {
		Type   string
		Config json.RawMessage
		Err    string `json:",omitempty"`
	}
	type podOut struct {
		Pod        string
		Sandbox    json.RawMessage
		Containers []containerOut
	}
	var got []podOut
	for _, text := range goldenPods {
		pod := testPod(t, text)
		sb, err := a.generatePodSandboxConfig(pod, 1)
		require.NoError(t, err, pod.Name)
		out := podOut{Pod: pod.Name, Sandbox: pj(sb)}
		vols := map[string]string{}
		images := map[string]*runtimeapi.ImageSpec{}
		for _, v := range pod.Spec.Volumes {
			if v.Image != nil {
				// What the pull of an image volume returns: the image ID.
				images[v.Name] = podspec.ImageVolumeSpec(v.Image.Reference, "sha256:"+v.Name)
				continue
			}
			vols[v.Name] = "/volumes/" + v.Name // outside the pod's directory: no rshared mount
		}
		add := func(list []v1.Container, ctype string) {
			for i := range list {
				cfg, err := a.generateContainerConfig(pod, &list[i], ctype, 2, "sha256:"+list[i].Name, "10.88.0.9", vols, images)
				co := containerOut{Type: ctype, Config: pj(cfg)}
				if err != nil {
					co.Err = err.Error()
				}
				out.Containers = append(out.Containers, co)
			}
		}
		add(pod.Spec.InitContainers, podspec.ContainerTypeInit)
		add(pod.Spec.Containers, podspec.ContainerTypeRegular)
		got = append(got, out)
	}
	b, err := json.MarshalIndent(got, "", "  ")
	require.NoError(t, err)
	path := filepath.Join("testdata", "podspec-golden.json")
	if *updateGolden {
		require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(append(b, '\n')), "the CRI configs changed; if on purpose, rerun with -update-golden and review the diff")
}
