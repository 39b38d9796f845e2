/* SPDX-License-Identifier: MIT */
/*
 * The slice of libibverbs' private provider ABI that usb4verbs uses.
 *
 * Debian ships no <infiniband/driver.h>, so the layouts a provider shares
 * with the distro's libibverbs are declared here. The names are the
 * project's own; only public <infiniband/verbs.h> types are used as
 * building blocks, so the public structs follow the headers built against.
 *
 * What is shared depends on the rdma-core release, not only on its private
 * ABI version (PABI, the N of IBVERBS_PRIVATE_N): providers/usb4verbs/
 * pabi.cmake maps the installed libibverbs to a class of releases whose
 * shared layouts are identical and passes U4V_PABI and U4V_ABI_FIRST (the
 * class's first release) here. The figures checked at the end of this file
 * come from compiling tools/pabi/probe.c against rdma-core's own sources of
 * every release 34.0 .. 65.0 (tools/pabi/scan.sh; docs/PABI.md has the
 * method and the differences between the classes):
 *
 *   class       PABI  Debian         differs from the class before it in
 *   44          34    12 bookworm    ibv_qp_ex (wr_atomic_write): verbs_qp
 *   49 .. 56    34    13 trixie      ibv_qp_ex (wr_flush, 45), verbs_qp,
 *                                    ibv_port_attr (active_speed_ex, 49)
 *   65          65    unstable       17 new verbs_context_ops slots,
 *                                    verbs_context (+48 bytes)
 *
 * rdma-core 44.0 and 56.1 are therefore not interchangeable although both
 * say IBVERBS_PRIVATE_34: a provider built against one reads and writes
 * verbs_qp.comp_mask 8 bytes away from where the other library does.
 */
#ifndef USB4VERBS_PROVIDER_ABI_H
#define USB4VERBS_PROVIDER_ABI_H

#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#if !defined(U4V_PABI) || !defined(U4V_ABI_FIRST)
#error "U4V_PABI and U4V_ABI_FIRST must be defined (pabi.cmake finds them)"
#endif
/* U4VP_CLASS(a, b, c): the figure of class 44, 49..56 or 65. */
#if U4V_PABI == 34 && U4V_ABI_FIRST == 44
#define U4VP_CLASS(c44, c49, c65) (c44)
#elif U4V_PABI == 34 && U4V_ABI_FIRST == 49
#define U4VP_CLASS(c44, c49, c65) (c49)
#elif U4V_PABI == 65 && U4V_ABI_FIRST == 65
#define U4VP_CLASS(c44, c49, c65) (c65)
#else
#error "libibverbs release class not declared here (see pabi.cmake)"
#endif

/* Doubly linked list node as libibverbs embeds it (two pointers). */
struct u4vp_list_node {
	struct u4vp_list_node *next, *prev;
};

/* Kinds of entries in a provider's match table. */
enum {
	U4VP_MATCH_END = 0,	 /* table terminator */
	U4VP_MATCH_PCI = 1,	 /* vendor/device of the PCI function */
	U4VP_MATCH_MODALIAS = 2, /* fnmatch pattern on a modalias string */
	U4VP_MATCH_DRIVER_ID = 3 /* netlink driver id */
};

/* One entry of the table libibverbs walks to bind a device to a provider. */
struct u4vp_match_ent {
	void *driver_data;
	union {
		const char *modalias; /* fnmatch pattern (MODALIAS kind) */
		uint64_t driver_id;   /* DRIVER_ID kind */
	} u;
	uint16_t vendor; /* PCI kind */
	uint16_t device; /* PCI kind */
	uint8_t kind;
};

/* What libibverbs learnt about one uverbs device while enumerating. */
struct u4vp_sysfs_dev {
	struct u4vp_list_node entry;
	void *provider_data;
	const struct u4vp_match_ent *match;
	unsigned int flags; /* bit 0: modalias read; bit 1: node_guid read */
	char sysfs_name[IBV_SYSFS_NAME_MAX]; /* uverbs<N> */
	dev_t sysfs_cdev;
	char ibdev_name[IBV_SYSFS_NAME_MAX];
	char
	    ibdev_path[IBV_SYSFS_PATH_MAX]; /* <sysfs>/class/infiniband/<dev> */
	char modalias[512];
	uint64_t node_guid;
	uint32_t driver_id;
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;
	struct timespec time_created;
};

