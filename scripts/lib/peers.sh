# The third-party peers the tests and benchmarks run against, installed
# into .peers/ when missing or of another version. Sourced by scripts/test
# and scripts/bench from the repository root.

# The Python MCP SDK: the interoperability tests' peer and a benchmarked server.
PY_MCP_VERSION=2.3.0
install_python_peer() {
  if ! .peers/py/bin/python -c "import mcp, importlib.metadata as m; assert m.version('mcp') == '$PY_MCP_VERSION'" 2>/dev/null; then
    echo "installing the Python mcp $PY_MCP_VERSION peer into .peers/py" >&2
    python3 -m venv .peers/py
    .peers/py/bin/pip install --quiet --disable-pip-version-check "mcp==$PY_MCP_VERSION"
  fi
}

# The LLM vendors' Python SDKs, whose published tool types check the
# definitions a Toolset exports (OpenAI's and Anthropic's `tools`).
LLM_OPENAI_VERSION=3.57.0
LLM_ANTHROPIC_VERSION=2.15.0
install_llm_sdks() {
  if ! .peers/llm/bin/python -c "import importlib.metadata as m; assert m.version('openai') == '$LLM_OPENAI_VERSION' and m.version('anthropic') == '$LLM_ANTHROPIC_VERSION'" 2>/dev/null; then
    echo "installing openai $LLM_OPENAI_VERSION and anthropic $LLM_ANTHROPIC_VERSION into .peers/llm" >&2
    python3 -m venv .peers/llm
    .peers/llm/bin/pip install --quiet --disable-pip-version-check "openai==$LLM_OPENAI_VERSION" "anthropic==$LLM_ANTHROPIC_VERSION"
  fi
}

# fastmcp, a dual-era Python server framework (its ctx.elicit works only
# on 2025-11-25 connections), and langchain-mcp-adapters with the Python
# mcp 1.x client it is used with (one session per tool call).
FASTMCP_VERSION=4.1.7
LANGCHAIN_MCP_VERSION=0.3.2
LANGCHAIN_PY_MCP_VERSION=1.30.0
install_python_frameworks() {
  if ! .peers/fastmcp/bin/python -c "import importlib.metadata as m; assert m.version('fastmcp') == '$FASTMCP_VERSION'" 2>/dev/null; then
    echo "installing fastmcp $FASTMCP_VERSION into .peers/fastmcp" >&2
    python3 -m venv .peers/fastmcp
    .peers/fastmcp/bin/pip install --quiet --disable-pip-version-check "fastmcp==$FASTMCP_VERSION"
  fi
  if ! .peers/langchain/bin/python -c "import importlib.metadata as m; assert m.version('langchain-mcp-adapters') == '$LANGCHAIN_MCP_VERSION' and m.version('mcp') == '$LANGCHAIN_PY_MCP_VERSION'" 2>/dev/null; then
    echo "installing langchain-mcp-adapters $LANGCHAIN_MCP_VERSION (mcp $LANGCHAIN_PY_MCP_VERSION) into .peers/langchain" >&2
    python3 -m venv .peers/langchain
    .peers/langchain/bin/pip install --quiet --disable-pip-version-check \
      "langchain-mcp-adapters==$LANGCHAIN_MCP_VERSION" "mcp==$LANGCHAIN_PY_MCP_VERSION"
  fi
}

# Google's MCP gRPC transport: its generated Python stubs with grpcio (and
# grpcio-status, for a status's details), the peer (client and server) of
# our gRPC transport. (Its Python server
# package, mcp-grpc-transport 0.0.1, is an empty placeholder.)
GRPC_PROTO_VERSION=0.2.0
GRPCIO_VERSION=1.85.3
install_grpc_peer() {
  if ! .peers/grpc/bin/python -c "import importlib.metadata as m; assert m.version('mcp-grpc-transport-proto') == '$GRPC_PROTO_VERSION' and m.version('grpcio') == '$GRPCIO_VERSION' and m.version('grpcio-status') == '$GRPCIO_VERSION'" 2>/dev/null; then
    echo "installing mcp-grpc-transport-proto $GRPC_PROTO_VERSION and grpcio $GRPCIO_VERSION into .peers/grpc" >&2
    python3 -m venv .peers/grpc
    .peers/grpc/bin/pip install --quiet --disable-pip-version-check "mcp-grpc-transport-proto==$GRPC_PROTO_VERSION" \
      "grpcio==$GRPCIO_VERSION" "grpcio-status==$GRPCIO_VERSION"
  fi
}

# What scripts/package builds the Python package with: maturin, and zig
# (the ziglang package) as the linker that targets glibc 2.17.
MATURIN_VERSION=1.16.0
ZIGLANG_VERSION=0.15.2
install_packaging_tools() {
  if ! .peers/packaging/bin/python -c "import importlib.metadata as m; assert m.version('maturin') == '$MATURIN_VERSION' and m.version('ziglang') == '$ZIGLANG_VERSION'" 2>/dev/null; then
    echo "installing maturin $MATURIN_VERSION and ziglang $ZIGLANG_VERSION into .peers/packaging" >&2
    python3 -m venv .peers/packaging
    .peers/packaging/bin/pip install --quiet --disable-pip-version-check "maturin==$MATURIN_VERSION" "ziglang==$ZIGLANG_VERSION"
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
