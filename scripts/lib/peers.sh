# The third-party peers the tests and benchmarks run against, installed
# into .peers/ when missing or of another version. Sourced by scripts/test
# and scripts/bench from the repository root.

# The folder of the build caches: $MCP_BRIDGE_BUILD_CACHE, else
# ~/.cache/mcp-bridge-build.
build_cache_root() {
  echo "${MCP_BRIDGE_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-bridge-build}"
}

# A build folder NAME that outlives the clone: a clean clone on a machine
# that ran these checks before (CI's) rebuilds only what changed. Cargo
# checks every artifact's fingerprint, so what is stale is rebuilt, never
# used.
build_cache() {
  local dir
  dir="$(build_cache_root)/$1"
  mkdir -p "$dir"
  echo "$dir"
}

# Empties the build caches once they pass 40 GiB (each clone's own crates
# add a little); run once, before the checks that use them.
trim_build_cache() {
  local root
  root="$(build_cache_root)"
  if [ -d "$root" ] && [ "$(du -s --block-size=1G "$root" 2>/dev/null | cut -f1)" -gt 40 ]; then
    echo "the build cache $root passed 40 GiB: emptied" >&2
    rm -rf "$root"
  fi
}

# A virtual environment .peers/DIR holding exactly the given
# PACKAGE==VERSION pins (extras allowed: name[extra]==version); made anew
# when one is missing or of another version.
install_python_venv() {
  local dir="$1"
  shift
  if ! ".peers/$dir/bin/python" - "$@" 2>/dev/null <<'PY'
import importlib.metadata as m, re, sys
pins = [re.match(r"([^\[=]+)(?:\[.*\])?==(.+)", pin).groups() for pin in sys.argv[1:]]
sys.exit(any(m.version(name) != version for name, version in pins))
PY
  then
    echo "installing $* into .peers/$dir" >&2
    python3 -m venv ".peers/$dir"
    ".peers/$dir/bin/pip" install --quiet --disable-pip-version-check "$@"
  fi
}

# The Python MCP SDK: the interoperability tests' peer and a benchmarked server.
install_python_peer() {
  install_python_venv py "mcp==2.3.0"
}

# The LLM vendors' Python SDKs, whose published tool types check the
# definitions a Toolset exports (OpenAI's and Anthropic's `tools`).
install_llm_sdks() {
  install_python_venv llm "openai==3.57.0" "anthropic==2.15.0"
}

# fastmcp, a dual-era Python server framework (its ctx.elicit works only
# on 2025-11-25 connections), and langchain-mcp-adapters with the Python
# mcp 1.x client it is used with (one session per tool call).
install_python_frameworks() {
  install_python_venv fastmcp "fastmcp==4.1.7"
  install_python_venv langchain "langchain-mcp-adapters==0.3.2" "mcp==1.30.0"
}

# Google's MCP gRPC transport: its generated Python stubs with grpcio (and
# grpcio-status, for a status's details), the peer (client and server) of
# our gRPC transport. (Its Python server package, mcp-grpc-transport 0.0.1,
# is an empty placeholder.)
install_grpc_peer() {
  install_python_venv grpc "mcp-grpc-transport-proto==0.2.0" "grpcio==1.85.3" "grpcio-status==1.85.3"
}

# What scripts/package builds the Python package with: maturin, and zig
# (the ziglang package) as the linker that targets glibc 2.17.
install_packaging_tools() {
  install_python_venv packaging "maturin==1.16.0" "ziglang==0.15.2"
}

# @anthropic-ai/mcpb: validates and packs the MCP Bundle (.mcpb) that
# Claude Desktop installs in one click.
MCPB_VERSION=2.1.2
install_mcpb() {
  install_npm_peer mcpb @anthropic-ai/mcpb "$MCPB_VERSION"
}

# The MCP Registry's server.json schema, as published (2025-12-11, the
# newest): skillsaw bundles each released schema byte for byte from
# modelcontextprotocol/static; jsonschema checks server.json against it.
install_registry_schema() {
  install_python_venv registry "skillsaw==0.22.0" "jsonschema[format-nongpl]==4.25.1"
}

