// SPDX-License-Identifier: GPL-2.0-only
/*
 * tbemu: the "thunderbolt" bus with its domains, XDomains and services, the
 * service drivers, and the property directories hosts publish.
 *
 * Both hosts live in this kernel, so a directory registered here is
 * published by both, and each host's XDomain (its view of the other host)
 * gets a service for it: a service driver probes once per host, as on two
 * machines. The real core learns the other host's directories over the
 * XDomain discovery protocol; here they are read from the shared list.
 */
#include <linux/module.h>
#include <linux/slab.h>

#include "tbemu.h"

/* 6.9 made the thunderbolt device types const, 6.11 bus match's driver. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 9, 0)
#define TBE_CONST const
#else
#define TBE_CONST
#endif
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define TBE_DRV_CONST const
#else
#define TBE_DRV_CONST
#endif

DEFINE_MUTEX(tbe_svc_lock); /* directories, hosts' XDomains, services */
static struct tb_property_dir *tbe_root; /* what every host publishes */

/* Properties: the subset of drivers/thunderbolt/property.c services use. */

struct tb_property_dir *tb_property_create_dir(const uuid_t *uuid)
{
	struct tb_property_dir *dir = kzalloc(sizeof(*dir), GFP_KERNEL);

	if (!dir)
		return NULL;
	INIT_LIST_HEAD(&dir->properties);
	if (uuid) {
		dir->uuid = kmemdup(uuid, sizeof(*dir->uuid), GFP_KERNEL);
		if (!dir->uuid) {
			kfree(dir);
			return NULL;
		}
	}
	return dir;
}
EXPORT_SYMBOL_GPL(tb_property_create_dir);

void tb_property_free_dir(struct tb_property_dir *dir)
{
	struct tb_property *p, *tmp;

	if (!dir)
		return;
	list_for_each_entry_safe(p, tmp, &dir->properties, list) {
		list_del(&p->list);
		if (p->type == TB_PROPERTY_TYPE_DIRECTORY)
			tb_property_free_dir(p->value.dir);
		kfree(p);
	}
	kfree(dir->uuid);
	kfree(dir);
}
EXPORT_SYMBOL_GPL(tb_property_free_dir);

static struct tb_property *tbe_property_add(struct tb_property_dir *parent,
					    const char *key,
					    enum tb_property_type type)
{
	struct tb_property *p;

	if (!key || strlen(key) > TB_PROPERTY_KEY_SIZE)
		return NULL;
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return NULL;
	strscpy(p->key, key, sizeof(p->key));
	p->type = type;
	list_add_tail(&p->list, &parent->properties);
	return p;
}

int tb_property_add_immediate(struct tb_property_dir *parent, const char *key,
			      u32 value)
{
	struct tb_property *p;

	p = tbe_property_add(parent, key, TB_PROPERTY_TYPE_VALUE);
	if (!p)
		return -EINVAL;
	p->length = 1;
	p->value.immediate = value;
	return 0;
}
EXPORT_SYMBOL_GPL(tb_property_add_immediate);

int tb_property_add_dir(struct tb_property_dir *parent, const char *key,
			struct tb_property_dir *dir)
{
	struct tb_property *p;

	p = tbe_property_add(parent, key, TB_PROPERTY_TYPE_DIRECTORY);
	if (!p)
		return -EINVAL;
	p->value.dir = dir;
	return 0;
}
EXPORT_SYMBOL_GPL(tb_property_add_dir);

struct tb_property *tb_property_find(struct tb_property_dir *dir,
				     const char *key,
				     enum tb_property_type type)
{
	struct tb_property *p;

	list_for_each_entry(p, &dir->properties, list)
		if (p->type == type && !strcmp(p->key, key))
			return p;
	return NULL;
}
EXPORT_SYMBOL_GPL(tb_property_find);

void tb_property_remove(struct tb_property *property)
{
	list_del(&property->list);
	kfree(property);
}
EXPORT_SYMBOL_GPL(tb_property_remove);

/* The bus: services match service drivers by their id tables. */

