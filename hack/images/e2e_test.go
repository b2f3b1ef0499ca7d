package main

import (
	"archive/tar"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTreeEntries(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755))
	must(os.WriteFile(filepath.Join(root, "usr/bin/curl"), []byte("ELF"), 0o755))
	must(os.WriteFile(filepath.Join(root, "localhost.key"), []byte("KEY"), 0o600))
	must(os.Symlink("nc.openbsd", filepath.Join(root, "usr/bin/nc")))

	es, err := treeEntries(root)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]entry{}
	for _, e := range es {
		got[e.name] = e
	}
	want := map[string]struct {
		typ  byte
		mode int64
	}{
		"usr":           {tar.TypeDir, 0o755},
		"usr/bin":       {tar.TypeDir, 0o755},
		"usr/bin/curl":  {tar.TypeReg, 0o755},
		"usr/bin/nc":    {tar.TypeSymlink, 0o777},
		"localhost.key": {tar.TypeReg, 0o600},
	}
	if len(got) != len(want) {
		t.Fatalf("entries %v, want the %d of %v", es, len(want), want)
	}
	for name, w := range want {
		e, ok := got[name]
		if !ok || e.typ != w.typ || e.mode != w.mode {
			t.Errorf("%s: got %+v, want type %c mode %o", name, e, w.typ, w.mode)
		}
	}
	if string(got["usr/bin/curl"].data) != "ELF" || got["usr/bin/nc"].target != "nc.openbsd" {
		t.Errorf("content or link target lost: %+v %+v", got["usr/bin/curl"], got["usr/bin/nc"])
	}
	// The tree makes a valid layer (parents listed, no duplicates).
	if _, err := tarLayer(es); err != nil {
		t.Fatal(err)
	}
}

func TestE2EImageSpecs_AgnhostExtraLayer(t *testing.T) {
	bb := layerSpec{what: "busybox"}
	names := []string{"registry.k8s.io/e2e-test-images/agnhost:2.66.1"}
	extra := []entry{file("localhost.crt", 0o644, []byte("CRT"))}

	specs, _, err := e2eImageSpecs(names, e2eInputs{busybox: bb, agnhost: []byte("agnhost"), agnhostExtra: extra})
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 1 || len(specs[0].layers) != 5 || specs[0].layers[4].entries[0].name != "localhost.crt" {
		t.Fatalf("agnhost with extras: %+v, want busybox, /agnhost, /standin, the nmeter link and the extra layer", specs)
	}
	specs, _, err = e2eImageSpecs(names, e2eInputs{busybox: bb, agnhost: []byte("agnhost")})
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 1 || len(specs[0].layers) != 4 {
		t.Fatalf("agnhost without extras: %d layers, want 4", len(specs[0].layers))
	}
}

// TestE2EImageSpecs_Nmeter: the e2e busybox and agnhost have /bin/nmeter
// (the standin), which the node e2e specs' container commands run.
func TestE2EImageSpecs_Nmeter(t *testing.T) {
	bb := layerSpec{what: "busybox"}
	specs, _, err := e2eImageSpecs([]string{"registry.k8s.io/e2e-test-images/busybox:1.37.0-2", "registry.k8s.io/e2e-test-images/agnhost:2.66.1"},
		e2eInputs{busybox: bb, agnhost: []byte("agnhost"), standin: []byte("standin")})
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 {
		t.Fatalf("specs %+v, want busybox and agnhost", specs)
	}
	for _, s := range specs {
		var standin, link bool
		for _, l := range s.layers[1:] {
			for _, e := range l.entries {
				standin = standin || e.name == "standin" && string(e.data) == "standin"
				link = link || e.name == "bin/nmeter" && e.typ == tar.TypeSymlink && e.target == "/standin"
			}
		}
		if !standin || !link {
			t.Errorf("%s layers %+v: want /standin and bin/nmeter -> /standin", s.repo, s.layers)
		}
	}
	if len(specs[0].layers) != 3 || specs[0].cmd[0] != "sh" || specs[1].entrypoint[0] != "/agnhost" {
		t.Errorf("busybox cmd %v, agnhost entrypoint %v: want sh and /agnhost", specs[0].cmd, specs[1].entrypoint)
	}
}

// The DNS specs run dig and getent in glibc-dns-testing too: it gets the
// extras on top of the busybox image's layers (busybox, /standin and
// /bin/nmeter); busybox itself gets no extras.
func TestE2EImageSpecs_GlibcDNSTestingGetsTheExtras(t *testing.T) {
	bb := layerSpec{what: "busybox"}
	names := []string{"registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1", "docker.io/library/busybox:1.37.0-glibc"}
	extra := []entry{file("usr/bin/dig", 0o755, []byte("DIG"))}
	specs, skipped, err := e2eImageSpecs(names, e2eInputs{busybox: bb, agnhostExtra: extra})
	if err != nil || len(skipped) != 0 || len(specs) != 2 {
		t.Fatalf("specs %+v, skipped %v, err %v", specs, skipped, err)
	}
	b := specs[1]
	if !strings.HasSuffix(b.repo, "busybox") || len(b.layers) != 3 || b.layers[0].what != "busybox" {
		t.Fatalf("busybox: %+v, want busybox, /standin and /bin/nmeter", b)
	}
	g := specs[0]
	if !strings.HasSuffix(g.repo, "glibc-dns-testing") || len(g.layers) != len(b.layers)+1 || g.cmd[0] != "sh" {
		t.Fatalf("glibc-dns-testing: %+v, want the busybox image's layers and the extras, cmd sh", g)
	}
	for i, l := range b.layers {
		if g.layers[i].what != l.what {
			t.Errorf("glibc-dns-testing layer %d is %q, want the busybox image's %q", i, g.layers[i].what, l.what)
		}
	}
	if last := g.layers[len(g.layers)-1]; last.entries[0].name != "usr/bin/dig" {
		t.Errorf("glibc-dns-testing's last layer %+v, want the extras", last)
	}
}