# mdBook: builds the book in docs/. Without its server and file watcher,
# which only `mdbook serve` needs.
MDBOOK_VERSION=0.5.4
install_mdbook() {
  if ! .peers/mdbook/bin/mdbook --version 2>/dev/null | grep -qx "mdbook v$MDBOOK_VERSION"; then
    echo "installing mdbook $MDBOOK_VERSION into .peers/mdbook" >&2
    cargo install --quiet --locked --root .peers/mdbook --target-dir "$(build_cache mdbook)" \
      --no-default-features --features search \
      --version "$MDBOOK_VERSION" mdbook
  fi
}

# An npm package at an exact version into .peers/DIR.
install_npm_peer() {
  local dir="$1" package="$2" version="$3"
  if ! grep -qs "\"version\": \"$version\"" ".peers/$dir/node_modules/$package/package.json"; then
    echo "installing $package $version into .peers/$dir" >&2
    mkdir -p ".peers/$dir"
    (cd ".peers/$dir" && { [ -f package.json ] || npm init -y >/dev/null; } &&
      npm install --no-audit --no-fund --silent "$package@$version")
  fi
}

# The TypeScript SDK 1.x: the legacy client of the end-to-end bridge tests.
install_ts_sdk() {
  install_npm_peer ts @modelcontextprotocol/sdk 1.32.2
  install_npm_peer ts2 @modelcontextprotocol/client 2.4.0
}

# mcp-remote: what users run today in front of a remote server; benchmarked
# against `mcp-bridge URL`.
install_mcp_remote() {
  install_npm_peer bench mcp-remote 0.15.1
}

# The gateways `mcp-bridge --listen` is measured against, each serving a
# stdio server over Streamable HTTP: supergateway (Node) and mcp-proxy
# (Python).
install_gateway_peers() {
  install_npm_peer bench supergateway 4.0.0
  install_python_venv mcp-proxy "mcp-proxy==0.13.0"
}

# The servers of the daemon scenario (one process per server shared by
# every client against one per client): the reference filesystem and
# memory servers (2025-11-25, TypeScript SDK 1.x) and the reference time
# server (2025-11-25, Python).
install_daemon_peers() {
  install_npm_peer daemon @modelcontextprotocol/server-filesystem 2026.8.31
  install_npm_peer daemon @modelcontextprotocol/server-memory 2026.8.31
  install_python_venv time "mcp-server-time==2026.10.19"
}

# The TypeScript SDK 2.x server (`createMcpHandler`, both revisions on one
# endpoint) and its node:http adapter: the legacy HTTP benchmark's peer.
install_ts_server_v2() {
  install_npm_peer bench @modelcontextprotocol/server 2.4.0
  install_npm_peer bench @modelcontextprotocol/node 2.1.2
}

# The reference 2025-11-25 server (TypeScript SDK 1.x): the legacy upstream
# of the SDK client's and the bridge's era tests.
install_server_everything() {
  install_npm_peer everything @modelcontextprotocol/server-everything 2026.8.31
}

# node's oidc-provider (a certified OpenID provider: the real authorization
# server of the protected-server tests) and puppeteer-core, which drives
# Debian's Chromium through its login and consent pages.
install_oidc_peer() {
  install_npm_peer oidc oidc-provider 9.13.3
  install_npm_peer oidc puppeteer-core 24.43.1
}

# Debian packages, each given as PACKAGE:PROGRAM, installed with apt-get
# (as root or through sudo) when their program is missing.
install_debian_packages() {
  local missing="" entry
  for entry in "$@"; do
    [ -x "${entry#*:}" ] || missing="$missing ${entry%%:*}"
  done
  [ -n "$missing" ] || return 0
  echo "installing Debian's packages:$missing" >&2
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  # shellcheck disable=SC2086 # one word per package
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
}
