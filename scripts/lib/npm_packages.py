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
import zipfile
from pathlib import Path

# npm's platform and arch -> the wheel's platform tag, the binary's name.
WHEELS = {
    "linux-x64": ("manylinux_2_17_x86_64", "mcp-bridge"),
    "linux-arm64": ("manylinux_2_17_aarch64", "mcp-bridge"),
    "darwin-x64": ("macosx_10_12_x86_64", "mcp-bridge"),
    "darwin-arm64": ("macosx_11_0_arm64", "mcp-bridge"),
    "win32-x64": ("win_amd64", "mcp-bridge.exe"),
}
ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ROOT / "packaging" / "npm" / "mcp-bridge"


def version() -> str:
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--no-deps", "--format-version", "1", "--locked"],
            check=True, capture_output=True, text=True, cwd=ROOT,
        ).stdout
    )
    return next(p["version"] for p in metadata["packages"] if p["name"] == "mcp-bridge-cli")


def binary_from_wheel(out: Path, platform: str, into: Path) -> None:
    tag, name = WHEELS[platform]
    wheels = [w for w in out.glob("mcp_bridge_cli-*.whl") if tag in w.name]
    if len(wheels) != 1:
        sys.exit(f"npm_packages: expected one wheel for {platform} ({tag}) in {out}, found {wheels}")
    with zipfile.ZipFile(wheels[0]) as wheel:
        member = next((m for m in wheel.namelist() if m.endswith(f".data/scripts/{name}")), None)
        if member is None:
            sys.exit(f"npm_packages: {wheels[0].name} holds no {name}")
        into.parent.mkdir(parents=True, exist_ok=True)
        into.write_bytes(wheel.read(member))
    into.chmod(0o755)


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
