package main

import (
	"archive/tar"
	"fmt"
	"strings"
)

// Stand-ins for the public images that the Kubernetes documentation's
// example manifests name (../shared/k8s-docs-examples). The test machine
// has no internet: containerd's registry mirrors (hack/containerd/mirror.toml,
// rendered into certs.d/<upstream>/hosts.toml) send pulls of docker.io,
// registry.k8s.io and gcr.io to the local registry, which asks for
// /v2/<repository path below the upstream host>/..., so each stand-in is
// pushed under that path: docker.io/library/nginx → <registry>/library/nginx,
// registry.k8s.io/e2e-test-images/agnhost → <registry>/e2e-test-images/agnhost.
//
// Each stand-in is the busybox layer, the standin binary (./standin) at
// /standin, and a small layer linking the names its example starts
// (/usr/sbin/nginx, /usr/local/bin/redis-server, ...) plus the files the
// example reads. The entrypoint and command follow the real image's.

// mirroredUpstreams are the registries the mirror config redirects.
var mirroredUpstreams = []string{"docker.io", "registry.k8s.io", "gcr.io"}

// standin is one stand-in image: its upstream names and what it holds.
type standin struct {
	// upstream is the repository as an example writes it, with the
	// registry host ("docker.io/library/nginx").
	upstream string
	// tags are every tag the examples use ("latest" for none).
	tags []string
	// links are symlinks to /standin (paths without the leading slash).
	links []string
	// files are extra files (and their parent directories).
	files []entry
	// entrypoint, cmd, workingDir and stopSignal mirror the real image.
	entrypoint, cmd []string
	workingDir      string
	stopSignal      string
}

// busyboxOnly marks a stand-in that needs no server: busybox plus
// /usr/bin/printenv, which real busybox and debian have.
var busyboxOnly = []string{"usr/bin/printenv"}

// nginxIndex is the start of nginx's default index.html (the lines the
// examples look at).
const nginxIndex = `<!DOCTYPE html>
<html>
<head>
<title>Welcome to nginx!</title>
<style>
html { color-scheme: light dark; }
body { width: 35em; margin: 0 auto;
font-family: Tahoma, Verdana, Arial, sans-serif; }
</style>
</head>
<body>
<h1>Welcome to nginx!</h1>
<p>If you see this page, the nginx web server is successfully installed and
working. Further configuration is required.</p>

<p><em>Thank you for using nginx.</em> (This is minikubelet's stand-in.)</p>
</body>
</html>
`

// agnhostPasswd and agnhostGroup are the users and groups the agnhost
// image defines, which the security-context examples' `id` output shows
// (group-defined-in-image lists user 1000).
const (
	agnhostPasswd = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\nuser-defined-in-image:x:1000:1000:user-defined-in-image:/home/user-defined-in-image:/bin/sh\n"
	agnhostGroup  = "root:x:0:\nnobody:x:65534:\nuser-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n"
	// agnhostOSRelease names what this image stands in for: the real agnhost
	// image (and kitten and nautilus, built FROM it) is Alpine Linux, and
	// the ImageVolume specs mount kitten and read its /etc/os-release for
	// "Alpine Linux". It says so without claiming to be Alpine.
	agnhostOSRelease = "NAME=\"minikubelet e2e stand-in\"\nID=mkl-e2e-standin\nPRETTY_NAME=\"minikubelet's local stand-in for the agnhost image, which upstream is based on Alpine Linux\"\n"
)

