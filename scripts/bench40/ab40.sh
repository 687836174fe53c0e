#!/bin/sh
# the first A/B of issue 40 (BENCHMARKS.md): k_anonymity() and all functions. See ab.sh.
QUERIES="k all" exec "$(dirname "$0")/ab.sh" "$@"
