package api

// This file serves the smallest OpenAPI v3 that kubectl's field
// validation needs. kubectl create/apply (--validate=strict, the default)
// asks the server whether it validates fields itself: it reads /openapi/v3,
// then the api/v1 document, and looks for a PATCH operation of the kind
// with a fieldValidation query parameter. When there is one, it sends
// fieldValidation=Strict and leaves validation to the server; when there is
// none, it validates on the client against the full OpenAPI v2 schema, and
// without one refuses the object ("failed to download openapi").
//
// This server always decodes strictly (an unknown or duplicate field is a
// 400 naming it, whatever fieldValidation says), so it declares the
// parameter for the kinds it takes writes of. The documents carry no
// schemas: kubectl explain has nothing to show, and kubectl apply computes
// its strategic merge patch from its compiled-in types, as it does when a
// kind has no schema.

import (
	"net/http"
)

// openAPIHash names the api/v1 document's version (kubectl caches the
// document by the serverRelativeURL): bump it when the document changes.
const openAPIHash = "minikubelet-1"

// openAPIWritableKinds are the kinds whose writes are validated here, and
// their item paths.
var openAPIWritableKinds = []struct{ kind, path string }{
	{"ConfigMap", "/api/v1/namespaces/{namespace}/configmaps/{name}"},
	{"Pod", "/api/v1/namespaces/{namespace}/pods/{name}"},
	{"Secret", "/api/v1/namespaces/{namespace}/secrets/{name}"},
}

func (s *Server) openAPIV3Root(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{
		"paths": map[string]any{
			"api/v1": map[string]string{"serverRelativeURL": "/openapi/v3/api/v1?hash=" + openAPIHash},
		},
	})
	return nil
}

func (s *Server) openAPIV3CoreV1(w http.ResponseWriter, r *http.Request) error {
	paths := map[string]any{}
	for _, k := range openAPIWritableKinds {
		paths[k.path] = map[string]any{
			"patch": map[string]any{
				"operationId": "patchCoreV1Namespaced" + k.kind,
				"x-kubernetes-group-version-kind": map[string]string{
					"group": "", "version": "v1", "kind": k.kind,
				},
				"parameters": []map[string]any{{
					"name": "fieldValidation", "in": "query",
					"description": "The server always validates fields strictly: an unknown or duplicate field is refused.",
					"schema":      map[string]string{"type": "string"},
				}},
				"responses": map[string]any{"200": map[string]string{"description": "OK"}},
			},
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"openapi": "3.0.0",
		"info":    map[string]string{"title": "minikubelet", "version": "v1"},
		"paths":   paths,
	})
	return nil
}
