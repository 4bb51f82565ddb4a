"""What the packaging scripts share: the version being packaged and the
binary of each platform, taken from that platform's wheel (the one build
every package is made from)."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# npm's platform and arch -> the wheel's platform tag, the binary's name.
WHEELS = {
    "linux-x64": ("manylinux_2_17_x86_64", "mcp-bridge"),
    "linux-arm64": ("manylinux_2_17_aarch64", "mcp-bridge"),
    "darwin-x64": ("macosx_10_12_x86_64", "mcp-bridge"),
    "darwin-arm64": ("macosx_11_0_arm64", "mcp-bridge"),
    "win32-x64": ("win_amd64", "mcp-bridge.exe"),
}

# npm's platform and arch -> Rust's target triple (the release archives'
# names, which cargo binstall's metadata in mcp-bridge-cli spells).
TARGETS = {
    "linux-x64": "x86_64-unknown-linux-gnu",
    "linux-arm64": "aarch64-unknown-linux-gnu",
    "darwin-x64": "x86_64-apple-darwin",
    "darwin-arm64": "aarch64-apple-darwin",
    "win32-x64": "x86_64-pc-windows-msvc",
}


def version() -> str:
    """The version of the mcp-bridge-cli crate: every package's version."""
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--no-deps", "--format-version", "1", "--locked"],
            check=True, capture_output=True, text=True, cwd=ROOT,
        ).stdout
    )
    return next(p["version"] for p in metadata["packages"] if p["name"] == "mcp-bridge-cli")


def binary_from_wheel(out: Path, platform: str, into: Path, name: str = "") -> None:
    """Writes the mcp-bridge binary (or the command NAME) of PLATFORM's
    wheel in OUT to INTO."""
    tag, bridge = WHEELS[platform]
    name = name or bridge
    wheels = [w for w in out.glob("mcp_bridge_cli-*.whl") if tag in w.name]
    if len(wheels) != 1:
        sys.exit(f"release_files: expected one wheel for {platform} ({tag}) in {out}, found {wheels}")
    with zipfile.ZipFile(wheels[0]) as wheel:
        member = next((m for m in wheel.namelist() if m.endswith(f".data/scripts/{name}")), None)
        if member is None:
            sys.exit(f"release_files: {wheels[0].name} holds no {name}")
        into.parent.mkdir(parents=True, exist_ok=True)
        into.write_bytes(wheel.read(member))
    into.chmod(0o755)
