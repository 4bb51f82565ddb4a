"""Makes the npm packages of mcp-bridge from the wheels in OUT.

usage: npm_packages.py OUT PLATFORM...

For each PLATFORM (npm's `process.platform-process.arch`, such as
linux-x64) the binary is taken from that platform's wheel in OUT into the
package @mcp-bridge/PLATFORM; then the launcher package `mcp-bridge` lists
the platform packages built as its optionalDependencies. Each is packed
with `npm pack` into OUT.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from release_files import ROOT, WHEELS, binary_from_wheel, version

LAUNCHER = ROOT / "packaging" / "npm" / "mcp-bridge"


def pack(staging: Path, out: Path) -> None:
    subprocess.run(["npm", "pack", "--silent", "--pack-destination", str(out.resolve())],
                   check=True, cwd=staging, stdout=subprocess.DEVNULL)


def main() -> None:
    out, platforms = Path(sys.argv[1]), sys.argv[2:]
    ver = version()
    launcher = json.loads((LAUNCHER / "package.json").read_text())
    staging_root = out / "npm"
    shutil.rmtree(staging_root, ignore_errors=True)
    built = {}
    for platform in platforms:
        os_name, cpu = platform.split("-")
        name = f"@mcp-bridge/{platform}"
        staging = staging_root / platform
        binary_from_wheel(out, platform, staging / "bin" / WHEELS[platform][1])
        manifest = {
            "name": name,
            "version": ver,
            "description": f"The mcp-bridge binary for {platform}; installed by the mcp-bridge package.",
            "license": launcher["license"],
            "homepage": launcher["homepage"],
            "repository": launcher["repository"],
            "os": [os_name],
            "cpu": [cpu],
            "files": ["bin"],
            "preferUnplugged": True,
        }
        if os_name == "linux":
            manifest["libc"] = ["glibc"]
        (staging / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        pack(staging, out)
        built[platform] = name
    staging = staging_root / "mcp-bridge"
    shutil.copytree(LAUNCHER, staging)
    launcher["version"] = ver
    launcher["optionalDependencies"] = {name: ver for name in built.values()}
    launcher["files"] = ["bin/mcp-bridge.js", "bin/platforms.json"]
    (staging / "package.json").write_text(json.dumps(launcher, indent=2) + "\n")
    (staging / "bin" / "platforms.json").write_text(json.dumps({"platforms": built}, indent=2) + "\n")
    readme = ROOT / "packaging" / "npm" / "README.md"
    if readme.exists():
        shutil.copy(readme, staging / "README.md")
    pack(staging, out)


if __name__ == "__main__":
    main()
