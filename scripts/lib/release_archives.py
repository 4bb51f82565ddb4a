"""Makes the release archives of mcp-bridge from the wheels in OUT, and
OUT/SHA256SUMS of everything there is to publish.

usage: release_archives.py OUT PLATFORM...

For each PLATFORM the archive mcp-bridge-VERSION-TARGET.tar.gz (.zip for
Windows) holds the folder mcp-bridge-VERSION-TARGET with the commands
mcp-bridge and mcp-bridge-cli, LICENSE and README.md: the layout cargo
binstall's metadata in crates/mcp-bridge-cli/Cargo.toml describes.
"""

import hashlib
import io
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from release_files import ROOT, TARGETS, WHEELS, binary_from_wheel, version

PUBLISHED = ("mcp_bridge_cli-*.whl", "mcp-bridge-*.tgz", "mcp-bridge-*.mcpb", "mcp-bridge-*.tar.gz", "mcp-bridge-*.zip")


def archive(out: Path, platform: str, ver: str) -> Path:
    folder = f"mcp-bridge-{ver}-{TARGETS[platform]}"
    suffix = WHEELS[platform][1][len("mcp-bridge"):]  # ".exe" on Windows
    files = {f"{folder}/LICENSE": (ROOT / "LICENSE").read_bytes(), f"{folder}/README.md": (ROOT / "README.md").read_bytes()}
    with tempfile.TemporaryDirectory() as tmp:
        for command in ("mcp-bridge", "mcp-bridge-cli"):
            binary = Path(tmp) / command
            binary_from_wheel(out, platform, binary, command + suffix)
            files[f"{folder}/{command}{suffix}"] = binary.read_bytes()
    if platform.startswith("win32"):
        path = out / f"{folder}.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zipped:
            for name, data in files.items():
                zipped.writestr(name, data)
        return path
    path = out / f"{folder}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            entry = tarfile.TarInfo(name)
            entry.size = len(data)
            entry.mode = 0o755 if not name.endswith((".md", "LICENSE")) else 0o644
            tar.addfile(entry, io.BytesIO(data))
    return path


def main() -> None:
    out, platforms = Path(sys.argv[1]), sys.argv[2:]
    ver = version()
    for platform in platforms:
        archive(out, platform, ver)
    published = sorted({p for pattern in PUBLISHED for p in out.glob(pattern)})
    sums = "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n" for p in published)
    (out / "SHA256SUMS").write_text(sums)


if __name__ == "__main__":
    main()
