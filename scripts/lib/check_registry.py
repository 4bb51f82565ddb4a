"""Checks packaging/registry/server.json: valid against the MCP Registry's
server.json schema as published (the copy skillsaw bundles), and true to
the packages it names: their names, versions and the registry's ownership
marks (npm's `mcpName`, the PyPI description's `mcp-name:`), each package
a command the package installs, each named argument a flag of mcp-bridge.
Then a copy with a too-long description must be refused, so a schema that
checked nothing would fail here. Run by scripts/check-registry."""

import copy
import json
import re
import subprocess
import sys
import tomllib
from importlib import resources
from pathlib import Path

from jsonschema import Draft7Validator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from release_files import ROOT, version  # noqa: E402

SERVER_JSON = ROOT / "packaging" / "registry" / "server.json"
SCHEMA_VERSION = "2025_12_11"
CLI = ROOT / "crates" / "mcp-bridge-cli"


def fail(message: str) -> None:
    sys.exit(f"check-registry: {message}")


def schema() -> dict:
    folder = resources.files("skillsaw.schemas.mcp_registry") / f"v{SCHEMA_VERSION}"
    return json.loads((folder / "server.schema.json").read_text())


def schema_errors(validator: Draft7Validator, server: dict) -> list:
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
            for e in validator.iter_errors(server)]


def bridge_flags() -> set:
    """The flags `mcp-bridge --help` lists (the tests' build when there is one)."""
    bridge = ROOT / "target" / "debug" / "mcp-bridge"
    if not bridge.exists():
        subprocess.run(["cargo", "build", "--quiet", "--locked", "-p", "mcp-bridge-cli", "--bin", "mcp-bridge"],
                       check=True, cwd=ROOT)
    help_text = subprocess.run([str(bridge), "--help"], check=True, capture_output=True, text=True).stdout
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", help_text))


def main() -> None:
    server = json.loads(SERVER_JSON.read_text())
    published = schema()
    if server.get("$schema") != published.get("$id"):
        fail(f"$schema is {server.get('$schema')}, the newest published schema is {published.get('$id')}")
    validator = Draft7Validator(published, format_checker=Draft7Validator.FORMAT_CHECKER)
    errors = schema_errors(validator, server)
    if errors:
        fail("server.json does not follow the registry's schema:\n  " + "\n  ".join(errors))

    ver = version()
    if server["version"] != ver:
        fail(f"server.json says version {server['version']}, the crate {ver}")
    packages = {p["registryType"]: p for p in server["packages"]}
    if set(packages) != {"npm", "pypi"}:
        fail(f"server.json lists {sorted(packages)}, not npm and pypi")
    for kind, package in packages.items():
        if package["version"] != ver:
            fail(f"the {kind} package says version {package['version']}, the crate {ver}")

    launcher = json.loads((ROOT / "packaging" / "npm" / "mcp-bridge" / "package.json").read_text())
    npm = packages["npm"]
    if npm["identifier"] != launcher["name"] or npm["identifier"] not in launcher["bin"]:
        fail(f"npm {npm['identifier']} is not the launcher package {launcher['name']} and its command")
    if launcher.get("mcpName") != server["name"]:
        fail(f"the launcher's mcpName is {launcher.get('mcpName')}, not {server['name']}")

    pyproject = tomllib.loads((CLI / "pyproject.toml").read_text())["project"]
    pypi = packages["pypi"]
    if pypi["identifier"] != pyproject["name"]:
        fail(f"pypi {pypi['identifier']} is not the wheel's name {pyproject['name']}")
    if f"mcp-name: {server['name']}" not in (CLI / pyproject["readme"]).read_text():
        fail(f"the PyPI description ({pyproject['readme']}) does not say mcp-name: {server['name']}")
    # uvx runs the command named like the package.
    bins = tomllib.loads((CLI / "Cargo.toml").read_text())["bin"]
    if pypi["identifier"] not in {b["name"] for b in bins}:
        fail(f"the wheel installs no command named {pypi['identifier']}")

    flags = bridge_flags()
    for kind, package in packages.items():
        for argument in package.get("packageArguments", []):
            if argument["type"] == "named" and argument["name"] not in flags:
                fail(f"the {kind} package's argument {argument['name']} is not a flag of mcp-bridge")

    too_long = copy.deepcopy(server)
    too_long["description"] = "x" * 101
    if not schema_errors(validator, too_long):
        fail("the schema accepted a 101-character description: it checks nothing")
    print(f"check-registry: {SERVER_JSON.relative_to(ROOT)} follows the registry's schema "
          f"{published['$id']} and names npm {npm['identifier']} and pypi {pypi['identifier']} {ver}")


if __name__ == "__main__":
    main()
