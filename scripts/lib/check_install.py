"""Installs mcp-bridge-cli with `cargo install` from its .crate file, as
crates.io would serve it: each crate of this workspace it depends on comes
from its own .crate file too (a [patch] of crates.io, as they are not
published yet), everything else from crates.io at the versions of the
crate's packaged Cargo.lock (--locked). Then the installed commands must
say their version and `mcp-bridge doctor` must find mcp-example-server
usable through them. Run by scripts/check-install after
`cargo package --workspace`, whose verification built the same
dependencies with the same features into target/debug: they are reused."""

import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from release_files import ROOT, version

PACKAGES = ROOT / "target" / "package"
CLI = "mcp-bridge-cli"


def fail(message: str) -> None:
    sys.exit(f"check-install: {message}")


def run(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(list(args), capture_output=True, text=True, cwd=cwd)
    if done.returncode != 0:
        fail(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


def workspace_dependencies() -> list:
    """The workspace crates mcp-bridge-cli needs to build, itself excluded."""
    metadata = json.loads(run("cargo", "metadata", "--format-version", "1", "--locked"))
    members = {p["id"]: p for p in metadata["packages"] if p["id"] in metadata["workspace_members"]}
    nodes = {n["id"]: n for n in metadata["resolve"]["nodes"]}
    start = next(i for i, p in members.items() if p["name"] == CLI)
    seen, todo = set(), [start]
    while todo:
        for dep in nodes[todo.pop()]["deps"]:
            normal = any(k["kind"] in (None, "build") for k in dep["dep_kinds"])
            if normal and dep["pkg"] in members and dep["pkg"] not in seen:
                seen.add(dep["pkg"])
                todo.append(dep["pkg"])
    return sorted(members[i]["name"] for i in seen)


def main() -> None:
    ver = version()
    names = workspace_dependencies()
    with tempfile.TemporaryDirectory(prefix="mcp-bridge-install-") as tmp:
        unpacked = Path(tmp) / "crates"
        for name in [CLI, *names]:
            crate = PACKAGES / f"{name}-{ver}.crate"
            if not crate.exists():
                fail(f"no {crate.relative_to(ROOT)}: run cargo package --workspace first")
            with tarfile.open(crate) as tar:
                tar.extractall(unpacked, filter="data")
        patches = [arg for name in names
                   for arg in ("--config", f'patch.crates-io.{name}.path="{unpacked / f"{name}-{ver}"}"')]
        source = unpacked / f"{CLI}-{ver}"
        # The packaged lock names these crates on crates.io; point those
        # entries (and nothing else) at the packaged copies.
        run("cargo", "update", "--offline", *patches, *[a for n in names for a in ("-p", n)], cwd=source)
        root = Path(tmp) / "root"
        run("cargo", "install", "--quiet", "--locked", "--offline", "--debug", "--path", str(source),
            "--root", str(root), "--target-dir", str(ROOT / "target"), *patches)
        for command in ("mcp-bridge", "mcp-bridge-cli"):
            said = run(str(root / "bin" / command), "--version").strip()
            if said != f"mcp-bridge {ver}":
                fail(f"the installed {command} --version said {said!r}")
        server = ROOT / "target" / "debug" / "mcp-example-server"
        if not server.exists():
            run("cargo", "build", "--quiet", "--locked", "-p", "mcp-example-server")
        report = run(str(root / "bin" / "mcp-bridge"), "doctor", "--", str(server))
        if "usable: yes" not in report:
            fail(f"the installed mcp-bridge doctor found the example server unusable:\n{report}")
        print(f"check-install: cargo install {CLI} {ver} from {CLI}-{ver}.crate "
              f"(with {', '.join(names)} from theirs): mcp-bridge and mcp-bridge-cli installed and run")


if __name__ == "__main__":
    main()