struct u4vp_verbs_device;

/* The provider's registration record. */
struct u4vp_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct u4vp_match_ent *match_table;
	const struct u4vp_device_ops **static_providers;
	bool (*match_device)(struct u4vp_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);
	struct u4vp_verbs_device *(*alloc_device)(
	    struct u4vp_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct u4vp_verbs_device *device);
};

/* The device object: the provider allocates it zeroed, the core fills it. */
struct u4vp_verbs_device {
	struct ibv_device device; /* first: libibverbs casts */
	const struct u4vp_device_ops *ops;
	atomic_int refcount;
	struct u4vp_list_node entry;
	struct u4vp_sysfs_dev *sysfs;
	uint64_t core_support;
};

/* Memory region as the core sees it (dereg/rereg hand this back). */
enum { U4VP_MR_TYPE_MR = 0 };
struct u4vp_verbs_mr {
	struct ibv_mr ibv_mr;
	int mr_type; /* enum in the core; int-sized */
	int access;
};

/* QP as the core sees it: ibv_qp_to_qp_ex() tests comp_mask. */
enum { U4VP_QP_HAS_EX = 1 << 1 };
struct u4vp_verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	void *xrcd;
};

/*
 * The provider's operations, one slot per verb, in the order the core
 * declares them (alphabetical): 76 slots in PABI 34 (rdma-core 36 .. 56),
 * 93 in PABI 65. verbs_set_ops copies the non-NULL ones; a NULL slot keeps
 * the core's default (EOPNOTSUPP / no-op).
 */
struct u4vp_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
#if U4V_PABI >= 65
	void *alloc_buf;
#endif
	void *alloc_dm;
#if U4V_PABI >= 65
	void *alloc_dmah;
#endif
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	void *alloc_null_mr;
	void *alloc_parent_domain;
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	void *alloc_td;
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	void *attach_counters_point_flow;
	void *attach_mcast;
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	void *close_xrcd;
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd,
				    struct ibv_ah_attr *attr);
#if U4V_PABI >= 65
	void *create_comp_cntr;
#endif
	void *create_counters;
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *attr);
	void *create_flow;
	void *create_flow_action_esp;
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *attr);
	void *create_rwq_ind_table;
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *attr);
	void *create_srq_ex;
	void *create_wq;
#if U4V_PABI >= 65
	void *dealloc_dmah;
#endif
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	void *dealloc_td;
	int (*dereg_mr)(struct u4vp_verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
#if U4V_PABI >= 65
	void *destroy_comp_cntr;
#endif
	void *destroy_counters;
	int (*destroy_cq)(struct ibv_cq *cq);
	void *destroy_flow;
	void *destroy_flow_action;
	int (*destroy_qp)(struct ibv_qp *qp);
	void *destroy_rwq_ind_table;
	int (*destroy_srq)(struct ibv_srq *srq);
	void *destroy_wq;
	void *detach_mcast;
#if U4V_PABI >= 65
	void *dm_export_dmabuf_fd;
	void *free_buf;
#endif
	void (*free_context)(struct ibv_context *context);
	void *free_dm;
	void *get_srq_num;
	void *import_dm;
	void *import_mr;
	void *import_pd;
#if U4V_PABI >= 65
	void *inc_comp_cntr;
	void *inc_err_comp_cntr;
#endif
	void *modify_cq;
	void *modify_flow_action_esp;
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	void *modify_qp_rate_limit;
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			  int attr_mask);
	void *modify_wq;
	void *open_qp;
	void *open_xrcd;
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	void *post_srq_ops;
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr);
#if U4V_PABI >= 65
	void *qp_attach_comp_cntr;
	void *query_comp_cntr_caps;
#endif
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	void *query_ece;
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
#if U4V_PABI >= 65
	void *query_port_speed;
#endif
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	void *query_qp_data_in_order;
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr);
#if U4V_PABI >= 65
	void *read_comp_cntr;
#endif
	void *read_counters;
#if U4V_PABI >= 65
	void *read_err_comp_cntr;
