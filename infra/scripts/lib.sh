# Shared by the scripts (source it; needs $root set to the repository).

# A free loopback port.
free_port() {
  "$root/.venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_until_up NAME URL PID LOG SECONDS: polls URL until it answers; fails, showing LOG, if the
# process PID dies or SECONDS pass first.
wait_until_up() {
  local name="$1" url="$2" pid="$3" log="$4" tries=$(( $5 * 10 ))
  for _ in $(seq 1 "$tries"); do
    if "$root/.venv/bin/python" -c "import urllib.request; urllib.request.urlopen('$url', timeout=1)" 2>/dev/null; then
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then echo "$name failed to start:" >&2; cat "$log" >&2; return 1; fi
    sleep 0.1
  done
  echo "$name did not answer at $url within $5 s:" >&2
  cat "$log" >&2
  return 1
}

# The cargo target directory, wherever CARGO_TARGET_DIR or a cargo config puts it.
target_dir() {
  cargo metadata --format-version 1 --no-deps \
    | "$root/.venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])'
}
