package volume

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// fakeTrustBundles is a ClusterTrustBundles over a fixed set, with a call
// record and an injectable error.
type fakeTrustBundles struct {
	bundles []*certificatesv1.ClusterTrustBundle
	err     error
	calls   []string
}

var _ ClusterTrustBundles = (*fakeTrustBundles)(nil)

func (f *fakeTrustBundles) ClusterTrustBundle(name string) (*certificatesv1.ClusterTrustBundle, error) {
	f.calls = append(f.calls, "get "+name)
	if f.err != nil {
		return nil, f.err
	}
	for _, b := range f.bundles {
		if b.Name == name {
			return b, nil
		}
	}
	return nil, fmt.Errorf("clustertrustbundle %q %w", name, ErrConfigNotFound)
}

func (f *fakeTrustBundles) ListClusterTrustBundles(sel labels.Selector) ([]*certificatesv1.ClusterTrustBundle, error) {
	f.calls = append(f.calls, "list "+sel.String())
	if f.err != nil {
		return nil, f.err
	}
	var out []*certificatesv1.ClusterTrustBundle
	for _, b := range f.bundles {
		if sel.Matches(labels.Set(b.Labels)) {
			out = append(out, b)
		}
	}
	return out, nil
}

// testCertPEM is a self-signed certificate named cn, PEM-encoded.
func testCertPEM(t *testing.T, cn string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(0, 0).Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// commonNames parses a PEM bundle into its certificates' common names, in
// file order, failing on anything that is not a certificate.
func commonNames(t *testing.T, data []byte) []string {
	t.Helper()
	var cns []string
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			require.Empty(t, strings.TrimSpace(string(rest)), "nothing but PEM blocks")
			break
		}
		require.Equal(t, "CERTIFICATE", b.Type)
		require.Empty(t, b.Headers)
		c, err := x509.ParseCertificate(b.Bytes)
		require.NoError(t, err)
		cns = append(cns, c.Subject.CommonName)
	}
	return cns
}

func ctb(name, signer string, lbls map[string]string, pems ...string) *certificatesv1.ClusterTrustBundle {
	return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: strings.Join(pems, "")}}
}

// trustBundlePod is a pod with one projected volume of the given sources.
func trustBundlePod(sources ...v1.VolumeProjection) (*v1.Pod, *v1.Volume) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{
			Volumes:    []v1.Volume{{Name: "certs", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: sources}}}},
			Containers: []v1.Container{{Name: "c"}},
		}}
	return pod, &pod.Spec.Volumes[0]
}

