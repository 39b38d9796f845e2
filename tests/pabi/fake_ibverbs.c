// SPDX-License-Identifier: MIT
/*
 * A stand-in libibverbs for the configure-time checks of the provider's
 * private ABI (tests/pabi): it exports only the registration entry point,
 * verbs_register_driver_<FAKE_PABI>, in version IBVERBS_PRIVATE_<FAKE_PABI>.
 */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

void CAT(verbs_register_driver_, FAKE_PABI)(const void *ops);
void CAT(verbs_register_driver_, FAKE_PABI)(const void *ops)
{
	(void)ops;
}