#endif
	void *reg_dm_mr;
	void *reg_dmabuf_mr;
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
#if U4V_PABI >= 65
	void *reg_mr_ex;
#endif
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct u4vp_verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
#if U4V_PABI >= 65
	void *set_comp_cntr;
#endif
	void *set_ece;
#if U4V_PABI >= 65
	void *set_err_comp_cntr;
#endif
	void *unimport_dm;
	void *unimport_mr;
	void *unimport_pd;
};

/*
 * The four private entry points a userspace-only provider imports (all in
 * version IBVERBS_PRIVATE_<U4V_PABI>). The registration symbol carries the
 * PABI number in its name so a mismatched library fails at load time.
 */
#define U4VP_CAT_(a, b) a##b
#define U4VP_CAT(a, b) U4VP_CAT_(a, b)
#define u4vp_register_driver U4VP_CAT(verbs_register_driver_, U4V_PABI)

void u4vp_register_driver(const struct u4vp_device_ops *ops);
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct u4vp_context_ops *ops);
void verbs_uninit_context(struct verbs_context *vctx);

/*
 * ---- layout checks: x86_64, the figures of rdma-core's own headers ----
 * U4VP_CLASS(class 44, class 49..56, class 65); tools/pabi/probe.c prints
 * them for any release.
 */