static bool tbe_service_matches(const struct tb_service_id *id,
				const struct tb_service *svc)
{
	if ((id->match_flags & TBSVC_MATCH_PROTOCOL_KEY) &&
	    strcmp(id->protocol_key, svc->key))
		return false;
	if ((id->match_flags & TBSVC_MATCH_PROTOCOL_ID) &&
	    id->protocol_id != svc->prtcid)
		return false;
	if ((id->match_flags & TBSVC_MATCH_PROTOCOL_VERSION) &&
	    id->protocol_version != svc->prtcvers)
		return false;
	if ((id->match_flags & TBSVC_MATCH_PROTOCOL_REVISION) &&
	    id->protocol_revision != svc->prtcrevs)
		return false;
	return true;
}

static const struct tb_service_id *
tbe_service_id(struct device *dev, TBE_DRV_CONST struct device_driver *drv)
{
	const struct tb_service_driver *sd =
		container_of(drv, struct tb_service_driver, driver);
	struct tb_service *svc = tb_to_service(dev);
	const struct tb_service_id *id;

	if (!svc || !sd->id_table)
		return NULL;
	for (id = sd->id_table; id->match_flags; id++)
		if (tbe_service_matches(id, svc))
			return id;
	return NULL;
}

static int tbe_bus_match(struct device *dev,
			 TBE_DRV_CONST struct device_driver *drv)
{
	return !!tbe_service_id(dev, drv);
}

static int tbe_bus_probe(struct device *dev)
{
	struct tb_service_driver *sd =
		container_of(dev->driver, struct tb_service_driver, driver);

	return sd->probe(tb_to_service(dev), tbe_service_id(dev, dev->driver));
}

static void tbe_bus_remove(struct device *dev)
{
	struct tb_service_driver *sd =
		container_of(dev->driver, struct tb_service_driver, driver);

	if (sd->remove)
		sd->remove(tb_to_service(dev));
}

/* Named like the real bus: /sys/bus/thunderbolt/drivers/<name>/unbind */
static struct bus_type tbe_bus = {
	.name = "thunderbolt",
	.match = tbe_bus_match,
	.probe = tbe_bus_probe,
	.remove = tbe_bus_remove,
};

int tb_register_service_driver(struct tb_service_driver *drv)
{
	drv->driver.bus = &tbe_bus;
	return driver_register(&drv->driver);
}
EXPORT_SYMBOL_GPL(tb_register_service_driver);

void tb_unregister_service_driver(struct tb_service_driver *drv)
{
	driver_unregister(&drv->driver);
}
EXPORT_SYMBOL_GPL(tb_unregister_service_driver);

static ssize_t key_show(struct device *dev, struct device_attribute *attr,
			char *buf)
{
	return sysfs_emit(buf, "%s\n", tb_to_service(dev)->key);
}
static DEVICE_ATTR_RO(key);

static struct attribute *tbe_service_attrs[] = {
	&dev_attr_key.attr,
	NULL,
};
ATTRIBUTE_GROUPS(tbe_service);

static void tbe_service_release(struct device *dev)
{
	struct tb_service *svc = container_of(dev, struct tb_service, dev);
	struct tb_xdomain *xd = tb_service_parent(svc);

	ida_free(&xd->service_ids, svc->id);
	kfree(svc->key);
	kfree(svc);
	tb_xdomain_put(xd);
}

TBE_CONST struct device_type tb_service_type = {
	.name = "thunderbolt_service",
	.groups = tbe_service_groups,
	.release = tbe_service_release,
};
EXPORT_SYMBOL_GPL(tb_service_type);

static void tbe_xdomain_release(struct device *dev)
{
	struct tb_xdomain *xd = container_of(dev, struct tb_xdomain, dev);

	ida_destroy(&xd->service_ids);
	ida_destroy(&xd->in_hopids);
	ida_destroy(&xd->out_hopids);
	kfree(xd->remote_uuid);
	kfree(xd);
}

TBE_CONST struct device_type tb_xdomain_type = {
	.name = "thunderbolt_xdomain",
	.release = tbe_xdomain_release,
};
EXPORT_SYMBOL_GPL(tb_xdomain_type);

