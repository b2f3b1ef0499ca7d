package api

// This file serves OpenAPI v3 for api/v1: the kube-apiserver's own document
// at the pinned Kubernetes release, pruned to the paths, methods and
// schemas this node serves (hack/openapi generates openapi/api_v1.json.gz,
// ~70 KB compressed, 430 KB as JSON; TestGenerated there checks it).
//
// kubectl reads it for two things:
//   - kubectl explain pod.spec.containers: the schemas and their
//     descriptions, as against a cluster.
//   - field validation: kubectl create/apply (--validate=strict, the
//     default) looks for a PATCH operation of the kind with a
//     fieldValidation query parameter; finding one, it sends
//     fieldValidation=Strict and leaves validation to the server. This
//     server always decodes strictly (an unknown or duplicate field is a
//     400 naming it, whatever fieldValidation says).

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
)

//go:embed openapi/api_v1.json.gz
var openAPIV1Gzip []byte

// openAPIHash names the api/v1 document's version (kubectl caches the
// document by the serverRelativeURL): a hash of its bytes.
var openAPIHash = func() string {
	sum := sha256.Sum256(openAPIV1Gzip)
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}()

func (s *Server) openAPIV3Root(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{
		"paths": map[string]any{
			"api/v1": map[string]string{"serverRelativeURL": "/openapi/v3/api/v1?hash=" + openAPIHash},
		},
	})
	return nil
}

// openAPIV3CoreV1 serves the document compressed to clients that take
// gzip (client-go's transport does), else decompressed as it goes.
func (s *Server) openAPIV3CoreV1(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Vary", "Accept-Encoding")
	if acceptsGzip(r) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", fmt.Sprint(len(openAPIV1Gzip)))
		_, _ = w.Write(openAPIV1Gzip)
		return nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(openAPIV1Gzip))
	if err != nil {
		return fmt.Errorf("the embedded OpenAPI document: %w", err)
	}
	_, _ = io.Copy(w, zr)
	return nil
}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, e := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(e), ";")
			if strings.EqualFold(strings.TrimSpace(name), "gzip") && strings.ReplaceAll(params, " ", "") != "q=0" {
				return true
			}
		}
	}
	return false
}
