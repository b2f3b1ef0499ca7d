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

	specs, _, err := e2eImageSpecs(names, bb, []byte("agnhost"), nil, nil, nil, extra)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 1 || len(specs[0].layers) != 5 || specs[0].layers[4].entries[0].name != "localhost.crt" {
		t.Fatalf("agnhost with extras: %+v, want busybox, /agnhost, /standin, the nmeter link and the extra layer", specs)
	}
	specs, _, err = e2eImageSpecs(names, bb, []byte("agnhost"), nil, nil, nil, nil)
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
		bb, []byte("agnhost"), nil, nil, []byte("standin"), nil)
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
	if specs[0].cmd[0] != "sh" || specs[1].entrypoint[0] != "/agnhost" {
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
	specs, skipped, err := e2eImageSpecs(names, bb, nil, nil, nil, nil, extra)
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
