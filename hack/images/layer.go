package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// epoch is the timestamp on every file, layer and config, so that building
// the same inputs twice gives the same digests.
var epoch = time.Unix(0, 0).UTC()

// entry is one file system object in a layer.
type entry struct {
	// name is the path inside the image, without a leading slash.
	name string
	// typ is tar.TypeReg, tar.TypeDir or tar.TypeSymlink.
	typ byte
	// mode holds the permission bits (sticky bit included).
	mode int64
	// data is the content of a regular file.
	data []byte
	// target is where a symlink points.
	target string
}

// dir, file and symlink build entries owned by root.
func dir(name string, mode int64) entry { return entry{name: name, typ: tar.TypeDir, mode: mode} }

func file(name string, mode int64, data []byte) entry {
	return entry{name: name, typ: tar.TypeReg, mode: mode, data: data}
}

func symlink(name, target string) entry {
	return entry{name: name, typ: tar.TypeSymlink, mode: 0o777, target: target}
}

// tarLayer writes the entries, sorted by name, as an uncompressed tar with
// fixed owners and timestamps. Parent directories must be listed explicitly.
func tarLayer(entries []entry) ([]byte, error) {
	sorted := append([]entry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i, e := range sorted {
		if i > 0 && sorted[i-1].name == e.name {
			return nil, fmt.Errorf("duplicate layer entry %q", e.name)
		}
		h := &tar.Header{
			Typeflag: e.typ,
			Name:     e.name,
			Linkname: e.target,
			Mode:     e.mode,
			ModTime:  epoch,
			Format:   tar.FormatPAX,
		}
		switch e.typ {
		case tar.TypeDir:
			h.Name = strings.TrimSuffix(e.name, "/") + "/"
		case tar.TypeReg:
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("write tar header %q: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("write tar data %q: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close tar: %w", err)
	}
	return buf.Bytes(), nil
}

// newLayer turns entries into an OCI gzip layer. go-containerregistry
// compresses with compress/gzip and no header timestamp, so the digest is a
// function of the entries alone.
func newLayer(entries []entry) (v1.Layer, error) {
	raw, err := tarLayer(entries)
	if err != nil {
		return nil, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("make layer: %w", err)
	}
	return l, nil
}

// busyboxEntries is a minimal userland: the static busybox binary at
// /bin/busybox with a symlink per applet, root and nobody in /etc/passwd
// and /etc/group, and a world-writable sticky /tmp.
func busyboxEntries(busybox []byte, applets []string) []entry {
	es := []entry{
		dir("bin", 0o755),
		dir("etc", 0o755),
		dir("root", 0o700),
		dir("tmp", 0o1777),
		file("bin/busybox", 0o755, busybox),
		file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")),
		file("etc/group", 0o644, []byte("root:x:0:\nnobody:x:65534:\n")),
	}
	seen := map[string]bool{"busybox": true}
	for _, a := range applets {
		a = path.Base(strings.TrimSpace(a))
		if a == "" || a == "." || a == "/" || seen[a] {
			continue
		}
		seen[a] = true
		es = append(es, symlink("bin/"+a, "busybox"))
	}
	return es
}

// binaryEntries puts one executable at the image root, for example /pause.
func binaryEntries(name string, data []byte) []entry {
	return []entry{file(name, 0o755, data)}
}
