#!/bin/sh
# the A/B of sessions 4–7 (BENCHMARKS.md): count(*), all functions, l_diversity and
# count(DISTINCT patient_id). See ab.sh.
QUERIES="floor all l distinct" exec "$(dirname "$0")/ab.sh" "$@"