func TestManager_ClusterTrustBundlePayload(t *testing.T) {
	a, b, c, d := testCertPEM(t, "a"), testCertPEM(t, "b"), testCertPEM(t, "c"), testCertPEM(t, "d")
	const signer = "example.com/signer"
	fake := &fakeTrustBundles{bundles: []*certificatesv1.ClusterTrustBundle{
		// Headers and text between blocks are dropped; a repeat is one.
		ctb("named", "", nil, "comment\n", a, b, strings.Replace(a, "-----\n", "-----\nProc-Type: 4,ENCRYPTED\n\n", 1)),
		ctb("example.com:signer:x1", signer, map[string]string{"team": "x"}, b, c),
		ctb("example.com:signer:y", signer, map[string]string{"team": "y"}, a),
		ctb("other.com:signer:x", "other.com/signer", map[string]string{"team": "x"}, d),
	}}
	m := NewManager(Config{}, Deps{TrustBundles: fake})
	sel := func(ls *metav1.LabelSelector) v1.VolumeProjection {
		return v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{SignerName: ptr.To(signer), LabelSelector: ls, Path: "s.pem"}}
	}
	byName := func(name string, optional bool) v1.VolumeProjection {
		return v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To(name), Optional: ptr.To(optional), Path: "n.pem"}}
	}
	for _, tc := range []struct {
		name    string
		src     v1.VolumeProjection
		file    string
		want    []string // common names, sorted; nil: an empty file
		wantErr string
	}{
		{name: "by name, each certificate once", src: byName("named", false), file: "n.pem", want: []string{"a", "b"}},
		{name: "signer and selector: that signer's matching bundles only", src: sel(&metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}), file: "s.pem", want: []string{"b", "c"}},
		{name: "empty selector: every bundle of the signer", src: sel(&metav1.LabelSelector{}), file: "s.pem", want: []string{"a", "b", "c"}},
		{name: "missing, optional: an empty file", src: byName("gone", true), file: "n.pem"},
		{name: "missing", src: byName("gone", false), wantErr: `get ClusterTrustBundle "gone": clustertrustbundle "gone" not found`},
		{name: "nil selector matches nothing", src: sel(nil), wantErr: `combination of signerName "example.com/signer" and no labelSelector matched zero ClusterTrustBundles (an unset labelSelector matches none`},
		{name: "a selector that matches nothing", src: sel(&metav1.LabelSelector{MatchLabels: map[string]string{"team": "z"}}),
			wantErr: `combination of signerName "example.com/signer" and labelSelector "team=z" matched zero ClusterTrustBundles`},
		{name: "no match, optional: an empty file", src: v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{
			SignerName: ptr.To("nobody.com/x"), LabelSelector: &metav1.LabelSelector{}, Optional: ptr.To(true), Path: "s.pem"}}, file: "s.pem"},
		{name: "neither name nor signer", src: v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Path: "x"}},
			wantErr: "requires either name or signerName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, vol := trustBundlePod(tc.src)
			payload, err := m.VolumePayload(pod, vol)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, payload, 1)
			f, ok := payload[tc.file]
			require.True(t, ok, "file %s in %v", tc.file, payload)
			assert.Equal(t, defaultProjectionMode, f.Mode)
			assert.Nil(t, f.UID)
			if tc.want == nil {
				assert.NotNil(t, f.Data)
				assert.Empty(t, f.Data, "an optional bundle that is missing is an empty file, as the kubelet writes it")
				return
			}
			got := commonNames(t, f.Data)
			slices.Sort(got)
			assert.Equal(t, tc.want, got)
			// The same bundles give the same bytes: the file is not
			// rewritten at every sync.
			again, err := m.VolumePayload(pod, vol)
			require.NoError(t, err)
			assert.Equal(t, f.Data, again[tc.file].Data)
		})
	}

	t.Run("the lister's error is the volume's", func(t *testing.T) {
		broken := NewManager(Config{}, Deps{TrustBundles: &fakeTrustBundles{err: fmt.Errorf("not listed yet")}})
		pod, vol := trustBundlePod(byName("named", true))
		_, err := broken.VolumePayload(pod, vol)
		require.ErrorContains(t, err, "not listed yet", "optional covers a missing bundle, not a failed lookup")
	})
}

// TestManager_ClusterTrustBundleModeAndOwner: the file's mode is the
// volume's defaultMode, or 0600 with an fsGroup (whose ownership change
// makes it 0640) or with one user for every container, who then owns it,
// as the kubelet's projected volume.
func TestManager_ClusterTrustBundleModeAndOwner(t *testing.T) {
	fake := &fakeTrustBundles{bundles: []*certificatesv1.ClusterTrustBundle{ctb("named", "", nil, testCertPEM(t, "a"))}}
	m := NewManager(Config{}, Deps{TrustBundles: fake})
	src := v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To("named"), Path: "ca.pem"}}
	for _, tc := range []struct {
		name     string
		mutate   func(*v1.Pod)
		wantMode os.FileMode
		wantUID  *int64
	}{
		{"defaultMode", func(p *v1.Pod) { p.Spec.Volumes[0].Projected.DefaultMode = ptr.To(int32(0o440)) }, 0o440, nil},
		{"fsGroup", func(p *v1.Pod) { p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To(int64(2000))} }, 0o600, nil},
		{"one user", func(p *v1.Pod) { p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To(int64(1001))} }, 0o600, ptr.To(int64(1001))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, _ := trustBundlePod(src)
			tc.mutate(pod)
			payload, err := m.VolumePayload(pod, &pod.Spec.Volumes[0])
			require.NoError(t, err)
			assert.Equal(t, tc.wantMode, payload["ca.pem"].Mode)
			assert.Equal(t, tc.wantUID, payload["ca.pem"].UID)
		})
	}
}

