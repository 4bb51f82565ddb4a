"""Makes the MCP Bundles (.mcpb, Claude Desktop's one-click install) of
mcp-bridge from the wheels in OUT.

usage: mcpb_bundles.py MCPB OUT PLATFORM...

For each PLATFORM (linux-x64, darwin-arm64, win32-x64, ...) a bundle
OUT/mcp-bridge-VERSION-PLATFORM.mcpb holds packaging/mcpb/manifest.json,
narrowed to that platform, and the binary of that platform's wheel as
server/mcp-bridge. MCPB is the `mcpb` command of @anthropic-ai/mcpb: its
`validate` checks the manifest and its `pack` makes the bundle.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from release_files import ROOT, WHEELS, binary_from_wheel, version

MANIFEST = ROOT / "packaging" / "mcpb" / "manifest.json"


def mcpb(tool: str, *args: str) -> None:
    done = subprocess.run([tool, *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"mcpb_bundles: mcpb {' '.join(args)} failed:\n{done.stdout}{done.stderr}")


def main() -> None:
    tool, out, platforms = sys.argv[1], Path(sys.argv[2]).resolve(), sys.argv[3:]
    ver = version()
    template = json.loads(MANIFEST.read_text())
    if template["version"] != ver:
        sys.exit(f"mcpb_bundles: {MANIFEST} says version {template['version']}, the crate {ver}")
    for platform in platforms:
        os_name = platform.split("-")[0]
        binary = WHEELS[platform][1]
        staging = out / "mcpb" / platform
        shutil.rmtree(staging, ignore_errors=True)
        binary_from_wheel(out, platform, staging / "server" / binary)
        manifest = json.loads(json.dumps(template))
        manifest["server"]["entry_point"] = f"server/{binary}"
        manifest["server"]["mcp_config"]["command"] = "${__dirname}/server/" + binary
        manifest["compatibility"]["platforms"] = [os_name]
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        mcpb(tool, "validate", str(staging / "manifest.json"))
        bundle = out / f"mcp-bridge-{ver}-{platform}.mcpb"
        bundle.unlink(missing_ok=True)
        mcpb(tool, "pack", str(staging), str(bundle))


if __name__ == "__main__":
    main()
