// SPDX-License-Identifier: GPL-2.0-only
/*
 * tbemu: module entry, parameters (limits, fault injection, the cable),
 * the emulated NHIs as PCI functions and the cable between them.
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/io.h>
#include <linux/iommu.h>

#include "tbemu.h"

struct tbe_host *tbe_hosts[TBE_HOSTS];
DEFINE_MUTEX(tbe_engine_lock);
DEFINE_SPINLOCK(tbe_cable_lock); /* hosts' plugged flags */
static DEFINE_MUTEX(tbe_lock); /* hosts and the cable */
static DEFINE_SPINLOCK(tbe_fault_lock);

/* Limits of each host (read at host creation). */
unsigned int tbe_hop_count = 12;
module_param_named(hop_count, tbe_hop_count, uint, 0444);
MODULE_PARM_DESC(hop_count, "Rings per direction of each NHI (0: control)");
unsigned int tbe_msix_vectors = 16;
module_param_named(msix_vectors, tbe_msix_vectors, uint, 0644);
MODULE_PARM_DESC(msix_vectors,
		 "MSI-X vectors of each NHI, one per ring (2 for control)");
unsigned int tbe_max_hopid = 15;
module_param_named(max_hopid, tbe_max_hopid, uint, 0444);
MODULE_PARM_DESC(max_hopid, "Highest input HopID of each lane adapter");
unsigned int tbe_max_tunnels = 8;
module_param_named(max_tunnels, tbe_max_tunnels, uint, 0644);
MODULE_PARM_DESC(max_tunnels, "DMA tunnels per host (firmware CMs: 1)");

bool tbe_net;
module_param_named(net, tbe_net, bool, 0444);
MODULE_PARM_DESC(net, "A net device per host over the cable, as thunderbolt-net's (net.c)");

/* Faults: each count is used up by the events it hits. */
int tbe_xd_drop_req;
module_param_named(xd_drop_req, tbe_xd_drop_req, int, 0644);
MODULE_PARM_DESC(xd_drop_req, "Lose the next N tb_xdomain_request() packets");
int tbe_xd_drop_resp;
module_param_named(xd_drop_resp, tbe_xd_drop_resp, int, 0644);
MODULE_PARM_DESC(xd_drop_resp, "Lose the next N tb_xdomain_response() packets");
int tbe_xd_garble_req;
module_param_named(xd_garble_req, tbe_xd_garble_req, int, 0644);
MODULE_PARM_DESC(xd_garble_req, "Scramble the next N requests");
int tbe_xd_garble_resp;
module_param_named(xd_garble_resp, tbe_xd_garble_resp, int, 0644);
MODULE_PARM_DESC(xd_garble_resp, "Scramble the next N responses");
int tbe_xd_garble_from = 28;
module_param_named(xd_garble_from, tbe_xd_garble_from, int, 0644);
MODULE_PARM_DESC(xd_garble_from,
		 "First byte scrambled (28: after the protocol UUID)");
int tbe_xd_mute = -1;
module_param_named(xd_mute, tbe_xd_mute, int, 0644);
MODULE_PARM_DESC(xd_mute, "Host whose XDomain packets all get lost (-1 none)");
int tbe_xd_delay_ms;
module_param_named(xd_delay_ms, tbe_xd_delay_ms, int, 0644);
MODULE_PARM_DESC(xd_delay_ms, "Delay of the delayed XDomain packets");
int tbe_xd_delay_count;
module_param_named(xd_delay_count, tbe_xd_delay_count, int, 0644);
MODULE_PARM_DESC(xd_delay_count, "Delay the next N XDomain packets");
int tbe_xd_fault_type;
module_param_named(xd_fault_type, tbe_xd_fault_type, int, 0644);
MODULE_PARM_DESC(xd_fault_type,
		 "Counted XDomain faults hit only packets of this usb4verbs type, request or response (0: all)");
int tbe_refuse_hopid;
module_param_named(refuse_hopid, tbe_refuse_hopid, int, 0644);
MODULE_PARM_DESC(refuse_hopid, "Fail the next N HopID allocations");
int tbe_hopid_busy;
module_param_named(hopid_busy, tbe_hopid_busy, int, 0644);
MODULE_PARM_DESC(hopid_busy,
		 "The next N preferred HopIDs are taken (another is given)");
int tbe_refuse_paths;
module_param_named(refuse_paths, tbe_refuse_paths, int, 0644);
MODULE_PARM_DESC(refuse_paths, "Fail the next N tb_xdomain_enable_paths()");
int tbe_crc_errors;
module_param_named(crc_errors, tbe_crc_errors, int, 0644);
MODULE_PARM_DESC(crc_errors, "Flag the next N delivered frames CRC_ERROR");

bool tbe_fault(int *count)
{
	bool hit = false;

	spin_lock(&tbe_fault_lock);
	if (*count > 0) {
		(*count)--;
		hit = true;
	}
	spin_unlock(&tbe_fault_lock);
	return hit;
}

