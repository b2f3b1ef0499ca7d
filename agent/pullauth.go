package agent

// Registry credentials for image pulls (agent/images has the rules): the
// engine finds the Secrets a pod's imagePullSecrets name and reads the
// node's docker config file.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/images"
)

// pullKeyring builds the keyring for a pod: the Secrets its
// imagePullSecrets name (types kubernetes.io/dockerconfigjson and
// kubernetes.io/dockercfg; others are ignored, as by the kubelet), then the
// node's docker config file. It returns the names of the Secrets it could
// not find and the problems met reading the others.
func (a *Agent) pullKeyring(pod *v1.Pod) (k *images.Keyring, missing []string, problems []error) {
	k = &images.Keyring{}
	for _, ref := range pod.Spec.ImagePullSecrets {
		s, err := a.configData().Secret(pod, ref.Name)
		if err != nil {
			missing = append(missing, ref.Name)
			continue
		}
		var data []byte
		switch s.Type {
		case v1.SecretTypeDockerConfigJson:
			data = s.Data[v1.DockerConfigJsonKey]
		case v1.SecretTypeDockercfg:
			data = s.Data[v1.DockerConfigKey]
		}
		if len(data) == 0 {
			continue
		}
		for _, err := range k.AddConfig(data) {
			problems = append(problems, fmt.Errorf("secret %q: %w", ref.Name, err))
		}
	}
	file := a.cfg.PullSecretFile
	if file == "" {
		file = filepath.Join(a.cfg.RootDir, "config.json")
	}
	data, err := os.ReadFile(file)
	switch {
	case err == nil:
		for _, err := range k.AddConfig(data) {
			problems = append(problems, fmt.Errorf("%s: %w", file, err))
		}
	case !os.IsNotExist(err) || a.cfg.PullSecretFile != "":
		problems = append(problems, err)
	}
	return k, missing, problems
}

// pullImage pulls the image with each matching credential in turn until
// one works (the kubelet's pullImage); without any, anonymously. Missing
// pull secrets give the kubelet's FailedToRetrieveImagePullSecret warning.
func (a *Agent) pullImage(ctx context.Context, pw *podWorker, spec *runtimeapi.ImageSpec, sandboxCfg *runtimeapi.PodSandboxConfig) (string, error) {
	pod := pw.pod()
	k, missing, problems := a.pullKeyring(pod)
	if len(missing) > 0 {
		pw.event(v1.EventTypeWarning, "FailedToRetrieveImagePullSecret", "Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", "))
	}
	for _, p := range problems {
		pw.logger.Warn("Unusable registry credentials", "err", p)
	}
	return images.PullWithCredentials(ctx, a.images, spec, k.Lookup(images.Repository(spec.Image)), sandboxCfg)
}
