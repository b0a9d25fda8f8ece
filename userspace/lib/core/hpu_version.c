/* SPDX-License-Identifier: MIT */
/* The version this library was built as, for programs to compare with their header's. */
#include "../core/core.h"

struct hpu_version hpu_version(void)
{
	return (struct hpu_version){
		.major = HPU_VERSION_MAJOR,
		.minor = HPU_VERSION_MINOR,
		.patch = HPU_VERSION_PATCH,
	};
}