// standins lists every stand-in. TestStandins_CoverDocsExamples checks
// that each image of the examples is here.
var standins = []standin{
	{upstream: "docker.io/library/busybox", tags: []string{"latest", "1.28"}, links: busyboxOnly, cmd: []string{"sh"}},
	{upstream: "registry.k8s.io/busybox", tags: []string{"latest", "1.27.2"}, links: busyboxOnly, cmd: []string{"sh"}},
	{upstream: "docker.io/library/debian", tags: []string{"latest"}, links: busyboxOnly, cmd: []string{"sh"}},
	{
		upstream: "docker.io/library/nginx", tags: []string{"latest", "1.14.2", "1.29"},
		links: append([]string{"usr/sbin/nginx"}, busyboxOnly...),
		files: []entry{
			dir("run", 0o755), dir("usr/share/nginx", 0o755), dir("usr/share/nginx/html", 0o755),
			file("usr/share/nginx/html/index.html", 0o644, []byte(nginxIndex)),
			dir("etc/nginx", 0o755),
			file("etc/nginx/nginx.conf", 0o644, []byte("# minikubelet stand-in: the server is built in (root /usr/share/nginx/html, port 80)\nuser nginx;\nworker_processes auto;\n")),
			dir("var/log/nginx", 0o755),
		},
		cmd: []string{"nginx", "-g", "daemon off;"}, stopSignal: "SIGQUIT",
	},
	{
		upstream: "docker.io/library/redis", tags: []string{"latest"},
		links: append([]string{"usr/local/bin/redis-server"}, busyboxOnly...),
		files: []entry{dir("data", 0o755)},
		cmd:   []string{"redis-server"}, workingDir: "/data",
	},
	{upstream: "docker.io/polinux/stress", tags: []string{"latest"}, links: append([]string{"usr/local/bin/stress"}, busyboxOnly...), cmd: []string{"stress", "--help"}},
	{upstream: "docker.io/vish/stress", tags: []string{"latest"}, links: append([]string{"stress"}, busyboxOnly...), entrypoint: []string{"/stress"}, cmd: []string{"-logtostderr"}},
	{upstream: "docker.io/hashicorp/http-echo", tags: []string{"1.0"}, links: append([]string{"http-echo"}, busyboxOnly...), entrypoint: []string{"/http-echo"}},
	{
		upstream: "registry.k8s.io/e2e-test-images/agnhost", tags: []string{"2.40", "2.45"},
		links: append([]string{"agnhost"}, busyboxOnly...),
		files: []entry{
			file("etc/passwd", 0o644, []byte(agnhostPasswd)), file("etc/group", 0o644, []byte(agnhostGroup)),
			dir("home", 0o755), dir("home/user-defined-in-image", 0o755),
		},
		entrypoint: []string{"/agnhost"}, cmd: []string{"pause"},
	},
	{upstream: "registry.k8s.io/goproxy", tags: []string{"0.1"}, links: append([]string{"goproxy"}, busyboxOnly...), cmd: []string{"/goproxy"}},
	{upstream: "registry.k8s.io/test-webserver", tags: []string{"latest"}, links: append([]string{"test-webserver"}, busyboxOnly...), entrypoint: []string{"/test-webserver"}},
	{upstream: "registry.k8s.io/etcd", tags: []string{"3.5.1-0"}, links: append([]string{"usr/local/bin/etcd"}, busyboxOnly...), cmd: []string{"/usr/local/bin/etcd"}},
	{upstream: "gcr.io/google-samples/hello-app", tags: []string{"2.0"}, links: append([]string{"hello-app"}, busyboxOnly...), cmd: []string{"/hello-app"}},
	{upstream: "gcr.io/google-samples/node-hello", tags: []string{"1.0"}, links: append([]string{"usr/local/bin/node"}, busyboxOnly...), files: []entry{file("server.js", 0o644, []byte("// minikubelet stand-in: see /usr/local/bin/node\n"))}, cmd: []string{"node", "server.js"}},
}

// mirrorPath is where a mirror looks for an upstream repository in the
// local registry: the path below the upstream host.
func mirrorPath(upstream string) (string, error) {
	for _, h := range mirroredUpstreams {
		if p, ok := strings.CutPrefix(upstream, h+"/"); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not below a mirrored registry (%v)", upstream, mirroredUpstreams)
}

// standinSpecs turns the stand-ins into image specs, one per tag.
func standinSpecs(bb layerSpec, standinBinary []byte) ([]imageSpec, error) {
	bin := layerSpec{what: "/standin", entries: binaryEntries("standin", standinBinary)}
	var specs []imageSpec
	for _, s := range standins {
		repo, err := mirrorPath(s.upstream)
		if err != nil {
			return nil, err
		}
		own := layerSpec{what: "stand-in for " + s.upstream, entries: standinEntries(s)}
		for _, tag := range s.tags {
			specs = append(specs, imageSpec{
				repo: repo, tag: tag,
				layers:     []layerSpec{bb, bin, own},
				entrypoint: s.entrypoint, cmd: s.cmd,
				workingDir: s.workingDir, stopSignal: s.stopSignal,
			})
		}
	}
	return specs, nil
}

// standinEntries is a stand-in's own layer: its links, its files and
// every parent directory they need.
func standinEntries(s standin) []entry {
	var es []entry
	dirs := map[string]bool{}
	addParents := func(p string) {
		parts := strings.Split(p, "/")
		for i := 1; i < len(parts); i++ {
			d := strings.Join(parts[:i], "/")
			if !dirs[d] {
				dirs[d] = true
				mode := int64(0o755)
				if d == "tmp" {
					mode = 0o1777
				}
				es = append(es, dir(d, mode))
			}
		}
	}
	for _, f := range s.files {
		if f.typ == tar.TypeDir {
			dirs[f.name] = true
		}
	}
	for _, f := range s.files {
		addParents(f.name)
	}
	for _, l := range s.links {
		addParents(l)
		es = append(es, symlink(l, "/standin"))
	}
	return append(es, s.files...)
}
