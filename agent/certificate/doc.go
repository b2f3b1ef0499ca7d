// Package certificate is the node's TLS bootstrapping and client
// certificate rotation, as the kubelet does them
// (k8s: pkg/kubelet/certificate/bootstrap, and client-go's
// util/certificate Manager and FileStore):
//
//   - Bootstrap: when the node's kubeconfig is missing or its client
//     certificate expired, a CertificateSigningRequest for signer
//     kubernetes.io/kube-apiserver-client-kubelet (CN system:node:<node>,
//     O system:nodes) is made with the bootstrap kubeconfig's credentials;
//     once approved and issued, the key and certificate are stored as
//     <cert-dir>/kubelet-client-<timestamp>.pem with the symlink
//     kubelet-client-current.pem, and the kubeconfig is written to point
//     at it.
//   - Manager: renews the certificate at a random point in 70-90 % of its
//     lifetime with a new CSR made with the current certificate; the API
//     client's transport (UseRotatingCertificate) presents the newest one
//     and closes its connections when it changes.
//
// It does not use client-go's util/certificate itself: that package links
// client-go's full clientset, which added 21.7 MB to the binary (46.7 ->
// 68.4 MB, measured); see issue #8. The CSR client is an interface
// (agent/cluster.NewCSRClient implements it over the node's small typed
// client; tests pass client-go's fake clientset).
package certificate
