// SPDX-License-Identifier: MIT
/*
 * Registration with libibverbs: match usb4v<N> devices by name, allocate
 * the device object, hand out contexts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "u4vp.h"

/*
 * The kernel shim registers its ib_device as RDMA_DRIVER_UNKNOWN and names
 * it usb4v<N>; the software cable's sysfs tree uses the same prefix. The
 * name is the only thing libibverbs can match on.
 */
static const struct u4vp_match_ent u4vp_match_table[] = {
    {.u.modalias = "rdma_device:*Nusb4v*", .kind = U4VP_MATCH_MODALIAS},
    {.kind = U4VP_MATCH_END},
};

static struct u4vp_verbs_device *
u4vp_alloc_device(struct u4vp_sysfs_dev *sysfs_dev)
{
	struct u4vp_device *dev = calloc(1, sizeof(*dev));

	if (!dev)
		return NULL;
	snprintf(dev->ibdev_name, sizeof(dev->ibdev_name), "%s",
		 sysfs_dev->ibdev_name);
	snprintf(dev->ibdev_path, sizeof(dev->ibdev_path), "%s",
		 sysfs_dev->ibdev_path);
	return &dev->vdev;
}

static void u4vp_uninit_device(struct u4vp_verbs_device *vdev)
{
	free(u4vp_container_of(vdev, struct u4vp_device, vdev));
}

static const struct u4vp_device_ops u4vp_device_ops = {
    .name = "usb4verbs",
    /* 0: sysfs abi_version absent (software cable); 1: kernel shim */
    .match_min_abi_version = 0,
    .match_max_abi_version = 1,
    .match_table = u4vp_match_table,
    .alloc_device = u4vp_alloc_device,
    .uninit_device = u4vp_uninit_device,
    .alloc_context = u4vp_alloc_context,
};

__attribute__((constructor)) static void u4vp_register(void)
{
	u4vp_register_driver(&u4vp_device_ops);
}