/* The other host, while the cable joins them. */
struct tbe_host *tbe_peer(struct tbe_host *h)
{
	struct tbe_host *p = tbe_hosts[!h->index];

	return READ_ONCE(h->plugged) && p ? p : NULL;
}

/* The cable: both hosts see each other (XDomain, services) or neither. */
static bool tbe_plugged = true;

static void tbe_plugged_set(struct tbe_host *a, struct tbe_host *b, bool on)
{
	spin_lock(&tbe_cable_lock);
	WRITE_ONCE(a->plugged, on);
	WRITE_ONCE(b->plugged, on);
	spin_unlock(&tbe_cable_lock);
}

/* Under tbe_lock. */
static void tbe_cable_set(bool plug)
{
	struct tbe_host *a = tbe_hosts[0], *b = tbe_hosts[1];

	if (!a || !b || a->plugged == plug)
		return;
	if (plug) {
		tbe_plugged_set(a, b, true);
		if (tbe_xdomain_add(a, b) || tbe_xdomain_add(b, a))
			pr_warn("tbemu: cannot add the XDomains\n");
		tbe_services_update();
		return;
	}
	/* like the connection manager on a hot unplug, on both hosts */
	tbe_plugged_set(a, b, false);
	tbe_xdomain_remove(a);
	tbe_xdomain_remove(b);
	tbe_tunnels_drop(a);
	tbe_tunnels_drop(b);
}

static int tbe_cable_param_set(const char *val, const struct kernel_param *kp)
{
	int ret;

	mutex_lock(&tbe_lock);
	ret = param_set_bool(val, kp);
	if (!ret)
		tbe_cable_set(tbe_plugged);
	mutex_unlock(&tbe_lock);
	return ret;
}

static const struct kernel_param_ops tbe_cable_ops = {
	.set = tbe_cable_param_set,
	.get = param_get_bool,
};
module_param_cb(cable, &tbe_cable_ops, &tbe_plugged, 0644);
MODULE_PARM_DESC(cable, "The cable between the two hosts: 1 in, 0 out");

static int tbe_stats_get(char *buf, const struct kernel_param *kp)
{
	struct tbe_host *h;
	struct tbe_stats s;
	int i, n = 0;

	mutex_lock(&tbe_lock);
	for (i = 0; i < TBE_HOSTS; i++) {
		h = tbe_hosts[i];
		if (!h)
			continue;
		mutex_lock(&tbe_engine_lock);
		s = h->stats;
		n += scnprintf(buf + n, PAGE_SIZE - n, "rings%d", i);
		n += tbe_rings_show(h, buf + n, PAGE_SIZE - n);
		mutex_unlock(&tbe_engine_lock);
		n += scnprintf(buf + n, PAGE_SIZE - n,
			       "\nhost%d pci=%s frames=%llu bytes=%llu tx_done=%llu no_path=%llu no_rx_path=%llu rx_stopped=%llu rx_overflow=%llu unplugged=%llu not_posted=%llu bad_doorbell=%llu stopped_doorbell=%llu dma_fault=%llu pdf=%llu overrun=%llu irqs=%llu xd_tx=%llu xd_rx=%llu xd_dropped=%llu xd_unmatched=%llu xd_timeouts=%llu paths=%llu rings=%llu\n",
			       i, pci_name(h->pdev), s.frames, s.bytes,
			       s.tx_done, s.no_path, s.no_rx_path,
			       s.rx_stopped, s.rx_overflow, s.unplugged,
			       s.not_posted, s.bad_doorbell,
			       s.stopped_doorbell, s.dma_fault, s.pdf,
			       s.overrun, s.irqs, s.xd_tx, s.xd_rx,
			       s.xd_dropped, s.xd_unmatched, s.xd_timeouts,
			       s.paths, s.rings);
	}
	mutex_unlock(&tbe_lock);
	return n;
}

static const struct kernel_param_ops tbe_stats_ops = {
	.get = tbe_stats_get,
};
module_param_cb(stats, &tbe_stats_ops, NULL, 0444);
MODULE_PARM_DESC(stats, "Per-host counters of the DMA engine and XDomain");

/* Reading it runs the DMA engine's own check (check.c): its report. */
static int tbe_dma_check_get(char *buf, const struct kernel_param *kp)
{
	int n;

	mutex_lock(&tbe_lock);
	n = tbe_dma_check(buf);
	mutex_unlock(&tbe_lock);
	return n;
}

static const struct kernel_param_ops tbe_dma_check_ops = {
	.get = tbe_dma_check_get,
};
module_param_cb(dma_check, &tbe_dma_check_ops, NULL, 0444);
MODULE_PARM_DESC(dma_check,
		 "Read: break each DMA rule once on a ring pair of its own");

