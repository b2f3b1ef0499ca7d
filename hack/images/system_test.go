package main

import (
	"testing"
)

// The add-on images are named and started as kubeadm's manifests expect:
// registry.k8s.io/kube-proxy:<kube> runs /usr/local/bin/kube-proxy (the
// DaemonSet's command) with iptables on PATH, and
// registry.k8s.io/coredns/coredns:<ver> has /coredns as its entrypoint (the
// Deployment gives only args).
func TestSystemImageSpecs(t *testing.T) {
	bb := layerSpec{what: "busybox", entries: []entry{dir("bin", 0o755)}}
	ipt := []entry{dir("usr", 0o755), dir("usr/sbin", 0o755), file("usr/sbin/xtables-nft-multi", 0o755, []byte("ELF")), symlink("usr/sbin/iptables", "xtables-nft-multi")}
	specs := systemImageSpecs(bb, []byte("KP"), []byte("CD"), ipt, "v1.37.2", "v1.15.0")
	if len(specs) != 2 {
		t.Fatalf("%d specs, want 2", len(specs))
	}
	files := func(s imageSpec) map[string]entry {
		m := map[string]entry{}
		for _, l := range s.layers {
			for _, e := range l.entries {
				m[e.name] = e
			}
		}
		return m
	}
	kp, cd := specs[0], specs[1]
	if kp.repo+":"+kp.tag != "kube-proxy:v1.37.2" || cd.repo+":"+cd.tag != "coredns/coredns:v1.15.0" {
		t.Fatalf("images %s:%s and %s:%s, want kube-proxy:v1.37.2 and coredns/coredns:v1.15.0 (below registry.k8s.io)", kp.repo, kp.tag, cd.repo, cd.tag)
	}
	kf := files(kp)
	for _, p := range []string{"usr/local/bin/kube-proxy", "usr/sbin/iptables", "usr/sbin/xtables-nft-multi", "bin"} {
		if _, ok := kf[p]; !ok {
			t.Errorf("kube-proxy image lacks /%s", p)
		}
	}
	if e := kf["usr/local/bin/kube-proxy"]; string(e.data) != "KP" || e.mode != 0o755 {
		t.Errorf("/usr/local/bin/kube-proxy: %q mode %o", e.data, e.mode)
	}
	cf := files(cd)
	if e, ok := cf["coredns"]; !ok || string(e.data) != "CD" || e.mode != 0o755 {
		t.Errorf("/coredns: %+v", e)
	}
	if len(cd.entrypoint) != 1 || cd.entrypoint[0] != "/coredns" {
		t.Errorf("coredns entrypoint %v, want [/coredns]", cd.entrypoint)
	}
	if _, ok := cf["usr/sbin/iptables"]; ok {
		t.Error("the coredns image got the iptables tree")
	}
}
