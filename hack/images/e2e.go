package main

// The images of Kubernetes' e2e suite (e2e.test --list-images), built
// locally for hack/conformance: `go run ./hack/images --e2e LIST --e2e-bin DIR`
// reads the image names LIST holds (one per line, as e2e.test prints them,
// e.g. registry.k8s.io/e2e-test-images/agnhost:2.66.1) and pushes an image
// for each one it knows under the repository path below the mirrored
// registry (e2e-test-images/agnhost:2.66.1), where the private containerd's
// mirrors look. DIR holds the e2e programs built from the k8s.io/kubernetes
// module by hack/conformance/build.sh: agnhost and nnp (test/images/nonewprivs).
//
//	agnhost     busybox + the real /agnhost (+ /agnhost-2), its users and
//	            groups, /uploads, /bin/nmeter; entrypoint /agnhost, cmd pause; with
//	            --e2e-agnhost-extra DIR, DIR's tree on top: what the real
//	            image's Dockerfile adds that specs use (the porter TLS pair
//	            /localhost.crt and /localhost.key for netexec --tls-*,
//	            curl, bash and an nc with -u, dig and getent, with their
//	            shared libraries; hack/conformance/run.sh assembles it
//	            from the host)
//	glibc-dns-testing
//	            the busybox image below and the same extras (the DNS specs
//	            run dig and getent hosts in it, the hostname specs sh,
//	            hostname and hostname -f)
//	busybox     busybox, cmd sh, and the standin as /bin/nmeter; with
//	            --e2e-busybox FILE, that busybox instead of the host's
//	            (upstream BusyBox 1.37.0, as the real image:
//	            hack/conformance/build-busybox.sh says why)
//	nginx       the nginx stand-in of standins.go (busybox + /standin)
//	nonewprivs  busybox + setuid /usr/local/bin/nnp, cmd nnp
//	nonroot     busybox, user 1234
//	pause       the static Go pause of ./pause
//	nautilus, kitten
//	            the agnhost image and its test/images/<name>/html files
//	            (<name>.jpg, data.json) from the k8s.io/kubernetes source
//	            (--e2e-kube-src), cmd test-webserver, as their Dockerfiles
//	            build them (kubectl's Update Demo specs read data.json
//	            through the API server's pod proxy)
//	sample-apiserver
//	            /sample-apiserver (k8s.io/sample-apiserver at the pinned
//	            version, hack/conformance/build.sh), its entrypoint (the
//	            Aggregator spec)
//	etcd        /usr/local/bin/etcd, the control plane's etcd (--e2e-etcd;
//	            the Aggregator spec runs it beside the sample-apiserver)
//
// Every other name is listed as skipped: no spec of the suites the harness
// runs needs it, or (the CSI drivers, the NFS server) it needs what this
// machine cannot give a pod.

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// standinLayer is /standin; nmeterLayer links busybox's nmeter to it: the
// host's busybox lacks the applet, which the real busybox and agnhost
// (Alpine's busybox) images have and the node e2e specs time their log
// lines with.
func standinLayer(standinBin []byte) layerSpec {
	return layerSpec{what: "/standin", entries: binaryEntries("standin", standinBin)}
}

var nmeterLayer = layerSpec{what: "/bin/nmeter -> /standin", entries: []entry{symlink("bin/nmeter", "/standin")}}

// e2eInputs are what the recipes build from; a nil binary skips the images
// that need it.
type e2eInputs struct {
	busybox                      layerSpec
	agnhost, nnp, pause, standin []byte
	sampleAPIServer, etcd        []byte
	agnhostExtra                 []entry
	// busyboxImage is the busybox image's own busybox layer (--e2e-busybox);
	// empty: the host's, as every other image.
	busyboxImage layerSpec
	// html holds test/images/<name>/html's files per image name (nautilus,
	// kitten), read from --e2e-kube-src.
	html map[string][]entry
}

