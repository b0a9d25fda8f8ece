# SPDX-License-Identifier: MIT
"""pytest for hpu_torch, with its results also as TAP for `make test`'s count.

`--tap FILE` writes one TAP line per test (a failure at setup, in the test or
at teardown is a "not ok"; a skip is "ok ... # SKIP", which make test counts
as a failure), the failure's text as "# " lines.
"""
import pytest


def pytest_addoption(parser):
    parser.addoption("--tap", metavar="FILE", help="also write the results as TAP to FILE")


class Tap:
    def __init__(self, path):
        self.out = open(path, "w", buffering=1)
        self.n = 0
        self.failed = {}

    def pytest_collection_finish(self, session):
        self.out.write(f"TAP version 13\n1..{len(session.items)}\n")

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed.setdefault(report.nodeid, report)
        if report.when != "teardown":
            if not (report.when == "setup" and report.passed):
                self.last = report
            return
        # One line per test, once its teardown is done.
        self.n += 1
        name = report.nodeid.split("::", 1)[-1]
        failed = self.failed.get(report.nodeid)
        if failed:
            self.out.write(f"not ok {self.n} - {name}\n")
            for line in str(failed.longrepr).splitlines()[-40:]:
                self.out.write(f"# {line}\n")
        elif self.last.skipped:
            self.out.write(f"ok {self.n} - {name} # SKIP {self.last.longrepr[-1]}\n")
        else:
            self.out.write(f"ok {self.n} - {name}\n")


def pytest_configure(config):
    path = config.getoption("--tap")
    if path:
        config.pluginmanager.register(Tap(path), "hpu_tap")