#if defined(__x86_64__) && defined(__LP64__)
#define U4VP_OFF(t, m, v)                                                      \
	_Static_assert(offsetof(struct t, m) == (v), #t "." #m " offset")
#define U4VP_SIZE(t, v) _Static_assert(sizeof(struct t) == (v), "sizeof " #t)
/* verbs_context_ops slot, in pointers */
#define U4VP_SLOT(m, c44, c49, c65)                                            \
	U4VP_OFF(u4vp_context_ops, m, U4VP_CLASS(c44, c49, c65) * 8)

U4VP_SIZE(u4vp_match_ent, 24);
U4VP_OFF(u4vp_match_ent, u, 8);
U4VP_OFF(u4vp_match_ent, vendor, 16);
U4VP_OFF(u4vp_match_ent, device, 18);
U4VP_OFF(u4vp_match_ent, kind, 20);

U4VP_SIZE(u4vp_sysfs_dev, 992);
U4VP_OFF(u4vp_sysfs_dev, provider_data, 16);
U4VP_OFF(u4vp_sysfs_dev, match, 24);
U4VP_OFF(u4vp_sysfs_dev, flags, 32);
U4VP_OFF(u4vp_sysfs_dev, sysfs_name, 36);
U4VP_OFF(u4vp_sysfs_dev, sysfs_cdev, 104);
U4VP_OFF(u4vp_sysfs_dev, ibdev_name, 112);
U4VP_OFF(u4vp_sysfs_dev, ibdev_path, 176);
U4VP_OFF(u4vp_sysfs_dev, modalias, 432);
U4VP_OFF(u4vp_sysfs_dev, node_guid, 944);
U4VP_OFF(u4vp_sysfs_dev, driver_id, 952);
U4VP_OFF(u4vp_sysfs_dev, node_type, 956);
U4VP_OFF(u4vp_sysfs_dev, ibdev_idx, 960);
U4VP_OFF(u4vp_sysfs_dev, num_ports, 964);
U4VP_OFF(u4vp_sysfs_dev, abi_ver, 968);
U4VP_OFF(u4vp_sysfs_dev, time_created, 976);

U4VP_SIZE(u4vp_device_ops, 72);
U4VP_OFF(u4vp_device_ops, match_min_abi_version, 8);
U4VP_OFF(u4vp_device_ops, match_max_abi_version, 12);
U4VP_OFF(u4vp_device_ops, match_table, 16);
U4VP_OFF(u4vp_device_ops, static_providers, 24);
U4VP_OFF(u4vp_device_ops, match_device, 32);
U4VP_OFF(u4vp_device_ops, alloc_context, 40);
U4VP_OFF(u4vp_device_ops, import_context, 48);
U4VP_OFF(u4vp_device_ops, alloc_device, 56);
U4VP_OFF(u4vp_device_ops, uninit_device, 64);

U4VP_SIZE(u4vp_verbs_device, 712);
U4VP_OFF(u4vp_verbs_device, ops, 664);
U4VP_OFF(u4vp_verbs_device, refcount, 672);
U4VP_OFF(u4vp_verbs_device, entry, 680);
U4VP_OFF(u4vp_verbs_device, sysfs, 696);
U4VP_OFF(u4vp_verbs_device, core_support, 704);

U4VP_SIZE(u4vp_verbs_mr, 56);
U4VP_OFF(u4vp_verbs_mr, mr_type, 48);
U4VP_OFF(u4vp_verbs_mr, access, 52);

/* ibv_qp_to_qp_ex() reads comp_mask right after the ibv_qp_ex of its own
 * headers: the class boundaries at 44 and 45 move it. */
U4VP_SIZE(ibv_qp_ex, U4VP_CLASS(352, 360, 360));
U4VP_SIZE(u4vp_verbs_qp, U4VP_CLASS(368, 376, 376));
U4VP_OFF(u4vp_verbs_qp, comp_mask, U4VP_CLASS(352, 360, 360));
U4VP_OFF(u4vp_verbs_qp, xrcd, U4VP_CLASS(360, 368, 368));
U4VP_OFF(ibv_qp_ex, qp_base, 0);

U4VP_SIZE(u4vp_context_ops, U4VP_CLASS(76, 76, 93) * 8);
U4VP_SLOT(alloc_pd, 5, 5, 7);
U4VP_SLOT(async_event, 7, 7, 9);
U4VP_SLOT(cq_event, 12, 12, 14);
U4VP_SLOT(create_ah, 13, 13, 15);
U4VP_SLOT(create_cq, 15, 15, 18);
U4VP_SLOT(create_cq_ex, 16, 16, 19);
U4VP_SLOT(create_qp, 19, 19, 22);
U4VP_SLOT(create_qp_ex, 20, 20, 23);
U4VP_SLOT(create_srq, 22, 22, 25);
U4VP_SLOT(dealloc_pd, 26, 26, 30);
U4VP_SLOT(dereg_mr, 28, 28, 32);
U4VP_SLOT(destroy_ah, 29, 29, 33);
U4VP_SLOT(destroy_cq, 31, 31, 36);
U4VP_SLOT(destroy_qp, 34, 34, 39);
U4VP_SLOT(destroy_srq, 36, 36, 41);
U4VP_SLOT(free_context, 39, 39, 46);
U4VP_SLOT(modify_qp, 47, 47, 56);
U4VP_SLOT(modify_srq, 49, 49, 58);
U4VP_SLOT(poll_cq, 53, 53, 62);
U4VP_SLOT(post_recv, 54, 54, 63);
U4VP_SLOT(post_send, 55, 55, 64);
U4VP_SLOT(post_srq_recv, 57, 57, 66);
U4VP_SLOT(query_device_ex, 58, 58, 69);
U4VP_SLOT(query_port, 60, 60, 71);
U4VP_SLOT(query_qp, 61, 61, 73);
U4VP_SLOT(query_srq, 64, 64, 76);
U4VP_SLOT(reg_mr, 68, 68, 82);
U4VP_SLOT(req_notify_cq, 69, 69, 84);
U4VP_SLOT(rereg_mr, 70, 70, 85);
U4VP_SLOT(resize_cq, 71, 71, 86);
U4VP_SLOT(unimport_pd, 75, 75, 92);

/* Public structs both sides fill or embed. */
U4VP_SIZE(ibv_device, 664);
U4VP_SIZE(ibv_context, 328);
U4VP_SIZE(verbs_context, U4VP_CLASS(648, 648, 696));
U4VP_OFF(verbs_context, context, U4VP_CLASS(320, 320, 368));
U4VP_SIZE(ibv_port_attr, U4VP_CLASS(52, 56, 56));
U4VP_SIZE(ibv_device_attr, 232);
U4VP_SIZE(ibv_device_attr_ex, 400);
#undef U4VP_SLOT
#undef U4VP_OFF
#undef U4VP_SIZE
#else
#error "usb4verbs' private-ABI layouts are verified for x86_64 only"
#endif

#endif