/* The NHI: its registers in BAR 0, as the shim maps them for direct mode. */
static int tbe_nhi_init(struct tbe_host *h, struct pci_dev *pdev)
{
	struct tb_nhi *nhi = &h->nhi;
	int ret;

	if (device_iommu_mapped(&pdev->dev))
		return -EOPNOTSUPP; /* the engine reads buffers by phys */
	if (pci_resource_len(pdev, 0) < TBE_REG_SIZE)
		return -ENODEV;
	ret = pcim_enable_device(pdev);
	if (!ret)
		ret = pcim_iomap_regions(pdev, BIT(0), "tbemu");
	if (!ret)
		ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		return ret;
	h->regs = pcim_iomap_table(pdev)[0];
	memset_io(h->regs, 0, TBE_REG_SIZE);
	spin_lock_init(&nhi->lock);
	nhi->pdev = pdev;
	nhi->iobase = h->regs;
	nhi->hop_count = clamp(tbe_hop_count, 2u, (unsigned int)TBE_MAX_HOPS);
	iowrite32(nhi->hop_count, h->regs + TBE_REG_HOP_COUNT);
	nhi->tx_rings = devm_kcalloc(&pdev->dev, nhi->hop_count,
				     sizeof(*nhi->tx_rings), GFP_KERNEL);
	nhi->rx_rings = devm_kcalloc(&pdev->dev, nhi->hop_count,
				     sizeof(*nhi->rx_rings), GFP_KERNEL);
	if (!nhi->tx_rings || !nhi->rx_rings)
		return -ENOMEM;
	h->vectors = 2; /* the control channel's TX and RX rings */
	return 0;
}

/* Hosts are seen by the service code and the engine under their locks. */
static void tbe_host_publish(int i, struct tbe_host *h)
{
	mutex_lock(&tbe_svc_lock);
	mutex_lock(&tbe_engine_lock);
	tbe_hosts[i] = h;
	mutex_unlock(&tbe_engine_lock);
	mutex_unlock(&tbe_svc_lock);
}

static int tbe_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct tbe_host *h;
	int i, ret;

	h = devm_kzalloc(&pdev->dev, sizeof(*h), GFP_KERNEL);
	if (!h)
		return -ENOMEM;
	ret = tbe_nhi_init(h, pdev);
	if (ret)
		return ret;
	mutex_lock(&tbe_lock);
	for (i = 0; i < TBE_HOSTS && tbe_hosts[i]; i++)
		;
	ret = -EBUSY; /* one cable, two hosts */
	if (i == TBE_HOSTS)
		goto out;
	h->index = i;
	h->pdev = pdev;
	/* distinct, fixed UUIDs: host 0's is the lower (end 0 of usb4verbs) */
	h->uuid = UUID_INIT(0x7b3e0a10 + i, 0x55aa, 0x4c1e, 0x8e, 0x07, 0x1d,
			    0x2b, 0x3c, 0x4d, 0x5e, 0x60 + i);
	ret = tbe_ctl_init(h);
	if (ret)
		goto out;
	ret = tbe_domain_add(h);
	if (ret) {
		tbe_ctl_exit(h);
		goto out;
	}
	pci_set_drvdata(pdev, h);
	tbe_host_publish(i, h);
	dev_info(&pdev->dev, "host %d, %u rings, registers in BAR 0\n", i,
		 h->nhi.hop_count);
	if (tbe_plugged)
		tbe_cable_set(true);
out:
	mutex_unlock(&tbe_lock);
	return ret;
}

static void tbe_remove(struct pci_dev *pdev)
{
	struct tbe_host *h = pci_get_drvdata(pdev);

	mutex_lock(&tbe_lock);
	tbe_cable_set(false);
	tbe_host_publish(h->index, NULL);
	mutex_unlock(&tbe_lock);
	tbe_ctl_exit(h);
	tbe_domain_remove(h);
}

/* QEMU's bochs-display (BAR 0 is memory); not the VGA class one. */
static const struct pci_device_id tbe_pci_ids[] = {
	{ .vendor = 0x1234, .device = 0x1111, .subvendor = PCI_ANY_ID,
	  .subdevice = PCI_ANY_ID, .class = PCI_CLASS_DISPLAY_OTHER << 8,
	  .class_mask = ~0 },
	{ }
};

static struct pci_driver tbe_pci_driver = {
	.name = "tbemu",
	.id_table = tbe_pci_ids,
	.probe = tbe_probe,
	.remove = tbe_remove,
};

static int __init tbe_init(void)
{
	int ret = tbe_bus_init();

	if (ret)
		return ret;
	ret = tbe_net ? tbe_net_init() : 0;
	if (ret)
		goto bus;
	ret = tbe_dma_start();
	if (!ret) {
		ret = pci_register_driver(&tbe_pci_driver);
		if (!ret)
			return 0;
		tbe_dma_stop();
	}
	if (tbe_net)
		tbe_net_exit();
bus:
	tbe_bus_exit();
	return ret;
}

static void __exit tbe_exit(void)
{
	pci_unregister_driver(&tbe_pci_driver);
	tbe_dma_stop();
	if (tbe_net)
		tbe_net_exit();
	tbe_bus_exit();
}

module_init(tbe_init);
module_exit(tbe_exit);

MODULE_DESCRIPTION("Test only: two emulated Thunderbolt hosts, one cable");
MODULE_LICENSE("GPL");