// The Update Demo and Aggregator specs' images: nautilus and kitten are
// agnhost with their html files, running test-webserver; sample-apiserver
// and etcd carry their binaries where the specs run them. Without their
// inputs they are skipped, not built empty.
func TestE2EImageSpecs_UpdateDemoAndAggregatorImages(t *testing.T) {
	bb := layerSpec{what: "busybox"}
	names := []string{
		"registry.k8s.io/e2e-test-images/nautilus:1.8", "registry.k8s.io/e2e-test-images/kitten:1.8",
		"registry.k8s.io/e2e-test-images/sample-apiserver:1.29.2", "registry.k8s.io/etcd:3.7.0-0",
	}
	_, skipped, err := e2eImageSpecs(names, e2eInputs{busybox: bb, agnhost: []byte("agnhost")})
	if err != nil || len(skipped) != 4 {
		t.Fatalf("without html, sample-apiserver and etcd: skipped %v, err %v; want all four skipped", skipped, err)
	}
	in := e2eInputs{busybox: bb, agnhost: []byte("agnhost"), standin: []byte("standin"),
		sampleAPIServer: []byte("SAS"), etcd: []byte("ETCD"),
		html: map[string][]entry{
			"nautilus": {file("nautilus.jpg", 0o644, []byte("JPG")), file("data.json", 0o644, []byte(`{"image": "nautilus.jpg"}`))},
			"kitten":   {file("kitten.jpg", 0o644, []byte("JPG")), file("data.json", 0o644, []byte(`{"image": "kitten.jpg"}`))},
		}}
	specs, skipped, err := e2eImageSpecs(names, in)
	if err != nil || len(skipped) != 0 || len(specs) != 4 {
		t.Fatalf("specs %+v, skipped %v, err %v", specs, skipped, err)
	}
	has := func(s imageSpec, name string, data string) bool {
		for _, l := range s.layers {
			for _, e := range l.entries {
				if e.name == name && string(e.data) == data {
					return true
				}
			}
		}
		return false
	}
	for _, s := range specs[:2] {
		base := s.repo[strings.LastIndex(s.repo, "/")+1:]
		// The ImageVolume specs read the mounted kitten's /etc/os-release.
		if !has(s, "etc/os-release", agnhostOSRelease) || !strings.Contains(agnhostOSRelease, "Alpine Linux") {
			t.Errorf("%s: no /etc/os-release naming Alpine Linux", s.repo)
		}
		if !has(s, "agnhost", "agnhost") || !has(s, "data.json", `{"image": "`+base+`.jpg"}`) || !has(s, base+".jpg", "JPG") ||
			s.entrypoint[0] != "/agnhost" || s.cmd[0] != "test-webserver" {
			t.Errorf("%s: %+v, want agnhost, %s.jpg and data.json, /agnhost test-webserver", s.repo, s, base)
		}
	}
	if s := specs[2]; !has(s, "sample-apiserver", "SAS") || s.entrypoint[0] != "/sample-apiserver" {
		t.Errorf("sample-apiserver: %+v", s)
	}
	if s := specs[3]; !has(s, "usr/local/bin/etcd", "ETCD") || s.repo != "etcd" || s.tag != "3.7.0-0" {
		t.Errorf("etcd: %+v, want repo etcd, tag 3.7.0-0, /usr/local/bin/etcd", s)
	}
}

// With --e2e-busybox the busybox image has that busybox; every other image
// keeps the host's.
func TestE2EImageSpecs_BusyboxImageHasItsOwnBusybox(t *testing.T) {
	bb := layerSpec{what: "busybox", entries: []entry{file("bin/busybox", 0o755, []byte("HOST"))}}
	own := layerSpec{what: "busybox 1.37", entries: []entry{file("bin/busybox", 0o755, []byte("UPSTREAM"))}}
	names := []string{"registry.k8s.io/e2e-test-images/busybox:1.37.0-2", "registry.k8s.io/e2e-test-images/nonroot:1.4"}
	specs, _, err := e2eImageSpecs(names, e2eInputs{busybox: bb, standin: []byte("standin"), busyboxImage: own})
	if err != nil || len(specs) != 2 {
		t.Fatalf("specs %+v, err %v", specs, err)
	}
	if len(specs[0].layers) != 3 || string(specs[0].layers[0].entries[0].data) != "UPSTREAM" || specs[0].cmd[0] != "sh" {
		t.Errorf("busybox layers %+v: want its own busybox, /standin and nmeter, cmd sh", specs[0].layers)
	}
	if len(specs[1].layers) != 1 || string(specs[1].layers[0].entries[0].data) != "HOST" {
		t.Errorf("nonroot layers %+v: want the host's busybox only", specs[1].layers)
	}
}