// e2eImageSpecs maps each listed image name to an image spec; names it
// has no recipe for come back in skipped.
func e2eImageSpecs(names []string, in e2eInputs) (specs []imageSpec, skipped []string, err error) {
	bb, agnhost, nnp, pause, standinBin, agnhostExtra := in.busybox, in.agnhost, in.nnp, in.pause, in.standin, in.agnhostExtra
	var nginx *standin
	for i := range standins {
		if standins[i].upstream == "docker.io/library/nginx" {
			nginx = &standins[i]
		}
	}
	for _, n := range names {
		repoTag, err := mirrorPath(n)
		if err != nil {
			skipped = append(skipped, n)
			continue
		}
		repo, tag, ok := strings.Cut(repoTag, ":")
		if !ok {
			repo, tag = repoTag, "latest"
		}
		base := repo[strings.LastIndex(repo, "/")+1:]
		s := imageSpec{repo: repo, tag: tag}
		agnhostLayers := func() []layerSpec {
			own := []entry{
				file("agnhost", 0o755, agnhost), symlink("agnhost-2", "agnhost"),
				dir("etc", 0o755),
				file("etc/passwd", 0o644, []byte(agnhostPasswd)), file("etc/group", 0o644, []byte(agnhostGroup)),
				file("etc/os-release", 0o644, []byte(agnhostOSRelease)),
				dir("home", 0o755), dir("home/user-defined-in-image", 0o755),
				dir("uploads", 0o755),
			}
			ls := []layerSpec{bb, {what: "/agnhost (k8s.io/kubernetes/test/images/agnhost)", entries: own}, standinLayer(standinBin), nmeterLayer}
			if len(agnhostExtra) > 0 {
				ls = append(ls, layerSpec{what: "agnhost extras (--e2e-agnhost-extra)", entries: agnhostExtra})
			}
			return ls
		}
		switch {
		case base == "agnhost" && agnhost != nil:
			s.layers = agnhostLayers()
			s.entrypoint, s.cmd = []string{"/agnhost"}, []string{"pause"}
		case (base == "nautilus" || base == "kitten") && agnhost != nil && in.html[base] != nil:
			// FROM agnhost, COPY html/<name>.jpg and html/data.json to /,
			// CMD ["test-webserver"] (agnhost serves / on port 80).
			s.layers = append(agnhostLayers(), layerSpec{what: base + "'s html (k8s.io/kubernetes/test/images/" + base + ")", entries: in.html[base]})
			s.entrypoint, s.cmd = []string{"/agnhost"}, []string{"test-webserver"}
		case base == "sample-apiserver" && in.sampleAPIServer != nil:
			s.layers = []layerSpec{bb, {what: "/sample-apiserver (k8s.io/sample-apiserver)", entries: binaryEntries("sample-apiserver", in.sampleAPIServer)}}
			s.entrypoint = []string{"/sample-apiserver"}
		case base == "etcd" && in.etcd != nil:
			own := []entry{dir("usr", 0o755), dir("usr/local", 0o755), dir("usr/local/bin", 0o755), file("usr/local/bin/etcd", 0o755, in.etcd)}
			s.layers = []layerSpec{bb, {what: "/usr/local/bin/etcd (the control plane's)", entries: own}}
		case base == "glibc-dns-testing":
			s.layers, s.cmd = []layerSpec{bb, standinLayer(standinBin), nmeterLayer}, []string{"sh"}
			if len(agnhostExtra) > 0 {
				s.layers = append(s.layers, layerSpec{what: "dig, getent and the rest (--e2e-agnhost-extra)", entries: agnhostExtra})
			}
		case base == "busybox":
			own := bb
			if len(in.busyboxImage.entries) > 0 {
				own = in.busyboxImage
			}
			s.layers, s.cmd = []layerSpec{own, standinLayer(standinBin), nmeterLayer}, []string{"sh"}
		case base == "nginx" && nginx != nil:
			own := layerSpec{what: "stand-in for nginx", entries: standinEntries(*nginx)}
			s.layers = []layerSpec{bb, {what: "/standin", entries: binaryEntries("standin", standinBin)}, own}
			s.cmd, s.stopSignal = nginx.cmd, nginx.stopSignal
		case base == "nonewprivs" && nnp != nil:
			own := []entry{dir("usr", 0o755), dir("usr/local", 0o755), dir("usr/local/bin", 0o755), file("usr/local/bin/nnp", 0o4755, nnp)}
			s.layers = []layerSpec{bb, {what: "setuid /usr/local/bin/nnp (k8s.io/kubernetes/test/images/nonewprivs)", entries: own}}
			s.cmd = []string{"nnp"}
		case base == "nonroot":
			s.layers, s.user = []layerSpec{bb}, "1234"
		case base == "pause":
			s.layers = []layerSpec{{what: "/pause", entries: binaryEntries("pause", pause)}}
			s.entrypoint = []string{"/pause"}
		default:
			skipped = append(skipped, n)
			continue
		}
		specs = append(specs, s)
	}
	return specs, skipped, nil
}

