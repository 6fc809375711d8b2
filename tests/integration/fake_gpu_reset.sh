#!/bin/sh
# The test cluster's [cure] reset_command: fake_gpu_reset.sh HOSTDIR BUS_ID. What a GPU reset does to
# the parts healthd sees is done to the node's fake NVML scenario. HOSTDIR/etc/gpu-reset says how it
# goes: "fail" (exit 3, as nvidia-smi does when the GPU is busy), "no-cure" (exit 0, the fault stays),
# anything else or no file: the reset cures (the scenario becomes two healthy GPUs). Each run appends
# "BUS_ID OUTCOME" to HOSTDIR/gpu-reset.log.
host=$1 bus=$2
mode=$(cat "$host/etc/gpu-reset" 2>/dev/null || echo cure)
case $mode in
  fail)
    echo "$bus fail" >>"$host/gpu-reset.log"
    echo "Unable to reset GPU $bus: In use by another client" >&2
    exit 3 ;;
  no-cure)
    echo "$bus no-cure" >>"$host/gpu-reset.log" ;;
  *)
    printf '%s\n' '{"devices": [{}, {}]}' >"$host/nvml.json.reset" && mv "$host/nvml.json.reset" "$host/nvml.json"
    echo "$bus cure" >>"$host/gpu-reset.log" ;;
esac
exit 0
