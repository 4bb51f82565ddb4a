# Runs shell functions side by side, each one's output into
# target/test-logs/NAME.log, printed when it ends (whole, so logs do not
# interleave); returns non-zero when any of them failed, after all ended.
# Sourced by scripts/test.
side_by_side() {
  local logs=target/test-logs failed=0 name
  local -a pids=() names=()
  mkdir -p "$logs"
  for name in "$@"; do
    ("$name") >"$logs/$name.log" 2>&1 &
    pids+=("$!")
    names+=("$name")
  done
  for index in "${!pids[@]}"; do
    name="${names[$index]}"
    if wait "${pids[$index]}"; then
      echo "scripts/test: $name: passed" >&2
    else
      echo "scripts/test: $name: FAILED" >&2
      failed=1
    fi
    cat "$logs/$name.log" >&2
  done
  return "$failed"
}