// runE2E builds and pushes the e2e images that list names.
func runE2E(ctx context.Context, o options, bb layerSpec, pause, standinBin []byte) error {
	b, err := os.ReadFile(o.e2eList)
	if err != nil {
		return fmt.Errorf("read the e2e image list: %w", err)
	}
	var names []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			names = append(names, l)
		}
	}
	readBin := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(o.e2eBin, name))
		if err != nil {
			fmt.Printf("[images] e2e: no %s binary in %s (%v): its image is skipped\n", name, o.e2eBin, err)
			return nil
		}
		return b
	}
	var extra []entry
	if o.e2eAgnhostExtra != "" {
		if extra, err = treeEntries(o.e2eAgnhostExtra); err != nil {
			return fmt.Errorf("--e2e-agnhost-extra: %w", err)
		}
	}
	in := e2eInputs{busybox: bb, agnhost: readBin("agnhost"), nnp: readBin("nnp"), pause: pause, standin: standinBin,
		sampleAPIServer: readBin("sample-apiserver"), agnhostExtra: extra}
	if o.e2eBusybox != "" {
		b, applets, err := readBusybox(ctx, o.e2eBusybox)
		if err != nil {
			return fmt.Errorf("--e2e-busybox: %w", err)
		}
		in.busyboxImage = layerSpec{what: "busybox (--e2e-busybox) with " + fmt.Sprint(len(applets)) + " applets", entries: busyboxEntries(b, applets)}
	}
	if o.e2eEtcd != "" {
		if in.etcd, err = os.ReadFile(o.e2eEtcd); err != nil {
			return fmt.Errorf("--e2e-etcd: %w", err)
		}
	}
	if o.e2eKubeSrc != "" {
		in.html = map[string][]entry{}
		for _, name := range []string{"nautilus", "kitten"} {
			// Dockerfile: COPY html/<name>.jpg <name>.jpg, COPY html/data.json data.json.
			var es []entry
			for _, f := range []string{name + ".jpg", "data.json"} {
				b, err := os.ReadFile(filepath.Join(o.e2eKubeSrc, "test", "images", name, "html", f))
				if err != nil {
					return fmt.Errorf("--e2e-kube-src: %w (want the k8s.io/kubernetes module's source)", err)
				}
				es = append(es, file(f, 0o644, b))
			}
			in.html[name] = es
		}
	}
	specs, skipped, err := e2eImageSpecs(names, in)
	if err != nil {
		return err
	}
	for _, s := range specs {
		img, err := buildImage(s, o.arch)
		if err != nil {
			return fmt.Errorf("build %s:%s: %w", s.repo, s.tag, err)
		}
		if err := push(ctx, o.registry+"/"+s.repo+":"+s.tag, img); err != nil {
			return err
		}
	}
	for _, n := range skipped {
		fmt.Printf("[images] e2e: %s: no local recipe, skipped\n", n)
	}
	fmt.Printf("[images] e2e: %d images built, %d skipped\n", len(specs), len(skipped))
	return nil
}

// treeEntries returns the directories, regular files and symlinks under
// root as layer entries (root's own path left out), with their permission
// bits; anything else (devices, sockets) is an error.
func treeEntries(root string) ([]entry, error) {
	var es []entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		name := filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := int64(info.Mode().Perm())
		if info.Mode()&fs.ModeSticky != 0 {
			mode |= 0o1000
		}
		if info.Mode()&fs.ModeSetuid != 0 {
			mode |= 0o4000
		}
		switch {
		case d.IsDir():
			es = append(es, dir(name, mode))
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			es = append(es, symlink(name, target))
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			es = append(es, file(name, mode, b))
		default:
			return fmt.Errorf("%s: not a directory, regular file or symlink (%v)", p, info.Mode().Type())
		}
		return nil
	})
	return es, err
}
