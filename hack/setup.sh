#!/usr/bin/env bash
# setup.sh: prepare this machine for `make demo`: install the dependencies,
# start the local registry, build and push the images, and configure and
# start the system containerd. Idempotent; run as root from anywhere.
# Env: REGISTRY (default 127.0.0.1:5000).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root

HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export REGISTRY=${REGISTRY:-127.0.0.1:5000}
export PATH=$PATH:/usr/local/go/bin

"$HACK/install-deps.sh"
"$HACK/start-registry.sh" "$REGISTRY"
(cd "$HACK/.." && go run ./hack/images --registry "$REGISTRY")
"$HACK/setup-containerd.sh"
