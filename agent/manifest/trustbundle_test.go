package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestValidatePod_ClusterTrustBundle: the API server's rules for a
// clusterTrustBundle projection (name or signerName, a labelSelector only
// with signerName, a path not used twice), and its user refused as the
// other projections' (alpha).
func TestValidatePod_ClusterTrustBundle(t *testing.T) {
	ctbVolume := func(srcs ...v1.ClusterTrustBundleProjection) func(*v1.Pod) {
		return func(p *v1.Pod) {
			var sources []v1.VolumeProjection
			for i := range srcs {
				sources = append(sources, v1.VolumeProjection{ClusterTrustBundle: &srcs[i]})
			}
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "certs", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
				Sources: sources, DefaultMode: ptr.To(int32(0o644))}}})
		}
	}
	vp := "spec.volumes[0].projected.sources"
	for _, tc := range []struct {
		name   string
		mutate func(*v1.Pod)
		want   []string
	}{
		{name: "by name", mutate: ctbVolume(v1.ClusterTrustBundleProjection{Name: ptr.To("example.com:signer:abc"), Path: "ca.pem"})},
		{name: "by signer and selector", mutate: ctbVolume(v1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/signer"),
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}, Optional: ptr.To(true), Path: "ca.pem"})},
		{name: "both name and signer", mutate: ctbVolume(v1.ClusterTrustBundleProjection{Name: ptr.To("a"), SignerName: ptr.To("example.com/s"), Path: "ca.pem"}),
			want: []string{vp + `[0].clusterTrustBundle: Invalid value: "": only one of name and signerName may be used`}},
		{name: "neither", mutate: ctbVolume(v1.ClusterTrustBundleProjection{Path: "ca.pem"}),
			want: []string{vp + `[0].clusterTrustBundle: Required value: either name or signerName must be specified`}},
		{name: "selector with a name", mutate: ctbVolume(v1.ClusterTrustBundleProjection{Name: ptr.To("a"), LabelSelector: &metav1.LabelSelector{}, Path: "ca.pem"}),
			want: []string{vp + `[0].clusterTrustBundle.labelSelector: Invalid value: "": labelSelector must be unset if name is specified`}},
		{name: "signer without a path", mutate: ctbVolume(v1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com")}),
			want: []string{
				vp + `[0].clusterTrustBundle.signerName: Invalid value: "example.com": must be a fully qualified domain and path of the form 'example.com/signer-name'`,
				vp + `[0].clusterTrustBundle.path: Required value`,
			}},
		{name: "paths repeat and climb", mutate: ctbVolume(
			v1.ClusterTrustBundleProjection{Name: ptr.To("a"), Path: "ca.pem"},
			v1.ClusterTrustBundleProjection{Name: ptr.To("b"), Path: "ca.pem"},
			v1.ClusterTrustBundleProjection{Name: ptr.To("c"), Path: "../ca.pem"}),
			want: []string{
				vp + `[1].clusterTrustBundle.path: Invalid value: "ca.pem": conflicting duplicate paths`,
				vp + `[2].clusterTrustBundle.path: Invalid value: "../ca.pem": must not contain '..'`,
			}},
		{name: "user", mutate: ctbVolume(v1.ClusterTrustBundleProjection{Name: ptr.To("a"), Path: "ca.pem", User: ptr.To(int64(1000))}),
			want: []string{vp + `[0].clusterTrustBundle.user: Forbidden: not supported by minikubelet yet: alpha in Kubernetes (AtomicWriteVolumeUserFields)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			SetPodDefaults(pod, "test.yaml", "node1")
			tc.mutate(pod)
			var got []string
			for _, e := range ValidatePod(pod) {
				got = append(got, e.Error())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestValidatePod_PodCertificate: the API server's rules for a
// podCertificate projection (signer, key type, lifetime, at least one
// path, paths not used twice).
func TestValidatePod_PodCertificate(t *testing.T) {
	vp := "spec.volumes[0].projected.sources[0].podCertificate"
	for _, tc := range []struct {
		name string
		src  v1.PodCertificateProjection
		want []string
	}{
		{name: "valid", src: v1.PodCertificateProjection{SignerName: "example.com/id", KeyType: "ED25519", MaxExpirationSeconds: ptr.To(int32(3600)),
			CredentialBundlePath: "bundle.pem", KeyPath: "tls.key", CertificateChainPath: "tls.crt", UserAnnotations: map[string]string{"a": "b"}}},
		{name: "everything wrong", src: v1.PodCertificateProjection{SignerName: "example.com", KeyType: "DSA", MaxExpirationSeconds: ptr.To(int32(60))},
			want: []string{
				vp + `.signerName: Invalid value: "example.com": must be a fully qualified domain and path of the form 'example.com/signer-name'`,
				vp + `.keyType: Unsupported value: "DSA": supported values: "RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"`,
				vp + `.maxExpirationSeconds: Invalid value: 60: if provided, maxExpirationSeconds must be >= 3600`,
				vp + `: Required value: specify at least one of credentialBundlePath, keyPath, and certificateChainPath`,
			}},
		{name: "same path twice", src: v1.PodCertificateProjection{SignerName: "example.com/id", KeyType: "ECDSAP256", KeyPath: "x", CertificateChainPath: "x"},
			want: []string{vp + `.certificateChainPath: Invalid value: "x": conflicting duplicate paths`}},
		{name: "user", src: v1.PodCertificateProjection{SignerName: "example.com/id", KeyType: "ECDSAP256", KeyPath: "k", User: ptr.To(int64(1))},
			want: []string{vp + `.user: Forbidden: not supported by minikubelet yet: alpha in Kubernetes (AtomicWriteVolumeUserFields)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			SetPodDefaults(pod, "test.yaml", "node1")
			pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "id", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
				Sources: []v1.VolumeProjection{{PodCertificate: &tc.src}}, DefaultMode: ptr.To(int32(0o644))}}})
			var got []string
			for _, e := range ValidatePod(pod) {
				got = append(got, e.Error())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
