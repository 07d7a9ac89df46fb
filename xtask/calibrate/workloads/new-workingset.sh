#!/bin/sh
# A new working set that fits in the box but not in its inactive list,
# after an older one took the active list: the case refault detection
# was made for (mm/workingset.c's header comment; Johannes Weiner, "mm:
# thrash detection-based file cache sizing", 2014).
#
#   new-workingset.sh OLD_MIB NEW_MIB PASSES
#
# Writes two files in the current directory, reads OLD twice (its pages
# go to the active list), then reads NEW PASSES times. With refault
# detection, NEW's refaults are activated, OLD is deactivated and
# evicted, and NEW ends up cached: the later passes do no I/O. Without
# it, NEW's refaulted pages go back to the inactive list, which is too
# small to hold them, and every pass reads most of NEW from the disk.
# Used by `cargo xtask calibrate --kernels` (case 03).
set -eu
old=${1:?OLD_MIB}
new=${2:?NEW_MIB}
passes=${3:?PASSES}
dd if=/dev/zero of=old bs=1M count="$old" status=none
dd if=/dev/zero of=new bs=1M count="$new" status=none
sync
cat old >/dev/null
cat old >/dev/null
i=0
while [ "$i" -lt "$passes" ]; do
    cat new >/dev/null
    i=$((i + 1))
done
rm -f old new
