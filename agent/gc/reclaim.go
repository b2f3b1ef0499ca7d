package gc

import "context"

// Reclaimer is what the eviction manager frees node-level resources with
// under disk pressure (agent.EvictionReclaimer), before it evicts a pod:
// the kubelet's containerGC and imageGC as its eviction manager holds them.
type Reclaimer struct {
	// Images removes unused images; Containers dead containers.
	Images     *ImageManager
	Containers *ContainerGC
}

// DeleteDeadContainers removes dead containers and sandboxes: those of
// gone pods, and those of terminated pods that are not deleted (the
// kubelet's DeleteAllUnusedContainers, ContainerGC.DeleteAllUnused).
func (r Reclaimer) DeleteDeadContainers(ctx context.Context) error {
	_, err := r.Containers.DeleteAllUnused(ctx)
	return err
}

// DeleteUnusedImages removes every unused image.
func (r Reclaimer) DeleteUnusedImages(ctx context.Context) error {
	_, err := r.Images.DeleteUnused(ctx)
	return err
}
