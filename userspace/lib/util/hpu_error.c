/* SPDX-License-Identifier: MIT */
/* The last error message, one per thread so threads never see each other's. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <hpu/hpu.h>

#include "../util/util.h"

#define HPU_ERROR_MAX 512

static _Thread_local char hpu_error_msg[HPU_ERROR_MAX];

int hpu_error_set(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(hpu_error_msg, sizeof(hpu_error_msg), fmt, ap);
	va_end(ap);
	return -err;
}

int hpu_error_errno(const char *fmt, ...)
{
	int err = errno;
	va_list ap;
	size_t len;

	va_start(ap, fmt);
	vsnprintf(hpu_error_msg, sizeof(hpu_error_msg), fmt, ap);
	va_end(ap);
	len = strlen(hpu_error_msg);
	snprintf(hpu_error_msg + len, sizeof(hpu_error_msg) - len, ": %s", strerror(err));
	return -err;
}

int hpu_error_in(const char *func, int ret)
{
	char detail[HPU_ERROR_MAX];
	int len;

	if (ret >= 0)
		return ret;
	memcpy(detail, hpu_error_msg, sizeof(detail));
	len = snprintf(hpu_error_msg, sizeof(hpu_error_msg), "%s: ", func);
	snprintf(hpu_error_msg + len, sizeof(hpu_error_msg) - len, "%s", detail);
	return ret;
}

const char *hpu_last_error(void)
{
	return hpu_error_msg;
}