static void tbe_domain_release(struct device *dev)
{
	kfree(container_of(dev, struct tb, dev));
}

static const struct device_type tbe_domain_type = {
	.name = "thunderbolt_domain",
	.release = tbe_domain_release,
};

/* Directories: published by both hosts, seen as services by the other. */

int tb_register_property_dir(const char *key, struct tb_property_dir *dir)
{
	int ret = -EEXIST;

	if (!key || strlen(key) > TB_PROPERTY_KEY_SIZE)
		return -EINVAL;
	mutex_lock(&tbe_svc_lock);
	if (!tb_property_find(tbe_root, key, TB_PROPERTY_TYPE_DIRECTORY))
		ret = tb_property_add_dir(tbe_root, key, dir);
	mutex_unlock(&tbe_svc_lock);
	if (!ret)
		tbe_services_update();
	return ret;
}
EXPORT_SYMBOL_GPL(tb_register_property_dir);

void tb_unregister_property_dir(const char *key, struct tb_property_dir *dir)
{
	struct tb_property *p;

	mutex_lock(&tbe_svc_lock);
	p = tb_property_find(tbe_root, key, TB_PROPERTY_TYPE_DIRECTORY);
	if (p && p->value.dir == dir)
		tb_property_remove(p);
	mutex_unlock(&tbe_svc_lock);
	tbe_services_update();
}
EXPORT_SYMBOL_GPL(tb_unregister_property_dir);

static int tbe_service_stale(struct device *dev, void *data)
{
	struct tb_service *svc = tb_to_service(dev);

	if (svc && !tb_property_find(tbe_root, svc->key,
				     TB_PROPERTY_TYPE_DIRECTORY))
		device_unregister(dev);
	return 0;
}

static int tbe_service_has_key(struct device *dev, void *key)
{
	struct tb_service *svc = tb_to_service(dev);

	return svc && !strcmp(svc->key, key);
}

static u32 tbe_dir_value(struct tb_property_dir *dir, const char *key)
{
	struct tb_property *p = tb_property_find(dir, key,
						 TB_PROPERTY_TYPE_VALUE);

	return p ? p->value.immediate : 0;
}

/* Under tbe_svc_lock: xd's service for directory p. */
static void tbe_service_add(struct tb_xdomain *xd, struct tb_property *p)
{
	struct tb_service *svc = kzalloc(sizeof(*svc), GFP_KERNEL);
	int id;

	if (!svc)
		return;
	svc->key = kstrdup(p->key, GFP_KERNEL);
	id = ida_alloc(&xd->service_ids, GFP_KERNEL);
	if (!svc->key || id < 0) {
		if (id >= 0)
			ida_free(&xd->service_ids, id);
		kfree(svc->key);
		kfree(svc);
		return;
	}
	svc->id = id;
	svc->prtcid = tbe_dir_value(p->value.dir, "prtcid");
	svc->prtcvers = tbe_dir_value(p->value.dir, "prtcvers");
	svc->prtcrevs = tbe_dir_value(p->value.dir, "prtcrevs");
	svc->prtcstns = tbe_dir_value(p->value.dir, "prtcstns");
	svc->dev.bus = &tbe_bus;
	svc->dev.type = &tb_service_type;
	svc->dev.parent = get_device(&xd->dev);
	dev_set_name(&svc->dev, "%s.%d", dev_name(&xd->dev), id);
	if (device_register(&svc->dev))
		put_device(&svc->dev);
}

/* Every plugged XDomain gets the services the directories now describe. */
void tbe_services_update(void)
{
	struct tb_xdomain *xd;
	struct tb_property *p;
	struct device *dev;
	int i;

	mutex_lock(&tbe_svc_lock);
	for (i = 0; i < TBE_HOSTS; i++) {
		xd = tbe_hosts[i] ? tbe_hosts[i]->xd : NULL;
		if (!xd)
			continue;
		device_for_each_child_reverse(&xd->dev, NULL,
					      tbe_service_stale);
		list_for_each_entry(p, &tbe_root->properties, list) {
			if (p->type != TB_PROPERTY_TYPE_DIRECTORY)
				continue;
			dev = device_find_child(&xd->dev, p->key,
						tbe_service_has_key);
			if (dev)
				put_device(dev);
			else
				tbe_service_add(xd, p);
		}
	}
	mutex_unlock(&tbe_svc_lock);
}

