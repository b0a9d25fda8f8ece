#!/usr/bin/python3
"""Host half of run-guest.sh -p: lets the guest unplug and re-plug its hpu device.

    hotplug-relay.py QMP-SOCKET OUTDIR DEVICE-ARGS

The guest (tests/guest/torture_test.c) writes "device_del" or "device_add" into
OUTDIR/hotplug.req (its $HPU_OUT, shared over 9p; written whole, then renamed there);
the relay runs it on QEMU's QMP socket, as the HMP command "device_del hpu0" or
"device_add DEVICE-ARGS" (the launcher's -device argument, with id=hpu0), and answers
in OUTDIR/hotplug.ack: "ok", or "error: WHY".  A device_del is answered once QEMU has
the device back from the guest (its DEVICE_DELETED event), so that a device_add may
follow.  Only those two commands are run.  Ends when QEMU closes the socket.
"""
import json
import os
import socket
import sys
import time

DEVICE_ID = "hpu0"
# A guest eject goes through the guest's ACPI hot-plug driver, under TCG.
DELETE_TIMEOUT_S = 120


class Qmp:
    def __init__(self, path):
        for _ in range(600):
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                time.sleep(0.1)
        else:
            sys.exit("hotplug-relay: no QMP socket at " + path)
        self.file = self.sock.makefile("rw")
        self.events = []
        self.read()  # the greeting
        self.execute("qmp_capabilities")

    def read(self):
        line = self.file.readline()
        if not line:
            sys.exit(0)  # QEMU is gone
        return json.loads(line)

    def execute(self, command, **arguments):
        self.file.write(json.dumps({"execute": command, "arguments": arguments}) + "\n")
        self.file.flush()
        while True:
            msg = self.read()
            if "event" in msg:
                self.events.append(msg)
            elif "error" in msg:
                return "error: " + msg["error"].get("desc", "?")
            elif "return" in msg:
                # HMP prints its errors; a command that worked prints nothing.
                out = msg["return"].strip() if isinstance(msg["return"], str) else ""
                return "error: " + out if out else "ok"

    def deleted(self):
        """Waits for the device's DEVICE_DELETED event."""
        deadline = time.monotonic() + DELETE_TIMEOUT_S
        while True:
            for ev in self.events:
                if (ev["event"] == "DEVICE_DELETED"
                        and ev.get("data", {}).get("device") == DEVICE_ID):
                    self.events.clear()
                    return "ok"
            left = deadline - time.monotonic()
            if left <= 0:
                return "error: the guest did not give the device back"
            self.sock.settimeout(left)
            try:
                self.events.append(self.read())
            except socket.timeout:
                pass
            finally:
                self.sock.settimeout(None)


def main():
    sock_path, out, device_args = sys.argv[1:4]
    qmp = Qmp(sock_path)
    req = os.path.join(out, "hotplug.req")
    ack = os.path.join(out, "hotplug.ack")
    while True:
        try:
            with open(req) as f:
                what = f.read().strip()
            os.unlink(req)
        except FileNotFoundError:
            time.sleep(0.1)
            continue
        qmp.events.clear()
        if what == "device_del":
            answer = qmp.execute("human-monitor-command",
                                 **{"command-line": "device_del " + DEVICE_ID})
            if answer == "ok":
                answer = qmp.deleted()
        elif what == "device_add":
            answer = qmp.execute("human-monitor-command",
                                 **{"command-line": "device_add " + device_args})
        else:
            answer = "error: unknown request " + repr(what)
        with open(ack + ".tmp", "w") as f:
            f.write(answer + "\n")
        os.rename(ack + ".tmp", ack)


if __name__ == "__main__":
    main()
