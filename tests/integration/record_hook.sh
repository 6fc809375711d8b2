#!/bin/sh
# The test cluster's [[policy.hook]]: appends what healthd says it did to the file given, one line per
# run: ACTION NODE CODE JOB_ID (node_checks.bats reads it).
printf '%s %s %s %s\n' "$HEALTHD_ACTION" "$HEALTHD_NODE" "$HEALTHD_CODE" "$HEALTHD_JOB_ID" >>"$1"
