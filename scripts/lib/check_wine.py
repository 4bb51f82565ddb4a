"""The Windows programs under Wine, as a client would start them: a
2025-11-25 session through mcp-bridge.exe in front of
mcp-example-server.exe; then the bridge in front of sleeper.exe (a program
that ignores the end of its input), killed, to see the server's process
tree end with it: the job object the bridge puts each child in ends its
processes when the bridge's last handle closes. Last, two clients through
`mcp-bridge.exe attach` share one daemon (its named pipe) and one server;
the daemon killed, each goes on with a new one without a second handshake
(its server's tree ended with the old one), and `daemon stop` ends them
and leaves no server behind.
Usage: check_wine.py FOLDER_WITH_THE_EXES FOLDER_WITH_SLEEPER_EXE"""

import json
import subprocess
import sys
import threading
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

    daemon_shared(exes, Path(sys.argv[2]))


def daemon_shared(exes: Path, out: Path) -> None:
    """Two clients attached to one daemon; the daemon killed and resumed; stopped."""
    folder = out / "daemon"
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"example": {"command": "mcp-example-server.exe"}}}))
    config_arg = ["--config", "Z:" + str(config).replace("/", "\\")]
    bridge = ["wine", str(exes / "mcp-bridge.exe")]
    servers_before = running("mcp-example-server.exe")

    def daemon(*words: str) -> subprocess.CompletedProcess:
        return subprocess.run([*bridge, "daemon", *words, *config_arg], capture_output=True, text=True, timeout=120)

    def call(session: Session, id_: int, text: str) -> None:
        session.send({"jsonrpc": "2.0", "id": id_, "method": "tools/call",
                      "params": {"name": "example__echo", "arguments": {"text": text}}})
        got = session.answer(id_)
        if got.get("result", {}).get("content", [{}])[0].get("text") != text:
            fail(f"attach: tools/call answered {got}; stderr:\n{''.join(session.stderr)}")

    sessions = [Session([*bridge, "attach", *config_arg, "example"]) for _ in range(2)]
    for i, session in enumerate(sessions):
        session.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": f"client-{i}", "version": "1"}}})
        session.answer(0)
        session.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        call(session, 1, f"client {i}")
    status = daemon("status", "--json")
    if status.returncode != 0:
        fail(f"daemon status: {status.returncode} {status.stderr}")
    status = json.loads(status.stdout)
    servers = status["servers"]
    if len(status["clients"]) != 2 or len(servers) != 1 or not servers[0]["running"] \
            or not servers[0]["resident_bytes"]:
        fail(f"two clients, one daemon, one server running: {status}")
    first_server = running("mcp-example-server.exe") - servers_before
    if len(first_server) != 1:
        fail(f"one server process for two clients, not {len(first_server)}")
    print(f"check-platforms: Windows under Wine: two clients attached to one daemon (its pipe) and one server")

    subprocess.run(["wine", "taskkill", "/F", "/PID", str(status["pid"])], capture_output=True, timeout=60)
    for i, session in enumerate(sessions):
        call(session, 2, f"client {i} again")
        if "connecting again" not in "".join(session.stderr):
            fail(f"attach did not say it connected again: {''.join(session.stderr)}")
    if first_server & running("mcp-example-server.exe"):
        fail("the killed daemon's server outlived it")
    print("check-platforms: Windows under Wine: the daemon killed, both clients went on with a new one "
          "(no second handshake), the old server ended with it")

    stopped = daemon("stop")
    if stopped.returncode != 0:
        fail(f"daemon stop: {stopped.returncode} {stopped.stderr}")
    for session in sessions:
        try:
            code = session.child.wait(TREE_DEADLINE_S)
        except subprocess.TimeoutExpired:
            fail("attach did not end when its daemon was stopped")
        if code != 0 or "was stopped" not in "".join(session.stderr):
            fail(f"attach after daemon stop: exit {code}, {''.join(session.stderr)}")
    print("check-platforms: Windows under Wine: daemon stop ended the clients' attach")

    # The attach that starts the daemon ends while the daemon lives on: its
    # client still sees its stdout and stderr end (the daemon holds none of
    # the client's handles).
    starter = Session([*bridge, "attach", *config_arg, "example"])
    starter.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "starter", "version": "1"}}})
    starter.answer(0)
    starter.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    call(starter, 1, "started it")
    if starter.finish() != 0:
        fail(f"attach after its input ended: {''.join(starter.stderr)}")
    ended = threading.Thread(target=starter.child.stdout.read, daemon=True)
    ended.start()
    ended.join(TREE_DEADLINE_S)
    if ended.is_alive():
        fail("the client's stdout stayed open after attach ended: the daemon holds it")
    if daemon("status").returncode != 0:
        fail("the daemon did not live on after the attach that started it")
    stopped = daemon("stop")
    if stopped.returncode != 0:
        fail(f"daemon stop: {stopped.returncode} {stopped.stderr}")
    deadline = time.monotonic() + TREE_DEADLINE_S
    while running("mcp-example-server.exe") - servers_before:
        if time.monotonic() > deadline:
            fail("a server outlived the stopped daemon")
        time.sleep(0.1)
    print("check-platforms: Windows under Wine: the attach that started the daemon ended and its client's "
          "stdout with it (the daemon holds none of its handles); daemon stop left no server")


main()
