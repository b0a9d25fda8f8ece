/* SPDX-License-Identifier: MIT */
/*
 * hpu-mkfw: builds a firmware image (header + payload) per hpu_fw_if.h.
 *
 *   hpu-mkfw -V MAJOR.MINOR.PATCH -p PAYLOAD -o IMAGE
 *
 * The image is written to a temporary file and renamed, so a reader never
 * sees a half-written image.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hpu_fw_if.h"

_Static_assert(sizeof(struct hpu_fw_header) == HPU_FW_HEADER_SIZE, "header size is frozen");
_Static_assert(__builtin_offsetof(struct hpu_fw_header, crc32) == HPU_FW_CRC_OFFSET,
	       "crc32 offset is frozen");
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "image fields are little-endian");

static void usage(FILE *f)
{
	fprintf(f, "usage: hpu-mkfw -V MAJOR.MINOR.PATCH -p PAYLOAD -o IMAGE\n");
}

static int read_file(const char *path, unsigned char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return -EIO;
	}
	*buf = malloc(n ? n : 1);
	if (!*buf) {
		fclose(f);
		return -ENOMEM;
	}
	if (fread(*buf, 1, n, f) != (size_t)n) {
		free(*buf);
		fclose(f);
		return -EIO;
	}
	fclose(f);
	*len = n;
	return 0;
}

static int write_image(const char *path, const struct hpu_fw_header *hdr,
		       const unsigned char *payload, size_t len)
{
	char tmp[4096];
	FILE *f;
	int ok;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "wb");
	if (!f)
		return -errno;
	ok = fwrite(hdr, sizeof(*hdr), 1, f) == 1 && fwrite(payload, 1, len, f) == len;
	if (fclose(f) || !ok) {
		remove(tmp);
		return -EIO;
	}
	return rename(tmp, path) ? -errno : 0;
}

int main(int argc, char **argv)
{
	const char *version = NULL, *payload_path = NULL, *out = NULL;
	struct hpu_fw_header hdr = { 0 };
	unsigned int maj, min, pat;
	unsigned char *payload = NULL;
	size_t len = 0;
	uLong crc;
	int opt, err;

	while ((opt = getopt(argc, argv, "V:p:o:h")) != -1) {
		switch (opt) {
		case 'V': version = optarg; break;
		case 'p': payload_path = optarg; break;
		case 'o': out = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!version || !payload_path || !out || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (sscanf(version, "%u.%u.%u", &maj, &min, &pat) != 3 || maj > 0xffff || min > 0xff ||
	    pat > 0xff) {
		fprintf(stderr, "hpu-mkfw: bad version '%s' (want MAJOR.MINOR.PATCH)\n", version);
		return 2;
	}
	err = read_file(payload_path, &payload, &len);
	if (err) {
		fprintf(stderr, "hpu-mkfw: %s: %s\n", payload_path, strerror(-err));
		return 1;
	}
	if (len > HPU_FW_MAX_IMAGE_SIZE - HPU_FW_HEADER_SIZE) {
		fprintf(stderr, "hpu-mkfw: %s: %zu bytes, the image limit is %u\n", payload_path,
			len, HPU_FW_MAX_IMAGE_SIZE);
		free(payload);
		return 1;
	}

	hdr.magic = HPU_FW_MAGIC;
	hdr.if_version = HPU_FW_IF_VERSION;
	hdr.header_size = HPU_FW_HEADER_SIZE;
	hdr.payload_size = len;
	hdr.fw_version = HPU_FW_VERSION(maj, min, pat);
	snprintf(hdr.version_str, sizeof(hdr.version_str), "hpu-fw %u.%u.%u", maj, min, pat);
	crc = crc32(0, (const Bytef *)&hdr, HPU_FW_CRC_OFFSET);
	hdr.crc32 = crc32(crc, payload, len);

	err = write_image(out, &hdr, payload, len);
	free(payload);
	if (err) {
		fprintf(stderr, "hpu-mkfw: %s: %s\n", out, strerror(-err));
		return 1;
	}
	return 0;
}