/* Host h sees host peer over the cable: its XDomain, named as the core does */
int tbe_xdomain_add(struct tbe_host *h, struct tbe_host *peer)
{
	struct tb_xdomain *xd = kzalloc(sizeof(*xd), GFP_KERNEL);
	int ret;

	if (!xd)
		return -ENOMEM;
	xd->remote_uuid = kmemdup(&peer->uuid, sizeof(peer->uuid), GFP_KERNEL);
	if (!xd->remote_uuid) {
		kfree(xd);
		return -ENOMEM;
	}
	xd->tb = h->tb;
	xd->local_uuid = &h->uuid;
	xd->route = TBE_ROUTE;
	xd->vendor = 0x8086;
	xd->device = 0x4b34;
	xd->local_max_hopid = tbe_max_hopid;
	xd->remote_max_hopid = tbe_max_hopid;
	xd->link_speed = 20;
	xd->link_width = 1;
	mutex_init(&xd->lock);
	ida_init(&xd->service_ids);
	ida_init(&xd->in_hopids);
	ida_init(&xd->out_hopids);
	xd->dev.bus = &tbe_bus;
	xd->dev.type = &tb_xdomain_type;
	xd->dev.parent = &h->tb->dev;
	dev_set_name(&xd->dev, "%u-%llx", h->index, xd->route);
	ret = device_register(&xd->dev);
	if (ret) {
		put_device(&xd->dev);
		return ret;
	}
	mutex_lock(&tbe_svc_lock);
	h->xd = xd;
	mutex_unlock(&tbe_svc_lock);
	dev_info(&xd->dev, "new host found, host %d\n", peer->index);
	return 0;
}

static int tbe_service_unregister(struct device *dev, void *data)
{
	device_unregister(dev);
	return 0;
}

/* Unplug: services first (their drivers' remove), then the XDomain. */
void tbe_xdomain_remove(struct tbe_host *h)
{
	struct tb_xdomain *xd = h->xd;

	if (!xd)
		return;
	mutex_lock(&xd->lock);
	xd->is_unplugged = true;
	mutex_unlock(&xd->lock);
	mutex_lock(&tbe_svc_lock);
	device_for_each_child_reverse(&xd->dev, NULL, tbe_service_unregister);
	h->xd = NULL;
	mutex_unlock(&tbe_svc_lock);
	dev_info(&xd->dev, "host disconnected\n");
	device_unregister(&xd->dev);
}

int tbe_domain_add(struct tbe_host *h)
{
	struct tb *tb = kzalloc(struct_size(tb, privdata, 1), GFP_KERNEL);
	int ret;

	if (!tb)
		return -ENOMEM;
	mutex_init(&tb->lock);
	tb->nhi = &h->nhi;
	tb->index = h->index;
	tb->privdata[0] = (unsigned long)h;
	tb->dev.bus = &tbe_bus;
	tb->dev.type = &tbe_domain_type;
	tb->dev.parent = &h->pdev->dev;
	dev_set_name(&tb->dev, "domain%d", h->index);
	ret = device_register(&tb->dev);
	if (ret) {
		put_device(&tb->dev);
		return ret;
	}
	h->tb = tb;
	return 0;
}

void tbe_domain_remove(struct tbe_host *h)
{
	device_unregister(&h->tb->dev);
}

int tbe_bus_init(void)
{
	int ret;

	tbe_root = tb_property_create_dir(NULL);
	if (!tbe_root)
		return -ENOMEM;
	ret = bus_register(&tbe_bus);
	if (ret)
		tb_property_free_dir(tbe_root);
	return ret;
}

void tbe_bus_exit(void)
{
	struct tb_property *p, *tmp;

	bus_unregister(&tbe_bus);
	/* directories left behind belong to their (gone) service drivers */
	list_for_each_entry_safe(p, tmp, &tbe_root->properties, list)
		tb_property_remove(p);
	tb_property_free_dir(tbe_root);
}
