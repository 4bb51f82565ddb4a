# Runs checks side by side, each one's output into target/test-logs/NAME.log,
# printed when it ends (whole, so logs do not interleave). Sourced by
# scripts/test.

early_names=()
early_pids=()

# Starts the command `$2...` now as the check NAME ($1), at the lowest
# priority, in a process group of its own, to be waited for by side_by_side
# with the others; stopped (the whole group) if this script exits first.
# The group comes from job control (`set -m`), not from `setsid`: a new
# session is a new scheduler autogroup on Linux, which gets an equal share
# of the processors whatever its nice value (CI's tests then built at half
# speed beside it).
start_early() {
  local name="$1" logs=target/test-logs
  shift
  mkdir -p "$logs"
  set -m
  # shellcheck disable=SC2016
  nice -n 19 bash -c 'TIMEFORMAT="scripts/test: $0 took %R s (processors: %U s user, %S s system)"; time "$@"' \
    "$name" "$@" >"$logs/$name.log" 2>&1 &
  set +m
  early_pids+=("$!")
  early_names+=("$name")
  trap stop_early EXIT
}

stop_early() {
  local pid
  for pid in "${early_pids[@]}"; do
    kill -- "-$pid" 2>/dev/null || true
  done
}

# Runs the shell functions given side by side, then waits for them and for
# the checks start_early started; returns non-zero when any of them failed,
# after all ended. The checks that failed are named again at the end, each
# with its log's last lines: a reader of only the output's tail (CI's
# record) sees what failed, not the last log printed.
side_by_side() {
  local logs=target/test-logs name index
  local -a pids=("${early_pids[@]}") names=("${early_names[@]}") failures=()
  mkdir -p "$logs"
  for name in "$@"; do
    (
      trap 'echo "scripts/test: $name ended ${SECONDS} s into scripts/test" >&2' EXIT
      TIMEFORMAT="scripts/test: $name took %R s (processors: %U s user, %S s system)"
      time "$name"
    ) >"$logs/$name.log" 2>&1 &
    pids+=("$!")
    names+=("$name")
  done
  for index in "${!pids[@]}"; do
    name="${names[$index]}"
    if wait "${pids[$index]}"; then
      echo "scripts/test: $name: passed" >&2
    else
      echo "scripts/test: $name: FAILED" >&2
      failures+=("$name")
    fi
    cat "$logs/$name.log" >&2
  done
  for name in "${failures[@]}"; do
    echo "scripts/test: $name FAILED; the last 60 lines of $logs/$name.log:" >&2
    tail -n 60 "$logs/$name.log" >&2
  done
  early_pids=()
  early_names=()
  [ "${#failures[@]}" -eq 0 ] || {
    echo "scripts/test: failed: ${failures[*]}" >&2
    return 1
  }
}
