package volume

// The files of projected clusterTrustBundle sources, as the kubelet's
// projected volume and ClusterTrustBundle manager
// (pkg/kubelet/clustertrustbundle) write them: the certificates of one
// ClusterTrustBundle chosen by name, or of every bundle of a signer whose
// labels match a selector, as one PEM file, each certificate once. The
// bundles come from ClusterTrustBundles: in cluster mode an informer on
// the API server's certificates.k8s.io/v1 clustertrustbundles
// (agent/cluster.TrustBundleLister). The payload is rebuilt at every sync
// of the pod (RefreshDataVolumes), so a changed bundle reaches a running
// pod's file as a new ..data version, as a changed ConfigMap does.
//
// Only pods from the API server may use them (AdmitClusterProjections): a
// ClusterTrustBundle is a cluster object, and a node without a cluster has
// none; the kubelet in standalone mode fails such volumes too
// (clustertrustbundle.NoopManager).

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ClusterTrustBundles reads the cluster's ClusterTrustBundles
// (certificates.k8s.io/v1); in cluster mode the API server's
// (agent/cluster.TrustBundleLister).
type ClusterTrustBundles interface {
	// ClusterTrustBundle returns the named bundle; a missing one is an
	// error that Is ErrConfigNotFound.
	ClusterTrustBundle(name string) (*certificatesv1.ClusterTrustBundle, error)
	// ListClusterTrustBundles returns the bundles whose labels match
	// selector (of every signer).
	ListClusterTrustBundles(selector labels.Selector) ([]*certificatesv1.ClusterTrustBundle, error)
}

// maxLabelSelectorLength bounds a selector, as the kubelet's manager.
const maxLabelSelectorLength = 100 * 1024

// trustAnchorOrderSeed orders the certificates of a trust bundle file
// (trustAnchors). Random per process: the kubelet shuffles the
// certificates so that nobody relies on their order; a shuffle at every
// rebuild would rewrite the file at every sync here, so the order is
// fixed for the process's life and changes when the agent restarts.
var trustAnchorOrderSeed = func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}()

// clusterTrustBundlePayload is the file of one clusterTrustBundle source:
// the trust anchors of the named bundle, or of the signer's bundles the
// selector matches. A missing bundle (or no match) is an empty file when
// the source is optional, as the kubelet writes it. The mode is the
// volume's defaultMode, or 0600 when the pod has an fsGroup or one user
// for all containers (who then owns it), as the kubelet's.
func (a *Manager) clusterTrustBundlePayload(pod *v1.Pod, src *v1.ClusterTrustBundleProjection, mode os.FileMode) (map[string]FileProjection, error) {
	if a.trustBundles == nil {
		// Admission refuses such pods (AdmitClusterProjections); a pod
		// admitted by an older agent still says why it waits.
		return nil, fmt.Errorf("ClusterTrustBundle projections need cluster mode (serve --kubeconfig)")
	}
	optional := isTrue(src.Optional)
	var (
		data []byte
		err  error
	)
	switch {
	case src.Name != nil:
		data, err = a.trustAnchorsByName(*src.Name, optional)
	case src.SignerName != nil:
		data, err = a.trustAnchorsBySigner(*src.SignerName, src.LabelSelector, optional)
	default:
		err = errors.New("ClusterTrustBundle projection requires either name or signerName to be set")
	}
	if err != nil {
		return nil, err
	}
	fsUser := podFSUser(pod)
	if gid, _ := podFSGroup(pod); gid != nil || fsUser != nil {
		mode = 0o600
	}
	return map[string]FileProjection{src.Path: {Data: data, Mode: mode, UID: fsUser}}, nil
}

// trustAnchorsByName is the kubelet's GetTrustAnchorsByName.
func (a *Manager) trustAnchorsByName(name string, optional bool) ([]byte, error) {
	ctb, err := a.trustBundles.ClusterTrustBundle(name)
	if err != nil {
		if errors.Is(err, ErrConfigNotFound) && optional {
			return []byte{}, nil
		}
		return nil, fmt.Errorf("get ClusterTrustBundle %q: %w", name, err)
	}
	return trustAnchors([]*certificatesv1.ClusterTrustBundle{ctb}), nil
}

