#!/usr/bin/env bash
# The simulator runs the controller's code, not a copy of it: eoc-sim must hold the routing,
# signals, autoscale and controller functions that decide (defined once, by their own libraries),
# and the simulator's library must define none of their namespaces' functions itself.
#   sim_shared_code.sh EOC_SIM LIBEOC_SIM.a LIB.a...   (LIB: the libraries that own the code)
set -euo pipefail
sim=$1 simlib=$2
shift 2
fail=0
defined() { nm -C --defined-only "$@" 2>/dev/null | awk '$2 == "T" { $1 = ""; $2 = ""; print }'; }
program=$(defined "$sim")
owners=$(defined "$@")
for fn in 'eoc::routing::PoolState::Pick' 'eoc::routing::PoolState::ObserveLoad' \
  'eoc::autoscale::Decide' 'eoc::autoscale::InputAt' 'eoc::signals::ParseExposition' \
  'eoc::controller::ReadScrape' 'eoc::controller::ObserveGoodScrape' \
  'eoc::controller::WeighWorkers' 'eoc::controller::DecideTablePublish' \
  'eoc::controller::BuildRoutingTable' 'eoc::controller::UpdatePoolDirectory' \
  'eoc::controller::SelectWorkers' 'eoc::controller::PolicyOf' 'eoc::controller::PodsToDrain'; do
  # the name, then its parameters (or an ABI tag, as [abi:cxx11] on a function returning a string)
  if ! grep -qE " $fn[[(]" <<<"$program"; then
    echo "eoc-sim does not hold $fn"; fail=1
  fi
  if ! grep -qE " $fn[[(]" <<<"$owners"; then
    echo "no owning library defines $fn"; fail=1
  fi
done
copies=$(defined "$simlib" | grep -E '^ +eoc::(routing|signals|autoscale|controller)::' || true)
if [ -n "$copies" ]; then
  echo "the simulator's library defines the controller's functions itself:"
  echo "$copies"
  fail=1
fi
[ "$fail" -eq 0 ] && echo "sim_shared_code: eoc-sim runs the controller's routing, signals and autoscale code"
exit "$fail"
