/* SPDX-License-Identifier: MIT */
/*
 * The slice of libibverbs' private provider ABI that usb4verbs uses.
 *
 * Debian ships no <infiniband/driver.h>, so the layouts a provider shares
 * with the distro's libibverbs are declared here, for one known private ABI
 * version at a time (U4V_PABI, detected at configure time from the
 * IBVERBS_PRIVATE_<N> symbol version of the installed libibverbs.so.1).
 * The names are the project's own; the layouts are checked below against
 * the sizes and offsets of rdma-core 44 on x86_64 (IBVERBS_PRIVATE_34).
 *
 * Only public <infiniband/verbs.h> types are used as building blocks.
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

#ifndef U4V_PABI
#error "U4V_PABI must be defined (the build system detects it)"
#endif
#if U4V_PABI != 34
#error "usb4verbs declares libibverbs private ABI 34 only (rdma-core 44)"
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
 * declares them (alphabetical). verbs_set_ops copies the non-NULL ones;
 * a NULL slot keeps the core's default (EOPNOTSUPP / no-op).
 */
struct u4vp_context_ops {
	void *advise_mr;
	void *alloc_dm;
	void *alloc_mw;
	void *alloc_null_mr;
	void *alloc_parent_domain;
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	void *alloc_td;
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	void *attach_counters_point_flow;
	void *attach_mcast;
	void *bind_mw;
	void *close_xrcd;
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd,
				    struct ibv_ah_attr *attr);
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
	void *dealloc_mw;
	int (*dealloc_pd)(struct ibv_pd *pd);
	void *dealloc_td;
	int (*dereg_mr)(struct u4vp_verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	void *destroy_counters;
	int (*destroy_cq)(struct ibv_cq *cq);
	void *destroy_flow;
	void *destroy_flow_action;
	int (*destroy_qp)(struct ibv_qp *qp);
	void *destroy_rwq_ind_table;
	int (*destroy_srq)(struct ibv_srq *srq);
	void *destroy_wq;
	void *detach_mcast;
	void (*free_context)(struct ibv_context *context);
	void *free_dm;
	void *get_srq_num;
	void *import_dm;
	void *import_mr;
	void *import_pd;
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
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	void *query_ece;
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	void *query_qp_data_in_order;
	void *query_rt_values;
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr);
	void *read_counters;
	void *reg_dm_mr;
	void *reg_dmabuf_mr;
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct u4vp_verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	void *set_ece;
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

/* ---- layout checks: x86_64, rdma-core 44 ---- */
#if defined(__x86_64__) && defined(__LP64__)
#define U4VP_OFF(t, m, v)                                                      \
	_Static_assert(offsetof(struct t, m) == (v), #t "." #m " offset")
#define U4VP_SIZE(t, v) _Static_assert(sizeof(struct t) == (v), "sizeof " #t)

U4VP_SIZE(ibv_device, 664);
U4VP_SIZE(u4vp_match_ent, 24);
U4VP_OFF(u4vp_match_ent, u, 8);
U4VP_OFF(u4vp_match_ent, vendor, 16);
U4VP_OFF(u4vp_match_ent, device, 18);
U4VP_OFF(u4vp_match_ent, kind, 20);

U4VP_SIZE(u4vp_sysfs_dev, 992);
U4VP_OFF(u4vp_sysfs_dev, flags, 32);
U4VP_OFF(u4vp_sysfs_dev, sysfs_cdev, 104);
U4VP_OFF(u4vp_sysfs_dev, ibdev_name, 112);
U4VP_OFF(u4vp_sysfs_dev, ibdev_path, 176);
U4VP_OFF(u4vp_sysfs_dev, node_guid, 944);
U4VP_OFF(u4vp_sysfs_dev, node_type, 956);
U4VP_OFF(u4vp_sysfs_dev, abi_ver, 968);

U4VP_SIZE(u4vp_device_ops, 72);
U4VP_OFF(u4vp_device_ops, match_min_abi_version, 8);
U4VP_OFF(u4vp_device_ops, match_table, 16);
U4VP_OFF(u4vp_device_ops, match_device, 32);
U4VP_OFF(u4vp_device_ops, alloc_context, 40);
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

U4VP_OFF(u4vp_verbs_qp, comp_mask, sizeof(struct ibv_qp_ex));
U4VP_OFF(ibv_qp_ex, qp_base, 0);

/* 76 slots, alphabetical; spot-check the ones this provider fills. */
U4VP_SIZE(u4vp_context_ops, 76 * 8);
U4VP_OFF(u4vp_context_ops, alloc_pd, 5 * 8);
U4VP_OFF(u4vp_context_ops, async_event, 7 * 8);
U4VP_OFF(u4vp_context_ops, cq_event, 12 * 8);
U4VP_OFF(u4vp_context_ops, create_ah, 13 * 8);
U4VP_OFF(u4vp_context_ops, create_cq, 15 * 8);
U4VP_OFF(u4vp_context_ops, create_cq_ex, 16 * 8);
U4VP_OFF(u4vp_context_ops, create_qp, 19 * 8);
U4VP_OFF(u4vp_context_ops, create_qp_ex, 20 * 8);
U4VP_OFF(u4vp_context_ops, create_srq, 22 * 8);
U4VP_OFF(u4vp_context_ops, dealloc_pd, 26 * 8);
U4VP_OFF(u4vp_context_ops, dereg_mr, 28 * 8);
U4VP_OFF(u4vp_context_ops, destroy_ah, 29 * 8);
U4VP_OFF(u4vp_context_ops, destroy_cq, 31 * 8);
U4VP_OFF(u4vp_context_ops, destroy_qp, 34 * 8);
U4VP_OFF(u4vp_context_ops, destroy_srq, 36 * 8);
U4VP_OFF(u4vp_context_ops, free_context, 39 * 8);
U4VP_OFF(u4vp_context_ops, modify_qp, 47 * 8);
U4VP_OFF(u4vp_context_ops, modify_srq, 49 * 8);
U4VP_OFF(u4vp_context_ops, poll_cq, 53 * 8);
U4VP_OFF(u4vp_context_ops, post_recv, 54 * 8);
U4VP_OFF(u4vp_context_ops, post_send, 55 * 8);
U4VP_OFF(u4vp_context_ops, post_srq_recv, 57 * 8);
U4VP_OFF(u4vp_context_ops, query_device_ex, 58 * 8);
U4VP_OFF(u4vp_context_ops, query_port, 60 * 8);
U4VP_OFF(u4vp_context_ops, query_qp, 61 * 8);
U4VP_OFF(u4vp_context_ops, query_srq, 64 * 8);
U4VP_OFF(u4vp_context_ops, reg_mr, 68 * 8);
U4VP_OFF(u4vp_context_ops, req_notify_cq, 69 * 8);
U4VP_OFF(u4vp_context_ops, rereg_mr, 70 * 8);
U4VP_OFF(u4vp_context_ops, resize_cq, 71 * 8);
U4VP_OFF(u4vp_context_ops, unimport_pd, 75 * 8);

/* Public structs the core and this provider both rely on. */
U4VP_SIZE(ibv_device_attr, 232);
U4VP_SIZE(ibv_device_attr_ex, 400);
#undef U4VP_OFF
#undef U4VP_SIZE
#else
#error "usb4verbs' private-ABI layouts are verified for x86_64 only"
#endif

#endif
