"""The Windows programs under Wine, as a client would start them: a
2025-11-25 session through mcp-bridge.exe in front of
mcp-example-server.exe; then the bridge in front of sleeper.exe (a program
that ignores the end of its input), killed, to see the server's process
tree end with it: the job object the bridge puts each child in ends its
processes when the bridge's last handle closes.
Usage: check_wine.py FOLDER_WITH_THE_EXES FOLDER_WITH_SLEEPER_EXE"""

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from legacy_session import Session, fail, legacy_session  # noqa: E402

TREE_DEADLINE_S = 20


def running(program: str) -> set:
    """The pids of the processes whose command starts with `program`
    (not of those that name it in an argument, as the bridge does)."""
    pattern = "^[^ ]*" + program.replace(".", "[.]")
    listed = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    return set(listed.split())


def main() -> None:
    exes = Path(sys.argv[1])
    # The server by its bare name: Windows looks in the bridge's own folder.
    bridge = ["wine", str(exes / "mcp-bridge.exe"), "--", "mcp-example-server.exe"]
    version = subprocess.run(["wine", str(exes / "mcp-bridge.exe"), "--version"], capture_output=True, text=True,
                             timeout=60)
    if version.returncode != 0 or not version.stdout.startswith("mcp-bridge "):
        fail(f"mcp-bridge.exe --version: {version.returncode} {version.stdout!r} {version.stderr!r}")
    first = legacy_session(bridge)
    print(f"check-platforms: Windows under Wine: {version.stdout.strip()}; a 2025-11-25 session served "
          f"(first answer after {first * 1000:.0f} ms, Wine's start included)")

    sleeper = Path(sys.argv[2]) / "sleeper.exe"
    before = running("sleeper.exe")
    session = Session(["wine", str(exes / "mcp-bridge.exe"), "--", f"Z:{sleeper}"])
    session.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "check-wine", "version": "1"}}})
    deadline = time.monotonic() + TREE_DEADLINE_S
    while not (started := running("sleeper.exe") - before):
        if time.monotonic() > deadline or session.child.poll() is not None:
            fail(f"sleeper.exe did not start behind the bridge; stderr:\n{''.join(session.stderr)}")
        time.sleep(0.1)
    session.child.kill()
    deadline = time.monotonic() + TREE_DEADLINE_S
    while started & running("sleeper.exe"):
        if time.monotonic() > deadline:
            subprocess.run(["kill", *started])
            fail(f"the server outlived the killed bridge by {TREE_DEADLINE_S} s")
        time.sleep(0.1)
    print("check-platforms: Windows under Wine: the bridge killed, its server's tree ended with it")


main()
