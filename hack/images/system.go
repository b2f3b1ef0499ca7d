package main

// The images of the cluster add-ons (hack/cluster/addons), built locally for
// hack/cluster/addons.sh: `go run ./hack/images --system DIR
// --system-iptables TREE --kube-version v1.37.2 --coredns-version v1.15.0`
// pushes them under the paths the private containerd's mirror of
// registry.k8s.io looks at:
//
//	kube-proxy:<kube>         busybox + DIR/kube-proxy as
//	                          /usr/local/bin/kube-proxy (what kubeadm's
//	                          DaemonSet runs) + TREE: the host's iptables,
//	                          ip6tables and their -save/-restore, with the
//	                          shared libraries and xtables extensions they
//	                          load (hack/cluster/addons.sh assembles it)
//	coredns/coredns:<ver>     DIR/coredns as /coredns, the entrypoint, as in
//	                          the upstream image (hack/coredns: the plugins a
//	                          cluster uses)
//
// DIR is hack/conformance/build.sh's directory, which builds both programs
// from the pinned Go modules.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// systemImageSpecs are the add-on images from their programs and the
// iptables tree.
func systemImageSpecs(bb layerSpec, kubeProxy, coredns []byte, iptables []entry, kubeVersion, corednsVersion string) []imageSpec {
	bin := []entry{dir("usr", 0o755), dir("usr/local", 0o755), dir("usr/local/bin", 0o755), file("usr/local/bin/kube-proxy", 0o755, kubeProxy)}
	return []imageSpec{
		{
			repo: "kube-proxy", tag: kubeVersion,
			layers: []layerSpec{
				bb,
				{what: "iptables from the build host (--system-iptables)", entries: iptables},
				{what: "/usr/local/bin/kube-proxy (k8s.io/kubernetes/cmd/kube-proxy)", entries: bin},
			},
			entrypoint: []string{"/usr/local/bin/kube-proxy"},
		},
		{
			repo: "coredns/coredns", tag: corednsVersion,
			layers: []layerSpec{
				{what: "/coredns (hack/coredns)", entries: append([]entry{dir("etc", 0o755), dir("etc/coredns", 0o755)}, binaryEntries("coredns", coredns)...)},
			},
			entrypoint: []string{"/coredns"},
		},
	}
}

// runSystem builds and pushes the add-on images.
func runSystem(ctx context.Context, o options, bb layerSpec) error {
	if o.systemIptables == "" || o.kubeVersion == "" || o.corednsVersion == "" {
		return errors.New("--system needs --system-iptables, --kube-version and --coredns-version (hack/cluster/addons.sh passes them)")
	}
	read := func(name string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(o.system, name))
		if err != nil {
			return nil, fmt.Errorf("--system: %w (build it: hack/conformance/build.sh %s)", err, name)
		}
		return b, nil
	}
	kp, err := read("kube-proxy")
	if err != nil {
		return err
	}
	cd, err := read("coredns")
	if err != nil {
		return err
	}
	ipt, err := treeEntries(o.systemIptables)
	if err != nil {
		return fmt.Errorf("--system-iptables: %w", err)
	}
	for _, s := range systemImageSpecs(bb, kp, cd, ipt, o.kubeVersion, o.corednsVersion) {
		img, err := buildImage(s, o.arch)
		if err != nil {
			return fmt.Errorf("build %s:%s: %w", s.repo, s.tag, err)
		}
		if err := push(ctx, o.registry+"/"+s.repo+":"+s.tag, img); err != nil {
			return err
		}
	}
	return nil
}