// trustAnchorsBySigner is the kubelet's GetTrustAnchorsBySigner: the
// bundles of signerName whose labels match the selector. A nil selector
// matches nothing and an empty one everything (metav1's
// LabelSelectorAsSelector), as in the kubelet.
func (a *Manager) trustAnchorsBySigner(signerName string, ls *metav1.LabelSelector, optional bool) ([]byte, error) {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("parse the label selector of ClusterTrustBundles of signer %q: %w", signerName, err)
	}
	if n := len(sel.String()); n > maxLabelSelectorLength {
		return nil, fmt.Errorf("label selector length (%d) is larger than %d", n, maxLabelSelectorLength)
	}
	all, err := a.trustBundles.ListClusterTrustBundles(sel)
	if err != nil {
		return nil, fmt.Errorf("list ClusterTrustBundles matching label selector %v: %w", sel, err)
	}
	var bundles []*certificatesv1.ClusterTrustBundle
	for _, ctb := range all {
		if ctb.Spec.SignerName == signerName {
			bundles = append(bundles, ctb)
		}
	}
	if len(bundles) == 0 {
		if optional {
			return []byte{}, nil
		}
		if ls == nil {
			return nil, fmt.Errorf("combination of signerName %q and no labelSelector matched zero ClusterTrustBundles (an unset labelSelector matches none; {} matches every bundle of the signer)", signerName)
		}
		return nil, fmt.Errorf("combination of signerName %q and labelSelector %q matched zero ClusterTrustBundles", signerName, sel.String())
	}
	return trustAnchors(bundles), nil
}

// trustAnchors is the kubelet's normalizeTrustAnchors: every PEM block of
// the bundles, once, as a CERTIFICATE block without headers (the API
// server admits only such blocks). The order is trustAnchorOrderSeed's.
func trustAnchors(bundles []*certificatesv1.ClusterTrustBundle) []byte {
	seen := map[string]bool{}
	type anchor struct {
		der  []byte
		rank [sha256.Size]byte
	}
	var list []anchor
	for _, ctb := range bundles {
		rest := []byte(ctb.Spec.TrustBundle)
		for {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			if seen[string(b.Bytes)] {
				continue
			}
			seen[string(b.Bytes)] = true
			list = append(list, anchor{der: b.Bytes, rank: sha256.Sum256(append(slices.Clone(trustAnchorOrderSeed), b.Bytes...))})
		}
	}
	slices.SortFunc(list, func(x, y anchor) int { return bytes.Compare(x.rank[:], y.rank[:]) })
	out := []byte{}
	for _, an := range list {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: an.der})...)
	}
	return out
}

// Admission reason of a pod that projects a cluster object this node
// cannot get.
const admitReasonClusterProjection = "ClusterProjectionUnavailable"

// AdmitClusterProjections refuses a pod that projects a ClusterTrustBundle
// this node cannot read or a pod certificate it cannot request (podcert.go):
// without a cluster for
// every pod, and in cluster mode for pods that do not come from the API
// server (fromCluster false; podSource names the source the pod came
// from): they are cluster objects, which a node's own pods have no
// business reading. The reason is empty when the pod is fine.
func (a *Manager) AdmitClusterProjections(pod *v1.Pod, podSource string, fromCluster bool) (reason, message string) {
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.Projected == nil {
			continue
		}
		for j, src := range vol.Projected.Sources {
			switch {
			case src.ClusterTrustBundle != nil:
				where := fmt.Sprintf("volume %q projects a ClusterTrustBundle (spec.volumes[%d].projected.sources[%d].clusterTrustBundle)", vol.Name, i, j)
				if a.trustBundles == nil {
					return admitReasonClusterProjection, where + ", which needs cluster mode: ClusterTrustBundles are objects of a cluster's API server, and minikubelet reads them only as a cluster node (serve --kubeconfig); without a cluster, put the certificates in a ConfigMap and project that instead"
				}
				if !fromCluster {
					return admitReasonClusterProjection, fmt.Sprintf("%s, but only pods from the cluster's API server may read ClusterTrustBundles: this pod comes from the %q source; create the pod through the API server (kubectl), or put the certificates in a ConfigMap and project that instead", where, podSource)
				}
			case src.PodCertificate != nil:
				where := fmt.Sprintf("volume %q projects a pod certificate (spec.volumes[%d].projected.sources[%d].podCertificate)", vol.Name, i, j)
				if a.podCerts == nil {
					return admitReasonClusterProjection, where + ", which needs cluster mode: pod certificates are requested through the API server (PodCertificateRequest) only by a cluster node (serve --kubeconfig); without a cluster, put the key and certificate in a Secret and project that instead"
				}
				if !fromCluster {
					return admitReasonClusterProjection, fmt.Sprintf("%s, but only pods from the cluster's API server get pod certificates: this pod comes from the %q source and exists on no API server, which a signer checks the request against; create the pod through the API server (kubectl), or put the key and certificate in a Secret instead", where, podSource)
				}
			}
		}
	}
	return "", ""
}
