// SPDX-License-Identifier: MIT
/* Finding the provider and the shim for `usb4v-sim exec`. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "locate.h"

static bool file_exists(const char *path)
{
	struct stat sb;
	return !stat(path, &sb) && S_ISREG(sb.st_mode);
}

static void self_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n <= 0) {
		snprintf(buf, len, ".");
		return;
	}
	buf[n] = 0;
	slash = strrchr(buf, '/');
	if (slash)
		*slash = 0;
}

/* Canonical absolute path of an existing file, or false. */
static bool canon(const char *path, char *out)
{
	return realpath(path, out) != NULL;
}

/*
 * The provider as RDMAV_DRIVERS wants it: an absolute prefix to which
 * libibverbs appends "-rdmav<PABI>.so".
 */
bool u4vs_find_provider(char *prefix, size_t len)
{
	char self[PATH_MAX], cand[PATH_MAX + 64], real[PATH_MAX];
	const char *env = getenv("USB4V_PROVIDER_PATH");
	size_t sl = strlen(U4V_PROVIDER_SUFFIX);

	if (env && *env) {
		struct stat sb;
		size_t el = strlen(env);

		/* a directory, the .so itself, or the prefix */
		if (!stat(env, &sb) && S_ISDIR(sb.st_mode))
			snprintf(cand, sizeof(cand), "%s/" PROVIDER_BASE "%s",
				 env, U4V_PROVIDER_SUFFIX);
		else if (el > sl && !strcmp(env + el - sl, U4V_PROVIDER_SUFFIX))
			snprintf(cand, sizeof(cand), "%s", env);
		else
			snprintf(cand, sizeof(cand), "%s%s", env,
				 U4V_PROVIDER_SUFFIX);
		if (!file_exists(cand) || !canon(cand, real))
			fail(1, "USB4V_PROVIDER_PATH=%s: no provider at %s",
			     env, cand);
		goto found;
	}

	self_dir(self, sizeof(self));
	const char *dirs[] = {
	    U4V_BUILD_PROVIDER_REL,
	    U4V_INSTALL_LIBDIR_REL "/usb4verbs",
	    U4V_INSTALL_LIBDIR_REL "/libibverbs",
	};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(cand, sizeof(cand), "%s/%s/" PROVIDER_BASE "%s", self,
			 dirs[i], U4V_PROVIDER_SUFFIX);
		if (file_exists(cand) && canon(cand, real))
			goto found;
	}
	const char *abs[] = {U4V_INSTALL_LIBDIR "/usb4verbs",
			     U4V_INSTALL_LIBDIR "/libibverbs"};
	for (size_t i = 0; i < sizeof(abs) / sizeof(abs[0]); i++) {
		snprintf(cand, sizeof(cand), "%s/" PROVIDER_BASE "%s", abs[i],
			 U4V_PROVIDER_SUFFIX);
		if (file_exists(cand) && canon(cand, real))
			goto found;
	}
	return false;

found : {
	size_t rl = strlen(real);
	if (rl <= sl || strcmp(real + rl - sl, U4V_PROVIDER_SUFFIX))
		fail(1, "provider %s does not end in %s", real,
		     U4V_PROVIDER_SUFFIX);
	real[rl - sl] = 0;
	if (strpbrk(real, ":; \t\n"))
		fail(1,
		     "provider path %s contains ':', ';' or blanks, which "
		     "RDMAV_DRIVERS cannot carry",
		     real);
	if (strlen(real) >= len)
		fail(1, "provider path too long");
	strcpy(prefix, real);
	return true;
}
}

bool u4vs_find_shim(char *out, size_t len)
{
	char self[PATH_MAX], cand[PATH_MAX + 64], real[PATH_MAX];
	const char *env = getenv("USB4V_SHIM_PATH");

	if (env && *env) {
		if (!file_exists(env) || !canon(env, real))
			fail(1, "USB4V_SHIM_PATH=%s: no such file", env);
		goto found;
	}
	self_dir(self, sizeof(self));
	const char *rel[] = {".", U4V_INSTALL_LIBDIR_REL "/usb4verbs"};
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(cand, sizeof(cand), "%s/%s/" SHIM_FILE, self, rel[i]);
		if (file_exists(cand) && canon(cand, real))
			goto found;
	}
	snprintf(cand, sizeof(cand),
		 U4V_INSTALL_LIBDIR "/usb4verbs/" SHIM_FILE);
	if (file_exists(cand) && canon(cand, real))
		goto found;
	return false;
found:
	if (strpbrk(real, ": \t\n"))
		fail(1,
		     "shim path %s contains ':' or blanks, which LD_PRELOAD "
		     "cannot carry",
		     real);
	if (strlen(real) >= len)
		fail(1, "shim path too long");
	strcpy(out, real);
	return true;
}
