# SPDX-License-Identifier: GPL-2.0-or-later
# QEMU device set for the hpu test guest: the pc machine, virtio-9p to share
# the tree with the guest, and the hpu accelerator.
CONFIG_I440FX=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_9P=y
CONFIG_HPU=y
