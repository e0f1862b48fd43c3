#!/usr/bin/env python3
"""Runs unittest test names (modules, classes or cases) as `python3 -m unittest -v` does, and
reports to ctest: exit 0 when every case passed, 1 when any failed or errored, and 77 (the
tests' SKIP_RETURN_CODE) when none failed but some skipped, so that ctest's summary lists the
test as skipped; each skipped case is printed with its reason ("SKIPPED name: reason").

A case skips only for hardware the host lacks (a GPU, AVX-512, AVX-512 BF16, ...) or where the
test's own environment cannot provide a service (a PostgreSQL server in a root without the
`postgres` user); missing software fails instead, since scripts/setup.sh --tests installs it.

    python3 run_tests.py NAME [NAME...]
"""
import sys
import unittest

SKIPPED = 77


def main(names):
    suite = unittest.defaultTestLoader.loadTestsFromNames(names)
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    for case, reason in result.skipped:
        print(f"SKIPPED {case.id()}: {reason}")
    if not result.wasSuccessful():
        return 1
    if result.testsRun == 0:
        print("no test ran")
        return 1
    return SKIPPED if result.skipped else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