// TestTrustAnchors_OrderFixedPerProcess: the certificates' order does not
// depend on the bundles' order (the file is not rewritten when the API
// server lists them differently), and follows the process's seed.
func TestTrustAnchors_OrderFixedPerProcess(t *testing.T) {
	var pems []string
	for i := range 8 {
		pems = append(pems, testCertPEM(t, fmt.Sprint(i)))
	}
	one := trustAnchors([]*certificatesv1.ClusterTrustBundle{ctb("1", "", nil, pems[:4]...), ctb("2", "", nil, pems[4:]...)})
	slices.Reverse(pems)
	two := trustAnchors([]*certificatesv1.ClusterTrustBundle{ctb("2", "", nil, pems[:4]...), ctb("1", "", nil, pems[4:]...)})
	assert.Equal(t, string(one), string(two))
	assert.Len(t, commonNames(t, one), 8)

	saved := trustAnchorOrderSeed
	t.Cleanup(func() { trustAnchorOrderSeed = saved })
	orders := map[string]bool{}
	for i := range 20 {
		trustAnchorOrderSeed = []byte{byte(i)}
		orders[strings.Join(commonNames(t, trustAnchors([]*certificatesv1.ClusterTrustBundle{ctb("1", "", nil, pems...)})), ",")] = true
	}
	assert.Greater(t, len(orders), 1, "another seed (another agent process) orders them differently, as the kubelet's shuffle")
}

func TestManager_AdmitClusterProjections(t *testing.T) {
	pod, _ := trustBundlePod(
		v1.VolumeProjection{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}},
		v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To("named"), Path: "ca.pem"}})
	plain, _ := trustBundlePod(v1.VolumeProjection{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}})

	standalone := NewManager(Config{}, Deps{})
	reason, msg := standalone.AdmitClusterProjections(pod, "file", false)
	assert.Equal(t, "ClusterProjectionUnavailable", reason)
	assert.Contains(t, msg, `volume "certs" projects a ClusterTrustBundle (spec.volumes[0].projected.sources[1].clusterTrustBundle), which needs cluster mode`)
	assert.Contains(t, msg, "put the certificates in a ConfigMap")
	reason, _ = standalone.AdmitClusterProjections(plain, "file", false)
	assert.Empty(t, reason, "a pod without one is fine")

	clusterNode := NewManager(Config{}, Deps{TrustBundles: &fakeTrustBundles{}})
	reason, msg = clusterNode.AdmitClusterProjections(pod, "api", false)
	assert.Equal(t, "ClusterProjectionUnavailable", reason)
	assert.Contains(t, msg, `only pods from the cluster's API server may read ClusterTrustBundles: this pod comes from the "api" source`)
	reason, msg = clusterNode.AdmitClusterProjections(pod, "cluster", true)
	assert.Empty(t, reason, msg)
}

// TestManager_ClusterTrustBundleWithoutCluster: a pod admitted by an older
// agent (or a test that skips admission) says why it waits.
func TestManager_ClusterTrustBundleWithoutCluster(t *testing.T) {
	pod, vol := trustBundlePod(v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To("n"), Path: "ca.pem"}})
	_, err := NewManager(Config{}, Deps{}).VolumePayload(pod, vol)
	require.ErrorContains(t, err, "ClusterTrustBundle projections need cluster mode (serve --kubeconfig)")
}
