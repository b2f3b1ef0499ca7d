package source

// The naming rules between sources: the annotations that say where a pod
// comes from, and the names of the node's own sources. The cluster's is
// agent.sourceCluster (agent/token.go), beside the token rules it decides.

// Annotations that say where a pod comes from (the kubelet's config.source).
const (
	AnnotationConfigSource = "kubernetes.io/config.source"
	AnnotationSourceFile   = "minikubelet.io/source-file"
	SourceFile             = "file"
	SourceAPI              = "api"
)
